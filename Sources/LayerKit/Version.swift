/// LayerKit's release and the commit it was built from.
public enum LayerKitVersion {
    /// The package's version (semantic versioning).
    public static let number = "0.25.0"

    /// The git commit the binary was built from (embedded at build time),
    /// or "unknown" when it was built outside a git checkout.
    public static let commit = EmbeddedShaders.commit

    /// `0.5.0 (commit 96dc346…)`, the full hash: what `layerkit --version` prints.
    public static var description: String {
        "\(number) (commit \(commit))"
    }
}

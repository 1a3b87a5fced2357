import Foundation
import PackagePlugin

/// Turns every `Shaders/*.comp` and `*.glsl` file of the package into a Swift string
/// constant (`EmbeddedShaders.source(named:)`), and every `Models/*.onnx` into
/// bytes (`EmbeddedShaders.models`), compiled into the target. Shaders and the
/// demo's model then travel inside the binary: nothing is looked up next to it.
/// It also embeds the git commit the package is built from
/// (`EmbeddedShaders.commit`, "unknown" outside a git checkout).
@main
struct EmbedShaders: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let shaderDirectory = context.package.directoryURL.appending(path: "Shaders")
        let shaders = try FileManager.default
            .contentsOfDirectory(at: shaderDirectory, includingPropertiesForKeys: nil)
            .filter { ["comp", "glsl"].contains($0.pathExtension) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let modelDirectory = context.package.directoryURL.appending(path: "Models")
        let models = ((try? FileManager.default.contentsOfDirectory(at: modelDirectory, includingPropertiesForKeys: nil)) ?? [])
            .filter { $0.pathExtension == "onnx" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedShaders.swift")
        let git = GitCommit(package: context.package.directoryURL)
        return [.buildCommand(
            displayName: "Embedding \(shaders.count) shaders and \(models.count) models",
            executable: try context.tool(named: "shader-embedder").url,
            arguments: [output.path, "--commit", git.commit] + (shaders + models).map(\.path),
            inputFiles: shaders + models + git.files,
            outputFiles: [output]
        )]
    }
}

/// The commit a checkout is at, read from its files as git does: `.git` is
/// a folder, or (a worktree) a file `gitdir: PATH`; its `HEAD` is a commit or
/// `ref: refs/heads/NAME`, found as a file under the git folder or its
/// `commondir`, or as a line of `packed-refs`. `files` are what the build
/// watches, so a new commit re-embeds.
struct GitCommit {
    var commit = "unknown"
    var files: [URL] = []

    init(package: URL) {
        var gitDirectory = package.appending(path: ".git")
        if let link = Self.text(gitDirectory), link.hasPrefix("gitdir:") {
            let path = link.dropFirst("gitdir:".count).trimmingCharacters(in: .whitespaces)
            gitDirectory = URL(fileURLWithPath: path, relativeTo: package).standardizedFileURL
        }
        let head = gitDirectory.appending(path: "HEAD")
        guard let headText = Self.text(head) else { return }
        files.append(head)
        guard headText.hasPrefix("ref:") else {
            if Self.isHash(headText) { commit = headText }
            return
        }
        let ref = headText.dropFirst("ref:".count).trimmingCharacters(in: .whitespaces)
        var common = gitDirectory
        if let relative = Self.text(gitDirectory.appending(path: "commondir")) {
            common = URL(fileURLWithPath: relative, relativeTo: gitDirectory.appending(path: "")).standardizedFileURL
        }
        for directory in [gitDirectory, common] {
            let file = directory.appending(path: ref)
            if let hash = Self.text(file), Self.isHash(hash) {
                files.append(file)
                commit = hash
                return
            }
        }
        let packed = common.appending(path: "packed-refs")
        guard let lines = Self.text(packed) else { return }
        files.append(packed)
        for line in lines.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[1] == ref, Self.isHash(String(parts[0])) { commit = String(parts[0]) }
        }
    }

    private static func text(_ url: URL) -> String? {
        (try? String(contentsOf: url, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func isHash(_ text: String) -> Bool {
        text.count >= 40 && text.allSatisfy(\.isHexDigit)
    }
}

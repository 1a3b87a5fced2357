extension Duration {
    /// The duration in seconds, as a Double (training's time reports).
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

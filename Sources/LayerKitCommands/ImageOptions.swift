import LayerKit

/// The picture options of every command that reads a model's inputs (run,
/// parity, bench, profile): declared once, parsed once, applied by
/// `ModelFiles.input` to each PNG or JPEG input.
struct ImageOptions {
    /// The steps from file to tensor; its `layout` is replaced per input.
    let steps: ImageInputOptions
    /// `--layout`, or nil to take it from each input's shape (`layout(for:)`).
    let layout: ImageInputOptions.Layout?

    /// The options as `layerkit CMD --help` lists them.
    static let help: [CommandHelp.Option] = [
        CommandHelp.Option("--resize", "N|WxH", default: "none",
                           "resize PNG and JPEG inputs: N, the shorter side to N keeping the aspect ratio "
                           + "(torchvision's Resize(N)); WxH, stretched to W by H"),
        CommandHelp.Option("--center-crop", "N|WxH", default: "none", "then keep the middle W by H pixels (N: NxN)"),
        CommandHelp.Option("--interpolation", "bilinear|nearest|bicubic", default: "bilinear",
                           "how --resize resamples, as Pillow's Image.resize (antialiased when shrinking)"),
        CommandHelp.Option("--scale", "S", default: "1", "what a full-intensity pixel becomes: 1 (0..1 inputs) or 255 (0..255)"),
        CommandHelp.Option("--channel-order", "rgb|bgr", default: "rgb", "the colour order the model takes"),
        CommandHelp.Option("--normalize", "0,1|-1,1|imagenet|mean=..,std=..", default: "0,1",
                           "then (x - mean) / std per channel, in the model's channel order and --scale's units; "
                           + "-1,1 and imagenet (mean 0.485,0.456,0.406, std 0.229,0.224,0.225 by colour) scale with --scale"),
        CommandHelp.Option("--layout", "nchw|nhwc", default: "from the input's shape",
                           "whether the model takes pictures channels first (1x3xHxW) or last (1xHxWx3)"),
    ]

    /// The names of `help`'s options.
    static let names = help.map(\.name)

    /// Parses the options given in `arguments` (each error names its option).
    init(_ arguments: Arguments) throws {
        // `named`: the parser's own message names the option already.
        func parse<T>(_ option: String, named: Bool = false, _ body: (String) throws -> T) throws -> T? {
            guard let text = arguments.value(option) else { return nil }
            return try ValueParsing.onCommandLine(option: named ? nil : option) { try body(text) }
        }
        func word<T: RawRepresentable & CaseIterable>(_ option: String, _: T.Type) throws -> T? where T.RawValue == String {
            try parse(option) { text in
                guard let value = T(rawValue: text.lowercased()) else {
                    throw LayerKitError.invalidParameter("'\(text)': expected "
                                                         + T.allCases.map(\.rawValue).joined(separator: ", "))
                }
                return value
            }
        }
        steps = ImageInputOptions(
            resize: try parse("--resize", named: true) { try ImageInputOptions.Resize(parsing: $0, option: "--resize") },
            centerCrop: try parse("--center-crop", named: true) {
                try ImageInputOptions.Size(parsing: $0, option: "--center-crop")
            },
            interpolation: try word("--interpolation", ImageInterpolation.self) ?? .bilinear,
            normalization: try parse("--normalize") { try PixelNormalization(parsing: $0) } ?? .unit,
            channelOrder: try word("--channel-order", ImageInputOptions.ChannelOrder.self) ?? .rgb,
            scale: try parse("--scale") { try ImageInputOptions.scale(parsing: $0) } ?? 1)
        layout = try word("--layout", ImageInputOptions.Layout.self)
    }

    /// The layout of a picture for `input`: `--layout`, else NHWC when its
    /// shape is 4-D with 1, 3 or 4 channels last and a second dimension that
    /// is not a plausible channel count (not 1, 3 or 4; a symbolic one
    /// counts as not), else NCHW.
    func layout(for input: Model.ValueDescription) -> ImageInputOptions.Layout {
        if let layout { return layout }
        let sizes = input.dimensions.map(\.size)
        guard sizes.count == 4, let last = sizes[3], [1, 3, 4].contains(last) else { return .nchw }
        return sizes[1].map { [1, 3, 4].contains($0) } ?? false ? .nchw : .nhwc
    }
}

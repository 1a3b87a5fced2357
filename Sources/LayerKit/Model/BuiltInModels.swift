import Foundation

/// Models built into the binary from the package's `Models/` folder, so
/// the demo needs no files.
public enum BuiltInModels {
    /// The Core ML custom-layer article's model: Conv(6, 3x3, same) → Swish
    /// (a `layerkit` custom node, beta 1) → GlobalAveragePool → Flatten →
    /// Dense(10) → Softmax, on a 1x3x64x64 image. Made with seeded weights
    /// by `Scripts/generate_model_fixtures.py`.
    public static let articleName = "article.onnx"

    /// The style-transfer network of `layerkit demo --style`: Johnson et
    /// al.'s fast style transfer, narrow (reflection Pad, Conv,
    /// InstanceNormalization, Relu, two residual blocks with Add, nearest
    /// Resize upsampling, a final Conv to 3 channels and Sigmoid), seeded
    /// weights, a 1x3x96x96 image in and out. Made by
    /// `Scripts/generate_style_model.py`.
    public static let styleName = "style.onnx"

    /// The ONNX bytes of the built-in model `name`, nil if there is none.
    public static func data(named name: String) -> Data? {
        EmbeddedShaders.models[name].flatMap { Data(base64Encoded: $0) }
    }
}

import Foundation
import LayerKit
import LayerKitONNX

extension Target {
    /// `TFLiteModel(data:)` and its translation to ONNX ops:
    /// `LayerKitError.invalidModel` only; what it accepts is loaded and run
    /// on the CPU as `layerkit run` would (`loadOnTheCPU`).
    static let tflite = Target(
        name: "tflite",
        // The file identifier, offsets that lead far, vtable sizes, and builtin codes and names it reads.
        dictionary: ["TFL3", "\u{FF}\u{FF}\u{FF}\u{7F}", "\u{0}\u{0}\u{0}\u{0}", "\u{4}\u{0}", "\u{8}\u{0}",
                     "\u{3}", "\u{4}", "\u{16}", "\u{20}", "Convolution2DTransposeBias"],
        hotOffsets: [0, 1, 2, 3],
        bytes: true
    ) { bytes in
        do {
            let model = try TFLiteModel(data: Data(bytes), source: "fuzz.tflite").onnxModel()
            return loadOnTheCPU(bytes, model)
        } catch LayerKitError.invalidModel {
            return .rejected
        } catch {
            return .unexpected("error other than invalidModel: \(error)")
        }
    }
}

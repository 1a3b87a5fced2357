import Foundation
import LayerKit
import LayerKitONNX

extension Target {
    /// `MLProgramModel(data:source:)` and its translation to ONNX:
    /// `LayerKitError.invalidModel` only; a program it translates loads on the
    /// CPU or is refused with a `LayerKitError` (a weights file, which bytes
    /// alone have no folder to find, is refused).
    static let mlProgram = Target(
        name: "mlprogram",
        // Tags of the fields the decoder reads (mlProgram is field 502), MIL names and a weights file's name.
        dictionary: ["\u{B2}\u{1F}", "\u{A}", "\u{12}", "\u{1A}", "\u{22}", "\u{2A}", "\u{8}", "\u{10}", "\u{7F}",
                     "main", "CoreML5", "const", "val", "conv", "pad_type", "custom", "x", "@model_path/weights/weight.bin"],
        hotOffsets: [0]
    ) { bytes in
        do {
            return loadOnTheCPU(bytes, try MLProgramModel(data: Data(bytes), source: "fuzz").onnxModel())
        } catch LayerKitError.invalidModel {
            return .rejected
        } catch {
            return .unexpected("error other than invalidModel: \(error)")
        }
    }
}

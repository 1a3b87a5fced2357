import Foundation
import LayerKit
import LayerKitCommands
import LayerKitONNX

/// What one input did to a parser.
enum Outcome {
    /// Parsed, and the result passed the target's checks.
    case accepted
    /// Refused with an error of the type the API promises.
    case rejected
    /// A finding: an error of another type, or a result that breaks an invariant.
    case unexpected(String)
}

/// A parser under test: its name (the corpus folder), the words and header
/// offsets its mutations favour, and how to run one input.
struct Target: Sendable {
    let name: String
    /// Words the mutator inserts, as UTF-8 bytes (`bytes`: as bytes, one
    /// per scalar below 256, for binary markers such as JPEG's 0xFF xx).
    let dictionary: [String]
    let hotOffsets: [Int]
    var bytes = false
    /// Applied to most mutated inputs before they run (fix PNG chunk CRCs, the .npy header length).
    var fixup: (@Sendable (inout [UInt8]) -> Void)? = nil
    let run: @Sendable ([UInt8]) -> Outcome

    static let all = [npy, png, jpeg, formula, cli, onnx, onnxGrammar, checkpoint, coreml, mlProgram, tflite]

    /// `Tensor(npyData:)`: `LayerKitError` only; what it accepts re-encodes to the same shape.
    static let npy = Target(
        name: "npy",
        dictionary: ["'shape'", "'descr'", "'fortran_order'", "(", ")", ",", "[", "]", "{", "}", ":", "True", "False",
                     "None", "'<f4'", "'<f2'", "'<f8'", "'>f4'", "1099511627776", "9223372036854775807",
                     "-1", "0", "L", "\\", "\"", "'"],
        hotOffsets: [6, 7, 8, 9, 10, 11],
        fixup: fixNPYHeaderLength
    ) { bytes in
        expecting(LayerKitError.self) {
            let tensor = try Tensor(npyData: Data(bytes))
            guard tensor.count <= 1 << 16 else { return .accepted }
            let again = try Tensor(npyData: tensor.npyData())
            return again.shape == tensor.shape ? .accepted : .unexpected("re-encoded shape \(again.shape) != \(tensor.shape)")
        }
    }

    /// `Tensor(pngFile:)` through libpng; the bytes go to a scratch file.
    /// `LayerKitError` only; what it accepts is 1xCxHxW with C of 1, 3 or 4.
    static let png = Target(
        name: "png",
        dictionary: ["IHDR", "IDAT", "IEND", "PLTE", "tRNS", "gAMA", "iCCP", "sBIT", "\u{0}\u{0}\u{0}\u{0}"],
        hotOffsets: [8, 11, 16, 19, 20, 23, 24, 25, 26, 27, 28, 33],
        fixup: fixPNGChecksums
    ) { bytes in
        let path = scratchPNGPath
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            return .unexpected("cannot write the scratch file \(path)")
        }
        defer { unlink(path) }
        return expecting(LayerKitError.self) {
            let tensor = try Tensor(pngFile: path)
            let shape = tensor.shape
            guard shape.count == 4, shape[0] == 1, [1, 3, 4].contains(shape[1]) else {
                return .unexpected("decoded shape \(shape)")
            }
            return .accepted
        }
    }

    /// `Tensor(jpegFile:)` through libjpeg-turbo; the bytes go to a scratch
    /// file. `LayerKitError` only; what it accepts is 1xCxHxW with C of 1 or 3.
    static let jpeg = Target(
        name: "jpeg",
        dictionary: ["\u{FF}\u{D8}", "\u{FF}\u{D9}", "\u{FF}\u{C0}", "\u{FF}\u{C2}", "\u{FF}\u{C4}", "\u{FF}\u{DA}",
                     "\u{FF}\u{DB}", "\u{FF}\u{DD}", "\u{FF}\u{E0}", "\u{FF}\u{EE}", "\u{0}\u{0}", "\u{FF}\u{FF}"],
        hotOffsets: [2, 3, 4, 5, 6],
        bytes: true
    ) { bytes in
        let path = scratchPNGPath + ".jpg"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            return .unexpected("cannot write the scratch file \(path)")
        }
        defer { unlink(path) }
        return expecting(LayerKitError.self) {
            let tensor = try Tensor(jpegFile: path)
            let shape = tensor.shape
            guard shape.count == 4, shape[0] == 1, [1, 3].contains(shape[1]) else {
                return .unexpected("decoded shape \(shape)")
            }
            return .accepted
        }
    }

    /// `FormulaParser.parse`, then `FormulaLayer` with every value given as
    /// 0.5, run on the CPU over special values. `FormulaParser.Error` or
    /// `LayerKitError` only; a parsed formula's text must parse back to it.
    static let formula = Target(
        name: "formula",
        dictionary: ["+", "-", "*", "/", "^", "(", ")", ",", ">", ">=", "<", "<=", "==", "!=", "x", "beta",
                     "1e308", "1e-45", "3.4028235e38", "nan", "inf", "-0", "0", ".", "1e", "e5"]
            + (UnaryFunction.allCases.map(\.rawValue) + ["pow", "min", "max", "clamp", "where"]).map { $0 + "(" },
        hotOffsets: []
    ) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        return expecting(FormulaParser.Error.self, LayerKitError.self) {
            let (expr, _) = try FormulaParser.parse(text)
            let reparsed = try FormulaParser.parse(expr.description).expr
            guard reparsed == expr else { return .unexpected("'\(expr)' parses back as '\(reparsed)'") }
            let parameters = Dictionary(uniqueKeysWithValues: expr.valueNames.map { ($0, Float(0.5)) })
            let layer = try FormulaLayer(formula: text, parameters: parameters)
            _ = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [specialValues])
            return .accepted
        }
    }

    /// `ONNXModel(data:)`, then every initializer's values read as a model
    /// loader would. `LayerKitError.invalidModel` only; what it accepts has
    /// a supported IR version and opset, and ops named on every node, and is
    /// then loaded and run on the CPU (`loadOnTheCPU`).
    static let onnx = Target(
        name: "onnx",
        // Tags of the fields the decoder reads (graph, node, initializer, raw_data, dims, ...), names, varint ends.
        dictionary: ["\u{8}", "\u{3A}", "\u{42}", "\u{A}", "\u{12}", "\u{1A}", "\u{22}", "\u{2A}", "\u{4A}", "\u{10}",
                     "\u{25}", "\u{2D}", "\u{38}", "\u{52}", "\u{5A}", "\u{62}", "\u{6A}", "\u{70}\u{1}", "\u{A0}\u{1}",
                     "\u{7F}", "\u{1}", "Conv", "Swish", "layerkit", "ai.onnx", "beta"],
        hotOffsets: [1]
    ) { bytes in
        do {
            let model = try ONNXModel(data: Data(bytes))
            for tensor in model.graph.initializers.values {
                if [.int64, .int32].contains(tensor.dataType) { _ = try tensor.int64s() } else { _ = try tensor.floats() }
            }
            // A default-domain opset in range, or none for a model of other domains alone (as onnxruntime).
            let opsetFits = model.defaultOpset.map { $0 <= ONNXModel.maxOpset } ?? !model.graph.nodes.contains(where: \.isStandard)
            guard ONNXModel.supportedIRVersions.contains(model.irVersion), opsetFits,
                  model.graph.nodes.allSatisfy({ !$0.opType.isEmpty }) else {
                return .unexpected("accepted IR \(model.irVersion), opset \(model.defaultOpset ?? -1)")
            }
            return loadOnTheCPU(bytes, model)
        } catch LayerKitError.invalidModel {
            return .rejected
        } catch {
            return .unexpected("error other than invalidModel: \(error)")
        }
    }

    /// A Core ML `.mlmodel` through `CoreMLModel(data:)`, its translation to
    /// ONNX ops, and `Model(data:)` on the CPU: `invalidModel` only (a
    /// model the translation refuses is one), never a crash or a hang.
    static let coreml = Target(
        name: "coreml",
        // Tags of the Model message and its description (1, 2, 3), neuralNetwork (500, 403 classifier),
        // layers, weights and shapes; layer names the translation reads.
        dictionary: ["\u{8}", "\u{12}", "\u{1A}", "\u{A2}\u{1F}", "\u{9A}\u{19}", "\u{A}", "\u{22}", "\u{2A}",
                     "\u{32}", "\u{3A}", "\u{42}", "\u{10}", "\u{18}", "\u{7F}", "\u{1}", "Swish", "convolution"],
        hotOffsets: [1]
    ) { bytes in
        do {
            let model = try CoreMLModel(data: Data(bytes), source: "fuzz.mlmodel")
            return loadOnTheCPU(bytes, try model.onnxModel())
        } catch LayerKitError.invalidModel {
            return .rejected
        } catch {
            return .unexpected("error other than invalidModel: \(error)")
        }
    }

    /// `TrainingCheckpoint(data:source:)`: `LayerKitError` only; what it
    /// accepts writes back to bytes that read as the same checkpoint.
    static let checkpoint = Target(
        name: "checkpoint",
        dictionary: ["\"tensors\"", "\"shape\"", "\"name\"", "\"seed\"", "\"step\"", "[", "]", "{", "}", ",", ":",
                     "-1", "0", "18446744073709551615", "18446744073709551616", "9223372036854775807", "1e308", "null"],
        hotOffsets: [8, 12, 13, 14, 15],
        fixup: fixCheckpointChecksum
    ) { bytes in
        expecting(LayerKitError.self) {
            let checkpoint = try TrainingCheckpoint(data: Data(bytes), source: "fuzz.ckpt")
            let written = try checkpoint.data()
            let again = try TrainingCheckpoint(data: written, source: "rewritten.ckpt")
            return try again.data() == written ? .accepted : .unexpected("a rewritten checkpoint reads differently")
        }
    }

    /// A decoded model with small fixed inputs, loaded as `layerkit run`
    /// loads it (nodes to layers, planned, run once on zeros) on the CPU:
    /// any `LayerKitError` is a refusal.
    static func loadOnTheCPU(_ bytes: [UInt8], _ model: ONNXModel) -> Outcome {
        for input in model.graph.feedInputs {
            var count = 1
            for dimension in input.dims ?? [] {
                guard case .value(let extent) = dimension, extent >= 0, extent <= 1 << 16 else { return .accepted }
                count *= extent
                if count > 1 << 16 { return .accepted }
            }
        }
        do {
            _ = try Model(data: Data(bytes), computeUnits: .cpuOnly)
            return .accepted
        } catch is LayerKitError {
            return .rejected
        } catch {
            return .unexpected("Model(data:) threw \(error)")
        }
    }

    /// The CLI value parsers (`--shape`, `--range`, `--param`, `--weights`,
    /// `--seed`, `--backend`) on the same text: `UsageError` (or
    /// `LayerKitError` from the shape's size check) only.
    static let cli = Target(
        name: "cli",
        dictionary: ["x", ",", "=", "-", "+", " ", "0", "1", "9223372036854775807", "18446744073709551616",
                     "1e39", "nan", "inf", "-0", "0x10", "cpu", "gpu", "auto"],
        hotOffsets: []
    ) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        // Each parser on its own, so one's refusal cannot hide another's finding.
        var accepted = false
        for parse in cliParsers {
            do {
                if let problem = try parse(text) { return .unexpected(problem) }
                accepted = true
            } catch is UsageError, is LayerKitError {
            } catch {
                return .unexpected("error of type \(type(of: error)): \(error)")
            }
        }
        return accepted ? .accepted : .rejected
    }
}

/// The CLI value parsers, each returning what is wrong with what it accepted.
private let cliParsers: [@Sendable (String) throws -> String?] = [
    { let shape = try ValueParsing.shape($0)
      return (1...4).contains(shape.count) && shape.allSatisfy { $0 > 0 } ? nil : "--shape accepted \(shape)" },
    { let range = try ValueParsing.range($0)
      return range.lowerBound.isFinite && range.upperBound.isFinite ? nil : "--range accepted \(range)" },
    { let (name, value) = try ValueParsing.parameter($0)
      return name.isEmpty || value.isEmpty ? "--param accepted '\(name)'='\(value)'" : nil },
    { let (name, file) = try ValueParsing.weights($0)
      return name.isEmpty || file.isEmpty ? "--weights accepted '\(name)'='\(file)'" : nil },
    { _ = try ValueParsing.seed($0); return nil },
    { _ = try ValueParsing.backend($0); return nil },
]

/// Runs `body`; errors of the `allowed` types are `.rejected`, others a finding.
private func expecting(_ allowed: any Error.Type..., body: () throws -> Outcome) -> Outcome {
    do {
        return try body()
    } catch {
        if allowed.contains(where: { type(of: error) == $0 }) { return .rejected }
        return .unexpected("error of type \(type(of: error)): \(error)")
    }
}

/// One tensor holding the values formulas most often mishandle.
private let specialValues = try! Tensor(shape: [1, 2, 2, 3], values: [
    0, -0, 1, -1, .nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
    -.greatestFiniteMagnitude, 88.8, -104,
])

/// The file PNG inputs are written to: in memory (/dev/shm) where there is one,
/// since a busy disk otherwise sets the pace.
private let scratchPNGPath = (FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm"
    : FileManager.default.temporaryDirectory.path) + "/layerkit-fuzz-\(getpid()).png"

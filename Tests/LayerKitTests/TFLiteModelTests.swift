import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// TensorFlow Lite models (`Scripts/generate_tflite_fixtures.py`: small
/// converted graphs and mediapipe 0.10.21's face detector and selfie
/// segmenter) loaded by `Model`, run on the CPU and the GPU against LiteRT's
/// outputs for the same inputs; and hostile files, each refused by name.
@Suite struct TFLiteModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tflite")

    static func fixture(_ name: String) -> URL { fixtures.appendingPathComponent(name) }

    /// The models with a committed input and their output counts.
    static let cases: [(name: String, outputs: Int)] = [
        ("conv_net", 2), ("conv_net_fp16", 2), ("activations", 1), ("resize_slice", 5), ("sparse_fc", 1), ("layout_ops", 5), ("math_ops", 1), ("slice_masks", 5),
        ("face_detection_short_range", 2),
    ]

    /// The selfie segmenter's input, made by the script's formula (`selfie_input`).
    static func selfieInput() throws -> Tensor {
        var values: [Float] = []
        values.reserveCapacity(256 * 256 * 3)
        for h in 0..<256 {
            for w in 0..<256 {
                for c in 0..<3 {
                    values.append(Float(255 * (0.5 + 0.5 * sin(0.02 * Double(h * (c + 1))) * cos(0.015 * Double(w)))))
                }
            }
        }
        return try Tensor(shape: [1, 256, 256, 3], values: values)
    }

    /// Each output against LiteRT's within `tolerance` · max(1, |ref|); every
    /// `step`-th row and column of a rank-4 output when the reference keeps only those.
    /// Returns the largest error seen, relative to max(1, |ref|).
    @discardableResult
    static func expectReferences(_ model: Model, _ name: String, outputs: Int, input: Tensor? = nil, step: Int = 1,
                                 tolerance: Double) throws -> Double {
        let input = try input ?? Tensor(npyFile: fixture("\(name)-input.npy").path)
        #expect(model.inputs[0].shapeWithSymbolsAsOne == input.shape, "\(name): NHWC input")
        let results = try model.predict(inputs: [model.inputs[0].name: input])
        var worst = 0.0
        for index in 0..<outputs {
            let reference = try TypedTensor(npyFile: fixture("\(name)-output\(index).npy").path)
            let result = try #require(results[model.outputs[index].name], "\(name): no output \(index)")
            var values = result.elements.map(Double.init)
            if step > 1 {
                let (h, w, c) = (result.shape[1], result.shape[2], result.shape[3])
                values = stride(from: 0, to: h, by: step).flatMap { y in
                    stride(from: 0, to: w, by: step).flatMap { x in (0..<c).map { values[(y * w + x) * c + $0] } }
                }
            } else {
                #expect(result.shape == reference.shape, "\(name) output \(index)")
            }
            let expected = reference.doubles()
            #expect(values.count == expected.count, "\(name) output \(index)")
            for (y, e) in zip(values, expected) { worst = max(worst, abs(y - e) / max(1, abs(e))) }
        }
        #expect(worst <= tolerance, "\(name): largest error \(worst) · max(1, |ref|), over \(tolerance)")
        return worst
    }

    @Test(arguments: cases.map(\.name))
    func runsAsLiteRTComputesOnTheCPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).tflite"), computeUnits: .cpuOnly, notice: { _ in })
        try Self.expectReferences(model, name, outputs: Self.cases.first { $0.name == name }?.outputs ?? 0,
                                  tolerance: 1e-4)
    }

    /// mediapipe's selfie segmenter: its custom Convolution2DTransposeBias is built in. Its
    /// pixels are 0 to 255 and its output a sigmoid of large logits: the largest error
    /// measured is 1.01e-4, at the steepest point of a mask's edge, so the bound is 2e-4.
    @Test func theSelfieSegmenterRunsAsLiteRTComputesOnTheCPU() throws {
        let model = try Model(contentsOf: Self.fixture("selfie_segmentation.tflite"), computeUnits: .cpuOnly,
                              notice: { _ in })
        try Self.expectReferences(model, "selfie_segmentation", outputs: 1, input: Self.selfieInput(), step: 4,
                                  tolerance: 2e-4)
    }

    /// The GPU stores every layer's output in fp16: the small graphs within 2e-3 · max(1, |ref|)
    /// of LiteRT's float32 result (1.3e-3 measured). mediapipe's deep models drift further,
    /// as the same models exported by tf2onnx do through LayerKit's ONNX path (the GPU
    /// keeps no fp32 between layers): measured 0.047 (face detector's box regressors) and
    /// 0.032 (selfie mask), so their bounds are the measured ones rounded up.
    static let gpuTolerances = ["face_detection_short_range": 0.06, "selfie_segmentation": 0.05]

    @Test(.enabled(if: TestGPU.isEnabled), arguments: cases.map(\.name) + ["selfie_segmentation"])
    func runsAsLiteRTComputesOnTheGPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).tflite"), computeUnits: .gpu, notice: { _ in })
        #expect(model.nodes.contains { $0.placement?.isGPU == true }, "\(name): nothing ran on the GPU")
        let selfie = name == "selfie_segmentation"
        try Self.expectReferences(model, name, outputs: Self.cases.first { $0.name == name }?.outputs ?? 1,
                                  input: selfie ? Self.selfieInput() : nil, step: selfie ? 4 : 1,
                                  tolerance: Self.gpuTolerances[name] ?? 2e-3)
    }

    /// The translated graph: NHWC inputs and outputs as TFLite declares them,
    /// NCHW convolutions inside, fp16 weights dequantized at load.
    @Test func theTranslationKeepsTFLiteShapesAtTheEdges() throws {
        let data = try Data(contentsOf: Self.fixture("conv_net_fp16.tflite"))
        let tflite = try TFLiteModel(data: data, source: "conv_net_fp16.tflite")
        let onnx = try tflite.onnxModel()
        #expect(onnx.producerName == "TensorFlow Lite schema version 3, translated to ONNX ops")
        #expect(onnx.graph.inputs.first?.dims == [.value(1), .value(15), .value(15), .value(3)])
        #expect(onnx.graph.outputs.map(\.dims) == [[.value(1), .value(10)],
                                                   [.value(1), .value(7), .value(7), .value(8)]])
        #expect(onnx.graph.nodes.filter { $0.opType == "Conv" }.count == 3)
        #expect(onnx.graph.nodes.allSatisfy { $0.opType != "DEQUANTIZE" })
        #expect(tflite.subgraph.tensors.contains { $0.type == 1 }, "the file holds float16 weights")
    }

    /// The fully quantized models: int8_net with float32 edges
    /// (QUANTIZE, DEQUANTIZE), int8_io and uint8_io with int8 and uint8 ones
    /// (integers in and out, as float32).
    static let quantizedCases = ["int8_net", "int8_io", "uint8_io"]

    /// The outputs' largest difference from LiteRT's, in quanta (each output's
    /// scale, from `<name>-quanta.npy`; 1 for an int8 output, which holds
    /// integers), and the share of elements equal to LiteRT's.
    static func quantaOff(_ model: Model, _ name: String) throws -> (worst: [Double], exact: Double) {
        let input = try Tensor(npyFile: fixture("\(name)-input.npy").path)
        let results = try model.predict(inputs: [model.inputs[0].name: input])
        let quanta = try TypedTensor(npyFile: fixture("\(name)-quanta.npy").path).doubles()
        var worst: [Double] = [], exact = 0, count = 0
        for (index, quantum) in quanta.enumerated() {
            worst.append(0)
            let reference = try TypedTensor(npyFile: fixture("\(name)-output\(index).npy").path)
            let result = try #require(results[model.outputs[index].name], "\(name): no output \(index)")
            #expect(result.shape == reference.shape, "\(name) output \(index)")
            let step = name.hasSuffix("_io") ? 1 : quantum
            for (y, e) in zip(result.elements.map(Double.init), reference.doubles()) {
                let off = (abs(y - e) / step).rounded()
                worst[index] = max(worst[index], off)
                exact += off == 0 ? 1 : 0
                count += 1
            }
        }
        return (worst, Double(exact) / Double(max(count, 1)))
    }

    /// Fully quantized models emulated in float32, each integer op's result
    /// requantized to its grid (ties away from zero, as TFLite): within one
    /// output quantum of LiteRT (measured: 0 quanta off on int8_net and on
    /// int8_io's convolution output, every element equal), except int8_io's
    /// fully-connected output, within 2 (2 measured): LiteRT's own kernels
    /// disagree there, its XNNPACK delegate (the reference) giving
    /// [-27, -43, 1, 46, 9] and its builtin kernels [-27, -42, 1, 46, 10].
    @Test(arguments: quantizedCases)
    func aQuantizedModelRunsWithinOneQuantumOfLiteRTOnTheCPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).tflite"), computeUnits: .cpuOnly, notice: { _ in })
        let (off, exact) = try Self.quantaOff(model, name)
        let bounds: [Double] = name == "int8_io" ? [2, 1] : [1, 1]
        #expect(zip(off, bounds).allSatisfy { $0 <= $1 }, "\(name): \(off) quanta off LiteRT's")
        #expect(exact >= 0.98, "\(name): \(exact) of the elements equal LiteRT's")
    }

    /// On the GPU, whose fp16 storage may move a value across a rounding
    /// boundary of a later requantization: within 2 quanta (1 measured on both,
    /// 85% and 95% of the elements equal LiteRT's).
    @Test(.enabled(if: TestGPU.isEnabled), arguments: quantizedCases)
    func aQuantizedModelRunsWithinTwoQuantaOfLiteRTOnTheGPU(_ name: String) throws {
        let model = try Model(contentsOf: Self.fixture("\(name).tflite"), computeUnits: .gpu, notice: { _ in })
        #expect(model.nodes.contains { $0.placement?.isGPU == true }, "\(name): nothing ran on the GPU")
        let (off, exact) = try Self.quantaOff(model, name)
        #expect(off.allSatisfy { $0 <= 2 }, "\(name): \(off) quanta off LiteRT's")
        #expect(exact >= 0.8, "\(name): \(exact) of the elements equal LiteRT's")
    }

    /// int8_io's edges: the integers in and out, its convolution requantized.
    @Test func aQuantizedModelTakesAndGivesIntegers() throws {
        let data = try Data(contentsOf: Self.fixture("int8_io.tflite"))
        let onnx = try TFLiteModel(data: data, source: "int8_io.tflite").onnxModel()
        #expect(onnx.graph.inputs.first?.elementType == .float)
        #expect(onnx.graph.nodes.filter { $0.opType == "Floor" }.count >= 4, "requantized after each op")
        let model = try Model(contentsOf: Self.fixture("int8_io.tflite"), computeUnits: .cpuOnly, notice: { _ in })
        let input = try Tensor(npyFile: Self.fixture("int8_io-input.npy").path)
        let output = try #require(try model.predict(inputs: [model.inputs[0].name: input])[model.outputs[0].name])
        #expect(output.elements.allSatisfy { $0 == $0.rounded() && (-128...127).contains($0) })
    }

    @Test func anInt16ActivationIsRefusedByName() {
        #expect {
            _ = try Model(contentsOf: Self.fixture("int16_input.tflite"), computeUnits: .cpuOnly, notice: { _ in })
        } throws: { error in
            "\(error)".contains("int16_input.tflite: input") && "\(error)".contains("is INT16")
                && "\(error)".contains("LayerKit reads TensorFlow Lite models with float32, int8 or uint8 inputs")
        }
    }

    @Test func anUnsupportedOperatorIsRefusedWithItsCodeAndTheSupportedOnes() {
        #expect {
            _ = try Model(contentsOf: Self.fixture("unsupported_floor.tflite"), computeUnits: .cpuOnly, notice: { _ in })
        } throws: { error in
            "\(error)".contains("unsupported_floor.tflite: operator 1 (builtin operator 8): the operator is not "
                               + "supported by LayerKit (supported: ABS, ADD, AVERAGE_POOL_2D,")
        }
    }

    /// A minimal FlatBuffer: root offset 16, "TFL3", a vtable at 8 for fields 0
    /// and 1, the Model table at 16 (version 3, operator_codes at 28) and
    /// there a vector length; `soffset` is the table's offset to its vtable.
    static func tinyModel(soffset: Int32 = 8, vectorLength: UInt32) -> Data {
        func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
        return Data(le(UInt32(16)) + Array("TFL3".utf8) + le(UInt16(8)) + le(UInt16(12)) + le(UInt16(4)) + le(UInt16(8))
                    + le(soffset) + le(UInt32(3)) + le(UInt32(4)) + le(vectorLength))
    }

    @Test(arguments: [
        ("truncated", 0, "past the end of the"),
        ("root offset", 1, "an offset leads to byte 4294967295, past the end of the 32-byte file at byte 0"),
        ("vtable", 2, "past the end of the 32-byte file at byte 1016 while reading Model (its vtable)"),
        ("huge vector", 3, "a vector of 2147483647 elements of 4 bytes runs past the end of the 32-byte file at byte 28 "
                           + "while reading Model.operator_codes"),
    ])
    func hostileFilesAreRefusedNamingTheByte(_ kind: String, _ index: Int, _ message: String) throws {
        let conv = try Data(contentsOf: Self.fixture("conv_net.tflite"))
        let files = [conv.prefix(conv.count / 3),
                     Data([0xFF, 0xFF, 0xFF, 0xFF] + Array("TFL3".utf8) + [UInt8](repeating: 0, count: 24)),
                     Self.tinyModel(soffset: -1000, vectorLength: 0),
                     Self.tinyModel(vectorLength: 0x7FFF_FFFF)]
        #expect(ModelFileFormat.of(files[index], name: "hostile.tflite") == .tensorFlowLite)
        #expect(throws: LayerKitError.self) { _ = try ModelFileFormat.decode(files[index], name: "hostile.tflite") }
        do {
            _ = try ModelFileFormat.decode(files[index], name: "hostile.tflite")
        } catch {
            #expect("\(error)".contains("hostile.tflite: "), "\(kind): \(error)")
            #expect("\(error)".contains(message), "\(kind): \(error)")
        }
    }

    /// Well-formed FlatBuffers whose content is wrong (the script rewrites fixtures with
    /// TensorFlow's schema bindings), and a field that lies past its table's end.
    @Test(arguments: [
        ("hostile_tensor_index.tflite", "hostile_tensor_index.tflite: operator 0 names tensor 999 of 20"),
        ("hostile_missing_weights.tflite",
         "hostile_missing_weights.tflite: operator 0 (CONV_2D): input 1 is left out (-1), which the operator needs"),
    ])
    func wellFormedFilesWithWrongContentAreRefused(_ file: String, _ message: String) {
        #expect {
            _ = try Model(contentsOf: Self.fixture(file), computeUnits: .cpuOnly, notice: { _ in })
        } throws: { "\($0)".contains(message) }
    }

    @Test func aFieldPastItsTablesEndIsRefused() throws {
        var bytes = [UInt8](Self.tinyModel(vectorLength: 0))
        bytes[10] = 4  // the table is 4 bytes: field 0 (version, at 4) lies outside
        #expect {
            _ = try ModelFileFormat.decode(Data(bytes), name: "short.tflite")
        } throws: { "\($0)".contains("short.tflite: field 0 lies outside its 4-byte table at byte 20 while reading Model.version") }
    }

    /// A model with no operator codes and no subgraph is refused, not run empty.
    @Test func aModelWithoutASubgraphIsRefused() {
        #expect {
            _ = try ModelFileFormat.decode(Self.tinyModel(vectorLength: 0), name: "empty.tflite")
        } throws: { "\($0)".contains("empty.tflite: the model has no subgraph") }
    }
}

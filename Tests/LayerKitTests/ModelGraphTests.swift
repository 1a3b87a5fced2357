import Foundation
import Testing
@testable import LayerKit

/// Models built byte by byte (`ONNXBytes`): symbolic dimensions, shapes that
/// cannot be resolved, and graphs that do not connect.
struct ModelGraphTests {
    /// A float32 ValueInfoProto; a dimension is a number or a symbol.
    static func value(_ name: String, _ dims: [Any]?, type: Int64 = 1) -> [UInt8] {
        var tensorType = PB.int(1, type)
        if let dims {
            let shape = dims.flatMap { dim -> [UInt8] in
                if let n = dim as? Int { return PB.bytes(1, PB.int(1, Int64(n))) }
                return PB.bytes(1, PB.string(2, "\(dim)"))
            }
            tensorType += PB.bytes(2, shape)
        }
        return PB.string(1, name) + PB.bytes(2, PB.bytes(1, tensorType))
    }

    /// A model of `nodes` from graph inputs `inputs` to outputs `outputs`.
    static func model(nodes: [[UInt8]], inputs: [[UInt8]], outputs: [[UInt8]], initializers: [[UInt8]] = []) -> Data {
        ONNXBytes.model(graph: ONNXBytes.graph(nodes: nodes, initializers: initializers, inputs: inputs,
                                               extra: outputs.flatMap { PB.bytes(12, $0) }))
    }

    @Test func elementTypesHaveONNXCodesAndBothNames() {
        #expect(Model.ElementType(rawValue: 1) == .float32 && Model.ElementType(rawValue: 0) == nil)
        #expect(Model.ElementType.float16.rawValue == 10 && Model.ElementType.int64.rawValue == 7)
        #expect(Model.ElementType.float32.description == "float32" && Model.ElementType.float32.onnxName == "FLOAT")
        #expect(Model.ElementType.float6e3m2.description == "float6e3m2" && Model.ElementType.float6e3m2.onnxName == "FLOAT6E3M2")
        // Every case is one of ONNX's names, and the Swift-style names are distinct.
        let cases = Model.ElementType.allCases
        #expect(cases.allSatisfy { !$0.onnxName.hasPrefix("data type") })
        #expect(Set(cases.map(\.description)).count == cases.count)
        #expect(Model.Dimension.symbol("N").description == "N" && Model.Dimension.size(64).description == "64")
    }

    @Test func symbolicBatchIsFixedByEachPredict() throws {
        let data = Self.model(nodes: [ONNXBytes.node("Relu", name: "relu")],
                              inputs: [Self.value("x", ["N", 3, 2, 2])], outputs: [Self.value("y", ["N", 3, 2, 2])])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        #expect(model.inputs[0].dimensions == [.symbol("N"), .size(3), .size(2), .size(2)])
        #expect(model.inputs[0].dataType == .float32 && model.inputs[0].shapeWithSymbolsAsOne == [1, 3, 2, 2])
        #expect(model.inputs[0].description == "x: float32 [N, 3, 2, 2]")
        // An output without a shape in the file takes the computed one.
        let unshaped = try Model(data: Self.model(nodes: [ONNXBytes.node("Relu", name: "relu")],
                                                  inputs: [Self.value("x", [2, 3])], outputs: [Self.value("y", nil)]),
                                 computeUnits: .cpuOnly)
        #expect(unshaped.outputs[0].dimensions == [.size(2), .size(3)])
        for batch in [2, 5] {
            let values = seededUniform(count: batch * 12, in: -1...1, seed: UInt64(batch))
            let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [batch, 3, 2, 2], values: values)])["y"])
            #expect(y.shape == [batch, 3, 2, 2])
            #expect(y.values == values.map { max($0, 0) })
            #expect(model.nodes[0].outputShapes == [[batch, 3, 2, 2]])
        }
        // A fixed dimension stays fixed.
        #expect(throws: LayerKitError.self) { _ = try model.predict(inputs: ["x": Tensor(shape: [1, 4, 2, 2])]) }
    }

    /// A shape computed from a float input is resolved from the input's
    /// value at prepare (`ValueRequests`), one plan per value; a float
    /// shape is refused at load by ONNX's type check, naming the node.
    @Test func aShapeComputedFromAFloatInputIsReadAtPrepare() throws {
        let data = Self.model(nodes: [ONNXBytes.node("Relu", inputs: ["x"], outputs: ["r"], name: "relu"),
                                      ONNXBytes.node("Cast", inputs: ["r"], outputs: ["s"], name: "cast",
                                                     attributes: [PB.string(1, "to") + PB.int(3, 7) + PB.int(20, 2)]),
                                      ONNXBytes.node("Reshape", inputs: ["x", "s"], outputs: ["y"], name: "reshape")],
                              inputs: [Self.value("x", [1, 2])], outputs: [Self.value("y", nil)])
        let model = try Model(data: data, name: "m.onnx", computeUnits: .cpuOnly, notice: { _ in })
        #expect(model.nodes.isEmpty)
        for (values, shape) in [([2, 1], [2, 1]), ([1, 2], [1, 2])] as [([Float], [Int])] {
            let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [1, 2], values: values)])["y"])
            #expect(y.shape == shape && y.values == values)
        }
        let floatShape = Self.model(nodes: [ONNXBytes.node("Relu", inputs: ["x"], outputs: ["r"], name: "relu"),
                                            ONNXBytes.node("Reshape", inputs: ["x", "r"], outputs: ["y"], name: "reshape")],
                                    inputs: [Self.value("x", [1, 2])], outputs: [Self.value("y", [2])])
        #expect {
            _ = try Model(data: floatShape, name: "m.onnx", computeUnits: .cpuOnly)
        } throws: { error in
            "\(error)".hasPrefix("m.onnx: node 'reshape' (Reshape): input 1 ('r') is float32") && "\(error)".contains("takes int64")
        }
    }

    /// Integer inputs run in their own type at run time: the plan is made
    /// at load and serves every value (int64 arithmetic exact past 2^53); a
    /// float op reading one is refused at the first predict, naming the node.
    @Test func integerInputsRunInTheirOwnType() throws {
        let add = ONNXBytes.node("Add", inputs: ["x", "c"], outputs: ["y"], name: "add")
        let data = Self.model(nodes: [add], inputs: [Self.value("x", [3], type: 7)], outputs: [Self.value("y", [3], type: 7)],
                              initializers: [ONNXBytes.tensor("c", dims: [1], type: 7, PB.bytes(9, PB.littleEndian([Int64(-5)])))])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        #expect(model.nodes.map(\.name) == ["add"])
        let plan = try #require(model.planForTests)
        let y = try #require(try model.predict(inputs: ["x": Tensor(shape: [3], values: [1, 2, 40])])["y"])
        #expect(y.values == [-4, -3, 35])
        let big = Int64(1) << 62 + 3
        let exact = try model.predict(typed: ["x": TypedTensor(.int64, shape: [3], integers: [big, -big, 7])])
        #expect(exact["y"]?.integers() == [big - 5, -big - 5, 2])
        #expect(model.planForTests === plan, "a new value made a new plan")
        #expect(throws: LayerKitError.self) { _ = try model.predict(inputs: ["x": Tensor(shape: [3], values: [1, 2.5, 3])]) }
        let relu = Self.model(nodes: [ONNXBytes.node("Relu", name: "relu")], inputs: [Self.value("x", [2], type: 7)],
                              outputs: [Self.value("y", [2])])
        #expect {
            _ = try Model(data: relu, computeUnits: .cpuOnly).predict(inputs: ["x": Tensor(shape: [2], values: [1, -1])])
        } throws: { error in
            "\(error)".contains("node 'relu' (Relu)") && "\(error)".contains("is int64, which ONNX allows but LayerKit does not compute")
        }
    }

    @Test func unresolvableGraphsAreClearErrors() throws {
        let relu = ONNXBytes.node("Relu", name: "relu")
        let cases: [(Data, String)] = [
            (Self.model(nodes: [relu], inputs: [Self.value("x", nil)], outputs: [Self.value("y", nil)]),
             "input 'x' has no shape: its rank cannot be resolved"),
            (Self.model(nodes: [ONNXBytes.node("Relu", inputs: ["z"], name: "relu")], inputs: [Self.value("x", [2])],
                        outputs: [Self.value("y", [2])]),
             "node 'relu' (Relu) reads 'z', which no graph input, initializer or node makes"),
            (Self.model(nodes: [relu], inputs: [Self.value("x", [2])], outputs: [Self.value("w", [2])]),
             "graph output 'w' is made by no node"),
            (Self.model(nodes: [ONNXBytes.node("AveragePool", name: "pool", attributes: [
                PB.string(1, "kernel_shape") + PB.int(8, 1) + PB.int(8, 1) + PB.int(20, 7),
                PB.string(1, "pads") + [20_000, 20_000, 20_000, 20_000].flatMap { PB.int(8, $0) } + PB.int(20, 7)])],
                        inputs: [Self.value("x", [1, 1, 2, 2])], outputs: [Self.value("y", nil)]),
             "node 'pool' (AveragePool): its output 1x1x40002x40002 would hold more than 256M elements"),
            // Found by libFuzzer: a target shape whose product overflows trapped.
            (Self.model(nodes: [ONNXBytes.node("Reshape", inputs: ["x", "s"], name: "reshape")],
                        inputs: [Self.value("x", [1, 2])], outputs: [Self.value("y", nil)],
                        initializers: [ONNXBytes.tensor("s", dims: [3], type: 7,
                                                        PB.bytes(9, PB.littleEndian([Int64(1) << 40, 1 << 40, -1])))]),
             "node 'reshape' (Reshape): shape 1099511627776x1099511627776 has too many elements"),
            (Self.model(nodes: [relu], inputs: [Self.value("x", [1 << 40, 1 << 40])], outputs: [Self.value("y", nil)]),
             "input 'x' of shape 1099511627776x1099511627776 would hold more than 256M elements"),
            (Self.model(nodes: [ONNXBytes.node("MaxPool", name: "pool", attributes: [
                PB.string(1, "kernel_shape") + PB.int(8, 1) + PB.int(8, 1) + PB.int(20, 7),
                PB.string(1, "strides") + PB.int(8, Int64.max) + PB.int(8, 1) + PB.int(20, 7)])],
                        inputs: [Self.value("x", [1, 1, 2, 2])], outputs: [Self.value("y", nil)]),
             "node 'pool' (MaxPool): attribute 'strides' [9223372036854775807, 1] must hold values from 0 to 1048576"),
            (Self.model(nodes: [ONNXBytes.node("Relu", name: "relu", attributes: [PB.string(1, "alpha") + PB.float(2, 1) + PB.int(20, 1)])],
                        inputs: [Self.value("x", [2])], outputs: [Self.value("y", [2])]),
             "Relu: unknown parameter 'alpha'"),
        ]
        for (data, message) in cases {
            #expect(throws: LayerKitError.self) { _ = try Model(data: data, computeUnits: .cpuOnly) }
            do { _ = try Model(data: data, computeUnits: .cpuOnly) } catch {
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }

    @Test func anInputPassedStraightThroughIsACopy() throws {
        let data = Self.model(nodes: [ONNXBytes.node("Identity", name: "same")], inputs: [Self.value("x", [3])],
                              outputs: [Self.value("y", [3])])
        let model = try Model(data: data, computeUnits: .cpuOnly)
        let x = try Tensor(shape: [3], values: [1, 2, 3])
        let y = try #require(try model.predict(inputs: ["x": x])["y"])
        #expect(y !== x && y.values == [1, 2, 3])
        #expect(model.nodes[0].placement == nil)
    }
}

/// A Flatten of a spatial map into a Gemm (AlexNet's, VGG's first fully
/// connected layer): the flattened vector is wider than the device's image
/// layers hold, so the pair runs as one whole-map convolution on the GPU.
@Suite struct FlattenedGemmTests {
    @Test(.enabled(if: TestGPU.isEnabled))
    func aWideFlattenIntoGemmRunsOnTheGPU() throws {
        let (c, h, w, m) = (64, 12, 12, 10)     // K = 9216: 2304 slices, past lavapipe's 2048 layers
        let k = c * h * w
        var generator = SeededGenerator(seed: 11)
        let b = (0..<k * m).map { _ in Float.random(in: -0.05...0.05, using: &generator) }
        let bias = (0..<m).map { _ in Float.random(in: -1...1, using: &generator) }
        let x = try Tensor(shape: [1, c, h, w], values: (0..<k).map { _ in Float(Float16(Float.random(in: -1...1, using: &generator))) })
        let data = ModelGraphTests.model(
            nodes: [ONNXBytes.node("Flatten", inputs: ["x"], outputs: ["f"], name: "flatten"),
                    ONNXBytes.node("Gemm", inputs: ["f", "b", "c"], outputs: ["y"], name: "fc")],
            inputs: [ModelGraphTests.value("x", [1, c, h, w])], outputs: [ModelGraphTests.value("y", [1, m])],
            initializers: [ONNXBytes.tensor("b", dims: [Int64(k), Int64(m)], type: 1, PB.bytes(9, PB.littleEndian(b.map(\.bitPattern)))),
                           ONNXBytes.tensor("c", dims: [Int64(m)], type: 1, PB.bytes(9, PB.littleEndian(bias.map(\.bitPattern))))])
        let gpu = try Model(data: data, backend: Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }))
        #expect(gpu.nodes.map(\.name) == ["fc"] && gpu.nodes.allSatisfy { $0.placement == .gpu }, "\(gpu.nodes)")
        let cpu = try Model(data: data, computeUnits: .cpuOnly, notice: { _ in })
        let (yg, yc) = (try #require(try gpu.predict(inputs: ["x": x])["y"]), try #require(try cpu.predict(inputs: ["x": x])["y"]))
        for j in 0..<m {
            // float64 reference: the product over the map in row-major order.
            let reference = (0..<k).reduce(Double(bias[j])) { $0 + Double(x[$1]) * Double(b[$1 * m + j]) }
            #expect(abs(Double(yc[j]) - reference) <= 1e-4 * max(1, abs(reference)), "cpu \(j): \(yc[j]) vs \(reference)")
            #expect(abs(yg[j] - yc[j]) <= 1e-3 * max(1, abs(yc[j])), "gpu \(j): \(yg[j]) vs \(yc[j])")
        }
    }
}

/// Range folds at load from constants a file controls: an omitted input, a
/// NaN or infinite span, or a count past the tensor limit is an error naming
/// the node, never a trap; spans near Int64's ends come out exact.
@Suite struct RangeFoldingTests {
    static func model(_ inputs: [String], _ constants: [[UInt8]]) -> Data {
        ModelGraphTests.model(nodes: [ONNXBytes.node("Range", inputs: inputs, outputs: ["y"], name: "range")],
                              inputs: [], outputs: [ModelGraphTests.value("y", nil)], initializers: constants)
    }
    static func ints(_ name: String, _ v: Int64) -> [UInt8] { ONNXBytes.tensor(name, dims: [], type: 7, PB.bytes(9, PB.littleEndian([v]))) }
    static func floats(_ name: String, _ v: Float) -> [UInt8] {
        ONNXBytes.tensor(name, dims: [], type: 1, PB.bytes(9, PB.littleEndian([v.bitPattern])))
    }

    @Test func badSpansAreErrorsNamingTheNode() {
        let cases: [(Data, String)] = [
            (Self.model(["", "l", "d"], [Self.ints("l", 5), Self.ints("d", 1)]), "input 0 is missing"),
            (Self.model(["s", "l", "d"], [Self.floats("s", -3e38), Self.floats("l", 3e38), Self.floats("d", 1e-38)]), "would make"),
            (Self.model(["s", "l", "d"], [Self.floats("s", 0), Self.floats("l", .nan), Self.floats("d", 1)]), "give no count"),
            (Self.model(["s", "l", "d"], [Self.floats("s", 0), Self.floats("l", 1), Self.floats("d", .nan)]), "delta is nan"),
            (Self.model(["s", "l", "d"], [Self.ints("s", -(1 << 62)), Self.ints("l", 1 << 62), Self.ints("d", 1)]), "would make"),
            (Self.model(["s", "l", "d"], [Self.ints("s", 0), Self.ints("l", 4), Self.ints("d", 0)]), "delta is 0"),
        ]
        for (data, message) in cases {
            do {
                _ = try Model(data: data, computeUnits: .cpuOnly, notice: { _ in })
                Issue.record("loaded, expected \(message)")
            } catch {
                #expect("\(error)".contains("node 'range' (Range)") && "\(error)".contains(message), "\(error)")
            }
        }
    }

    @Test func countsAndEndsAreExact() throws {
        let small = try Model(data: Self.model(["s", "l", "d"], [Self.ints("s", 0), Self.ints("l", 5), Self.ints("d", 2)]),
                              computeUnits: .cpuOnly)
        #expect(try small.predict(inputs: [:])["y"]?.values == [0, 2, 4])
        let down = try Model(data: Self.model(["s", "l", "d"], [Self.floats("s", 1), Self.floats("l", -1), Self.floats("d", -0.5)]),
                             computeUnits: .cpuOnly)
        #expect(try down.predict(inputs: [:])["y"]?.values == [1, 0.5, 0, -0.5])
        let empty = try Model(data: Self.model(["s", "l", "d"], [Self.floats("s", 0), Self.floats("l", -.infinity), Self.floats("d", 1)]),
                              computeUnits: .cpuOnly)
        #expect(try empty.predict(inputs: [:])["y"]?.count == 0)
        // Near Int64.max: max-10, max-7, max-4, max-1 (four elements, no overflow on the way).
        let top = try Model(data: Self.model(["s", "l", "d"], [Self.ints("s", .max - 10), Self.ints("l", .max), Self.ints("d", 3)]),
                            computeUnits: .cpuOnly)
        #expect(try top.predict(inputs: [:])["y"]?.shape == [4])
    }
}

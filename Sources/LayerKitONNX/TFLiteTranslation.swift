import LayerKitCore
import Foundation

extension TFLiteModel {
    /// The domain of the nodes a TFLite custom operator becomes: op type its
    /// `custom_code`, found in the layer registry as any custom op is.
    public static let customDomain = "org.tensorflow.lite"
    /// The ONNX opset the translated graph's standard ops are written in.
    static let opset = 17

    /// The main subgraph as an ONNX model of standard ops and custom-op
    /// nodes, which LayerKit's importer runs as it runs any ONNX file.
    ///
    /// Inputs and outputs keep TFLite's names, shapes and NHWC layout; inside,
    /// rank-4 values are NCHW (ONNX's layout), transposed at the edges and
    /// where an op works on TFLite's axes. A float32 graph is read, with
    /// float16, int8 or sparse constant weights that DEQUANTIZE or DENSIFY
    /// expand; a fully quantized (int8 or uint8) graph is emulated in float32,
    /// each integer op's result requantized to its output's grid. An operator
    /// LayerKit does not translate, for float or quantized tensors, is refused by name.
    public func onnxModel() throws -> ONNXModel {
        var builder = TFLiteGraphBuilder(model: self)
        for index in subgraph.inputs { try builder.addInput(index) }
        for (number, op) in subgraph.operators.enumerated() {
            let code = operatorCodes[op.opcodeIndex]
            let name = code.custom ?? TFLiteGraphBuilder.builtinNames[code.builtin] ?? "builtin operator \(code.builtin)"
            do {
                try builder.add(op, code: code)
            } catch LayerKitError.invalidModel(let message) where !message.hasPrefix(source) {
                throw LayerKitError.invalidModel("\(source): operator \(number) (\(name)): \(message)")
            }
        }
        for index in subgraph.outputs { try builder.addOutput(index) }
        return ONNXModel(irVersion: 8, opsetImports: [("", Self.opset), (Self.customDomain, 1)],
                         producerName: "TensorFlow Lite schema version \(version), translated to ONNX ops",
                         producerVersion: "", graph: builder.graph)
    }
}

/// The ONNX graph made from a TFLite subgraph, operator by operator.
///
/// Each TFLite tensor becomes one ONNX value: rank-4 tensors in NCHW, others
/// as TFLite holds them. `tfliteLayout(_:)` gives a value in TFLite's layout
/// for ops whose meaning depends on it (RESHAPE, STRIDED_SLICE, FULLY_CONNECTED),
/// and `emit(_:inTFLiteLayout:)` brings such an op's result back.
struct TFLiteGraphBuilder {
    var graph = ONNXGraph(name: "", nodes: [], initializers: [:], initializerNames: [], inputs: [], outputs: [],
                          valueInfo: [])
    let model: TFLiteModel
    var tensors: [TFLiteTensor] { model.subgraph.tensors }
    /// The ONNX value holding each tensor computed so far (a graph input, an operator's output, a constant).
    var values: [Int: String] = [:]
    /// Constant float tensors computed at load: DEQUANTIZE's and DENSIFY's outputs.
    var hostConstants: [Int: [Float]] = [:]
    /// Names already taken in the graph.
    var taken: Set<String> = []

    init(model: TFLiteModel) { self.model = model }

    /// The axes of a rank-4 NHWC tensor in NCHW order: ONNX axis i is TFLite axis `toNCHW[i]`.
    static let toNCHW = [0, 3, 1, 2]
    /// TFLite axis a of a rank-4 tensor is ONNX axis `nchwAxis[a]`.
    static let nchwAxis = [0, 2, 3, 1]

    // MARK: Names and edges

    /// A name for a value made from tensor `index`, unique in the graph.
    mutating func unique(_ base: String) -> String {
        var name = base.isEmpty ? "tensor" : base, suffix = 1
        while taken.contains(name) { suffix += 1; name = "\(base)_\(suffix)" }
        taken.insert(name)
        return name
    }

    /// The name the graph gives tensor `index` where a node writes it (NCHW when
    /// rank 4; a quantized tensor's real value, its name left for its integers
    /// should it be a graph output).
    mutating func outputName(_ index: Int) -> String {
        let tensor = tensors[index]
        let suffix = tensor.shape.count == 4 ? ".nchw" : tensor.type == 3 || tensor.type == 9 ? ".real" : ""
        let name = unique(tensor.name + suffix)
        values[index] = name
        return name
    }

    /// A graph input for tensor `index`, in TFLite's shape, transposed to NCHW
    /// when rank 4; an int8 or uint8 input takes the integers, as float32, and
    /// holds the real values they quantize.
    mutating func addInput(_ index: Int) throws {
        let tensor = tensors[index]
        let grid: TFLiteGrid?
        do { grid = try self.grid(index) } catch LayerKitError.invalidModel(let message) {
            throw LayerKitError.invalidModel("\(model.source): input '\(tensor.name)' is \(tensor.typeName); LayerKit "
                                             + "reads TensorFlow Lite models with float32, int8 or uint8 inputs "
                                             + "(\(message))")
        }
        var name = unique(tensor.name)
        graph.inputs.append(ONNXValueInfo(name: name, elementType: .float, dims: tensor.shape.map(ONNXDimension.value)))
        let rank4 = tensor.shape.count == 4
        if let grid {
            let real = rank4 ? unique(tensor.name + ".real") : outputName(index)
            realValues(ofIntegers: name, grid, into: real)
            name = real
        }
        guard rank4 else { values[index] = name; return }
        addNode("Transpose", [name], outputName(index), ["perm": .ints(Self.toNCHW)])
    }

    /// A graph output for tensor `index`, transposed back to NHWC when rank 4;
    /// an int8 or uint8 output gives its integers, as float32.
    mutating func addOutput(_ index: Int) throws {
        let tensor = tensors[index]
        var value = try self.value(index)
        if let grid = try grid(index) {
            let quantized = unique(tensor.name + (tensor.shape.count == 4 ? ".integers" : ""))
            integers(ofRealValues: value, grid, into: quantized)
            value = quantized
        }
        if tensor.shape.count == 4 {
            let nhwc = unique(tensor.name)
            addNode("Transpose", [value], nhwc, ["perm": .ints(Self.nchwAxis)])
            value = nhwc
        } else if graph.inputs.contains(where: { $0.name == value }) || graph.initializers[value] != nil {
            value = unique(tensor.name + ".output")
            addNode("Identity", [try self.value(index)], value)
        }
        graph.outputs.append(ONNXValueInfo(name: value, elementType: .float, dims: tensor.shape.map(ONNXDimension.value)))
    }

    // MARK: Values

    /// Adds a node of the default domain (or `domain`) writing `output`.
    mutating func addNode(_ opType: String, _ inputs: [String], _ output: String, domain: String = "",
                          _ attributes: [String: ONNXAttribute] = [:]) {
        graph.nodes.append(ONNXNode(name: output, opType: opType, domain: domain, inputs: inputs, outputs: [output],
                                    attributes: attributes))
    }

    /// Adds a float initializer and returns its name.
    mutating func constant(_ base: String, _ dims: [Int], _ values: [Float]) -> String {
        let name = unique(base)
        graph.initializers[name] = ONNXTensor(name: name, dims: dims, floats: values)
        graph.initializerNames.append(name)
        return name
    }

    /// Adds an int64 initializer and returns its name.
    mutating func constant(_ base: String, _ dims: [Int], int64s values: [Int]) -> String {
        let name = unique(base)
        graph.initializers[name] = ONNXTensor(name: name, dims: dims, int64s: values.map(Int64.init))
        graph.initializerNames.append(name)
        return name
    }

    /// Whether tensor `index` is a constant (it has data, or is computed at load).
    func isConstant(_ index: Int) -> Bool { hostConstants[index] != nil || !model.data(tensors[index]).isEmpty }

    /// The ONNX value of tensor `index` in the graph's layout (NCHW when rank 4);
    /// a constant becomes an initializer the first time it is read.
    mutating func value(_ index: Int) throws -> String {
        if let value = values[index] { return value }
        let tensor = tensors[index]
        guard isConstant(index) else {
            throw LayerKitError.invalidModel("tensor '\(tensor.name)' is read before any operator computes it")
        }
        var data = try floats(index)
        var dims = tensor.shape
        if dims.count == 4 { (dims, data) = Self.transposed(data, dims, Self.toNCHW) }
        let name = constant(tensor.name, dims, data)
        values[index] = name
        return name
    }

    /// Records tensor `index` as a constant computed at load.
    mutating func setConstant(_ index: Int, _ data: [Float]) { hostConstants[index] = data }

    /// Tensor `index` in TFLite's layout: a rank-4 value transposed back to NHWC.
    mutating func tfliteLayout(_ index: Int) throws -> String {
        let value = try self.value(index)
        guard tensors[index].shape.count == 4 else { return value }
        let name = unique(tensors[index].name + ".nhwc")
        addNode("Transpose", [value], name, ["perm": .ints(Self.nchwAxis)])
        return name
    }

    /// Tensor `index` as a rank-4 value in the graph's layout, for an op
    /// broadcasting it against a rank-4 value: TFLite aligns the trailing
    /// (NHWC) axes, so [C] becomes [1, 1, 1, C] and then NCHW [1, C, 1, 1].
    mutating func rank4(_ index: Int) throws -> String {
        let tensor = tensors[index]
        guard tensor.shape.count < 4 else { return try value(index) }
        let padded = Array(repeating: 1, count: 4 - tensor.shape.count) + tensor.shape
        if isConstant(index) {
            let (dims, data) = Self.transposed(try floats(index), padded, Self.toNCHW)
            return constant(tensor.name + ".nchw", dims, data)
        }
        let reshaped = unique(tensor.name + ".rank4")
        addNode("Reshape", [try value(index), constant(reshaped + ".shape", [4], int64s: padded)], reshaped)
        let name = unique(tensor.name + ".nchw")
        addNode("Transpose", [reshaped], name, ["perm": .ints(Self.toNCHW)])
        return name
    }

    /// Writes op `opType` computing output tensor `index` in the graph's layout,
    /// followed by the fused activation `activation` (ActivationFunctionType).
    mutating func emit(_ opType: String, _ inputs: [String], output index: Int, activation: Int = 0,
                       domain: String = "", _ attributes: [String: ONNXAttribute] = [:]) throws {
        guard activation != 0 else {
            addNode(opType, inputs, outputName(index), domain: domain, attributes)
            return
        }
        let raw = unique(tensors[index].name + ".preactivation")
        addNode(opType, inputs, raw, domain: domain, attributes)
        try activate(raw, activation, into: outputName(index))
    }

    /// Writes TFLite's fused activation `code` of `input` into `output`.
    mutating func activate(_ input: String, _ code: Int, into output: String) throws {
        switch code {
        case 1: addNode("Relu", [input], output)
        case 2: addNode("Clip", [input, constant(output + ".min", [], [-1]), constant(output + ".max", [], [1])], output)
        case 3: addNode("Clip", [input, constant(output + ".min", [], [0]), constant(output + ".max", [], [6])], output)
        case 4: addNode("Tanh", [input], output)
        default:
            throw LayerKitError.invalidModel("fused activation function \(code) (SIGN_BIT or unknown) is not supported")
        }
    }

    /// Writes op `opType` computing output tensor `index` from inputs in TFLite's
    /// layout, its result (TFLite's layout) transposed into NCHW when rank 4.
    mutating func emit(_ opType: String, inTFLiteLayout inputs: [String], output index: Int,
                       _ attributes: [String: ONNXAttribute] = [:]) {
        guard tensors[index].shape.count == 4 else {
            addNode(opType, inputs, outputName(index), attributes)
            return
        }
        let raw = unique(tensors[index].name + ".nhwc")
        addNode(opType, inputs, raw, attributes)
        addNode("Transpose", [raw], outputName(index), ["perm": .ints(Self.toNCHW)])
    }

    /// `data` of shape `dims` with its axes permuted: output axis i is input axis `perm[i]`.
    static func transposed(_ data: [Float], _ dims: [Int], _ perm: [Int]) -> (dims: [Int], data: [Float]) {
        let newDims = perm.map { dims[$0] }
        var strides = Array(repeating: 1, count: dims.count)
        for axis in stride(from: dims.count - 2, through: 0, by: -1) { strides[axis] = strides[axis + 1] * dims[axis + 1] }
        var result = [Float](repeating: 0, count: data.count)
        var index = Array(repeating: 0, count: dims.count)
        for position in 0..<data.count {
            result[position] = data[zip(index, perm).reduce(0) { $0 + $1.0 * strides[$1.1] }]
            RowMajorIndex.step(&index, through: newDims)
        }
        return (newDims, result)
    }
}

/// A model as LayerKit runs it, made concrete for one set of input shapes:
/// the values that flow between steps (every shape known) and the steps,
/// each a `Layer`, in an order where every value is made before it is used.
/// A single layer run through `Backend.run` is a graph of one step.
struct ModelGraph {
    /// A tensor of the graph: a graph input, a constant, or a step's output.
    struct Value {
        let name: String
        let shape: [Int]
        /// The data of a constant (an initializer a layer takes as an input).
        let constant: Tensor?
        /// Its ONNX element type. A float value of any width but float64
        /// runs as a float32 `Tensor`; an integer, bool, string or float64
        /// value computed at run time (`isTyped`) is a `TypedTensor` on the
        /// host, which only `TypedStep`s compute on.
        var elementType: ElementType = .float32

        /// Whether the value is a sequence, optional or map
        /// (`TypedTensor.Container`) a typed step makes at run time (ZipMap's
        /// maps): held as a `TypedTensor`, whatever its tensors' type.
        var isContainer = false

        /// Whether the value is held in its own type at run time rather
        /// than as float32: integers stay exact, bools bools, float64
        /// double, containers whole.
        var isTyped: Bool { isContainer || ModelGraph.holdsTyped(elementType) }
    }

    /// Whether values of `type` are held as `TypedTensor`s at run time
    /// (integers, bool, string, float64) rather than as float32 tensors.
    static func holdsTyped(_ type: ElementType) -> Bool { !type.isFloatingPoint || type == .float64 }

    /// One node of the model.
    struct Step {
        /// The node's name (or `<op>_<index>` when the model gives none).
        let name: String
        /// The node's op type, and its domain ("" for standard ONNX ops).
        let opType: String
        let domain: String
        /// The layer; nil for a node that does no work (Identity, Dropout at
        /// inference): its output is its input's value.
        let layer: Layer?
        /// Value indices of the layer's inputs and outputs.
        let inputs: [Int]
        let outputs: [Int]

        /// How profiles and notices name the step: `name (domain.OpType)`,
        /// or just the name for a single layer (which has no op type).
        var label: String {
            opType.isEmpty ? name : "\(name) (\(domain.isEmpty ? "" : domain + ".")\(opType))"
        }
    }

    var values: [Value] = []
    var steps: [Step] = []
    /// Whether this is a single layer's graph (`init(layer:inputShapes:)`),
    /// whose tensors start and end on the host.
    private(set) var isSingleLayer = false
    /// Value indices of the graph's inputs and outputs, in the model's order.
    var inputs: [Int] = []
    var outputs: [Int] = []
    /// The exact values of the graph outputs known at load (everything
    /// before them folded), by position in `outputs`: their ONNX element
    /// type and elements as onnxruntime computes them (int64, bool, float16,
    /// strings...). Such an output's value in `values` is a float32 constant
    /// of the same elements (`TypedTensor.float32Tensor()`); `Model` returns
    /// this typed value where it can give the output's own type.
    var knownOutputs: [Int: TypedTensor] = [:]

    /// `layer` alone, on inputs of `inputShapes`: the graph a single-layer
    /// run plans and executes.
    init(layer: Layer, inputShapes: [[Int]]) throws {
        let outputShapes = try layer.outputShapes(forInputShapes: inputShapes)
        inputs = inputShapes.enumerated().map { i, shape in addValue("input \(i)", shape: shape) }
        outputs = outputShapes.enumerated().map { i, shape in addValue("output \(i)", shape: shape) }
        steps = [Step(name: layer.layerName, opType: "", domain: "", layer: layer, inputs: inputs, outputs: outputs)]
        isSingleLayer = true
    }

    init() {}

    /// Adds a value; returns its index.
    mutating func addValue(_ name: String, shape: [Int], constant: Tensor? = nil, type: ElementType = .float32) -> Int {
        values.append(Value(name: name, shape: shape, constant: constant, elementType: type))
        return values.count - 1
    }

    /// For each value, the index of the last step that reads it
    /// (`steps.count` for graph outputs, which are read after the last step;
    /// -1 for values nothing reads).
    func lastUses() -> [Int] {
        var last = Array(repeating: -1, count: values.count)
        for (index, step) in steps.enumerated() where step.layer != nil {
            for input in step.inputs { last[input] = index }
        }
        for output in outputs { last[output] = steps.count }
        return last
    }

    /// For the fusion passes: the steps reading each value, in step order,
    /// and whether each value is a graph output (read after the last step).
    /// A step that does no work reads nothing: its output is its input's
    /// value, so a float Cast or an Identity between two nodes leaves
    /// them fusible (GPT-2's Softmax, Cast to float, MatMul).
    func readers() -> (steps: [[Int]], isOutput: [Bool]) {
        var readers = Array(repeating: [Int](), count: values.count)
        for (index, step) in steps.enumerated() where step.layer != nil {
            for input in step.inputs { readers[input].append(index) }
        }
        var isOutput = Array(repeating: false, count: values.count)
        for output in outputs { isOutput[output] = true }
        return (readers, isOutput)
    }

    /// For the fusion passes: the step making each value, by value index
    /// (graph inputs, constants and the outputs of steps that do no work
    /// have none).
    func makers() -> [Int: Int] {
        var makers: [Int: Int] = [:]
        for (index, step) in steps.enumerated() where step.layer != nil {
            for output in step.outputs { makers[output] = index }
        }
        return makers
    }

    /// Drops the steps at `indices` (a fusion pass's replaced steps),
    /// keeping the others in order, and the steps that do no work on a
    /// value one of them made (a Cast to float inside a fused attention):
    /// that value is no longer computed.
    mutating func removeSteps(at indices: Set<Int>) {
        let kept = steps.indices.filter { !indices.contains($0) && steps[$0].layer != nil }
        let gone = Set(indices.flatMap { steps[$0].outputs }).subtracting(kept.flatMap { steps[$0].outputs })
        steps = steps.enumerated().filter { index, step in
            !indices.contains(index) && (step.layer != nil || gone.isDisjoint(with: step.inputs))
        }.map(\.element)
    }

    /// Drops the steps whose outputs no later step reads and that are not
    /// graph outputs (Dropout's mask, a branch a model computes and never
    /// uses), last to first, so what only they read goes too.
    mutating func removeUnreadSteps() {
        var read = Set(outputs)
        var kept: [Step] = []
        for step in steps.reversed() where step.outputs.contains(where: read.contains) {
            read.formUnion(step.inputs)
            kept.append(step)
        }
        steps = kept.reversed()
    }
}

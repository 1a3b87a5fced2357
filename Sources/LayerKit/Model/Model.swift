import LayerKitONNX
import Foundation

/// A neural-network model loaded from an ONNX file: Core ML's `MLModel`.
///
/// Standard ONNX operators become LayerKit's layers; nodes of any other
/// domain are custom layers found by op type in a `LayerRegistry`, made
/// from the node's attributes with its constant inputs as weights. Each
/// layer runs on the GPU when `computeUnits` allows and it has an `encode`,
/// else on the CPU; on the GPU the graph stays in slice images, reused by
/// liveness. Loading decodes the file, makes the layers and prepares a plan
/// for the declared input shapes (symbolic dimensions 1): pipelines, images,
/// staging buffers and constant uploads exist before the first `predict`;
/// other shapes get a plan of their own at their first `predict`.
///
/// `predict` may be called from several threads; runs are serialized.
public final class Model: @unchecked Sendable {
    /// The element type of an input or output (LayerKitCore's `ElementType`).
    public typealias ElementType = LayerKitCore.ElementType

    /// A graph input or output.
    public struct ValueDescription: Sendable, Equatable, CustomStringConvertible {
        public let name: String
        /// Each dimension as the model gives it: a size, or a symbol ("N")
        /// to be fixed by the input given to `predict`.
        public let dimensions: [Dimension]
        /// The element type; nil when the file gives none, or a code newer
        /// than `ElementType`'s list.
        public let dataType: ElementType?
        /// The value's form when it is a sequence, optional or map (then
        /// `dimensions` is empty and `dataType` nil): such a value is given
        /// and returned as a container `TypedTensor` (`predict(typed:)`).
        public var form: ValueForm? = nil

        /// The shape the load-time plan uses: each symbolic dimension 1.
        public var shapeWithSymbolsAsOne: [Int] { dimensions.map { $0.size ?? 1 } }

        /// `image: float32 [N, 3, 64, 64]` ("untyped" without a type).
        public var description: String {
            if let form { return "\(name): \(form)" }
            return "\(name): \(dataType?.description ?? "untyped") [\(dimensions.map(\.description).joined(separator: ", "))]"
        }
    }

    /// A node of the graph, as the model runs it.
    public struct NodeDescription: Sendable {
        public let name: String
        public let opType: String
        /// "" for standard ONNX ops.
        public let domain: String
        /// Where it runs, and why when the GPU was allowed but not used;
        /// `nil` for nodes that do no work (Identity).
        public let placement: Placement?
        /// Why it runs on the CPU although the GPU was allowed (the end of
        /// `placement`'s reason), if so.
        public let cpuReason: String?
        /// Its output shapes, for the shapes of the last run (or of the
        /// load-time plan, which puts 1 for symbolic dimensions).
        public let outputShapes: [[Int]]
    }

    public let inputs: [ValueDescription]
    public let outputs: [ValueDescription]
    /// The imported opsets: domain ("" is ONNX's default) and version.
    public let opsets: [(domain: String, version: Int)]
    /// The ONNX IR version and the producer named in the file.
    public let irVersion: Int
    public let producer: String
    /// A classifier's class labels, in the order of its probability output
    /// (a Core ML classifier's: Docs/COREML.md); nil for other models.
    public let classLabels: [String]?
    public let backend: Backend

    private let importer: ONNXImporter
    /// How errors name the model (its file name).
    private let name: String
    private let lock = NSLock()
    private var plans: [PlanKey: ModelPlan] = [:]
    /// The keys of `plans`, least recently used first.
    private var planOrder: [PlanKey] = []
    /// How many plans are kept: each holds its images and host arena.
    static let planCapacity = 4
    private var lastPlan: ModelPlan?
    /// Inputs whose values a plan needs (a weight, a scale, a shape or a
    /// `NonZero` computed from them: `ValueRequests`, `TypedStep.ShapeChanged`):
    /// values of the plan, constants of its import, one plan per value.
    /// Found by the first import or run that needed them.
    private var preparedInputs = Set<Int>()

    /// What a plan is made for: the input shapes, the values of the
    /// `preparedInputs` (constants of the plan, `ONNXImporter.graph`), and
    /// which float inputs fp16 storage cannot keep (their readers run on
    /// the CPU; empty for most runs, which then share the load-time plan).
    private struct PlanKey: Hashable {
        let shapes: [[Int]]
        let values: [TypedTensor]
        var unfaithfulInputs: [Int] = []
    }

    /// Whether input `i` runs as a `TypedTensor` in its own type (integers,
    /// bool, string, float64: `ModelGraph.holdsTyped`); other float inputs
    /// of every width run as float32 tensors.
    private func isTypedInput(_ i: Int) -> Bool { ModelGraph.holdsTyped(inputs[i].dataType ?? .float32) }

    /// Loads the ONNX model at `url`, or the Core ML neural network or ML
    /// Program (`.mlmodel`, or a `.mlpackage` folder; chosen by content:
    /// `ModelFileFormat`, Docs/COREML.md), translated into ONNX's ops. `computeUnits` picks the backend
    /// unless `backend` shares one. Placement notices go to `notice` when the
    /// model makes its backend (default: standard error, `layerkit: ` and one
    /// line each; `{ _ in }` silences them), to a shared backend's own
    /// `notice` otherwise.
    /// `threads` is the CPU evaluator's thread count of the backend the model
    /// makes (nil: the cores the process may use); a shared backend keeps its
    /// own, so giving both is an error.
    public convenience init(contentsOf url: URL, computeUnits: ComputeUnits = .automatic, backend: Backend? = nil,
                            threads: Int? = nil, registry: LayerRegistry = .shared,
                            notice: @escaping @Sendable (String) -> Void = Backend.standardErrorNotice) throws {
        try self.init(model: ModelFileFormat.read(url), name: url.lastPathComponent, computeUnits: computeUnits,
                      backend: backend, threads: threads, registry: registry, notice: notice)
    }

    /// Loads an ONNX model (or a Core ML one) from its bytes; `name` names it in errors. A
    /// model whose weights are in external files must be loaded with
    /// `init(contentsOf:)`, which finds them beside it.
    public convenience init(data: Data, name: String = "ONNX model", computeUnits: ComputeUnits = .automatic,
                            backend: Backend? = nil, threads: Int? = nil, registry: LayerRegistry = .shared,
                            notice: @escaping @Sendable (String) -> Void = Backend.standardErrorNotice) throws {
        try self.init(model: ModelFileFormat.decode(data, name: name), name: name, computeUnits: computeUnits,
                      backend: backend, threads: threads, registry: registry, notice: notice)
    }

    private init(model: ONNXModel, name: String, computeUnits: ComputeUnits, backend: Backend?, threads: Int?,
                 registry: LayerRegistry, notice: @escaping @Sendable (String) -> Void) throws {
        if backend != nil, threads != nil {
            throw LayerKitError.invalidParameter("threads sets the thread count of the backend a model makes; "
                                                 + "a shared backend has its own (Backend(threads:))")
        }
        if let tensor = model.unreadExternalTensor {
            throw LayerKitError.invalidModel("\(name): tensor '\(tensor.name)' keeps its data in an external file; "
                                             + "load the model from its file (Model(contentsOf:)) so LayerKit finds it")
        }
        do {
            var importer = try ONNXImporter(model: model, registry: registry)
            importer.layerCache = ConvertedNodeCache(capacity: Model.planCapacity)
            self.importer = importer
        } catch LayerKitError.invalidModel(let message) {
            throw LayerKitError.invalidModel("\(name): \(message)")
        }
        self.backend = try backend ?? Backend(computeUnits: computeUnits, threads: threads, notice: notice)
        irVersion = model.irVersion
        producer = model.producerName
        classLabels = model.classLabels
        opsets = model.opsetImports.map { ($0.domain, $0.version) }
        do {
            inputs = try model.graph.feedInputs.map { input in
                guard let dims = input.dims ?? (input.form != nil ? [] : nil) else {
                    throw LayerKitError.invalidModel("input '\(input.name)' has no shape: its rank cannot be resolved")
                }
                return Model.describe(input, dims)
            }
        } catch LayerKitError.invalidModel(let message) {
            throw LayerKitError.invalidModel("\(name): \(message)")
        }
        self.name = name
        for input in inputs where input.dataType == .float64 {
            self.backend.announce("\(name): input '\(input.name)' is DOUBLE: element-wise, comparison and data-moving "
                                  + "ops compute it in double, layers (Conv, MatMul, normalizations...) in float32")
        }
        // Symbolic dimensions are 1 for the load-time plan.
        let shapes = inputs.map(\.shapeWithSymbolsAsOne)
        let plan: ModelPlan
        do {
            plan = try Model.plan(importer, inputNames: inputs.map(\.name), shapes: shapes, values: [:],
                                  inputRanges: [], backend: self.backend, name: name)
        } catch let needed as ValuesNeeded {
            // Inputs the plan needs the values of: it is made at the first predict, from them.
            let names = inputs.map(\.name)
            let needing = Set(names.indices.filter { needed.inputs.contains(names[$0]) })
            guard !needing.isEmpty else { throw needed.error }
            // Symbolic dimensions guessed as 1 can disagree (GPT-2's past 1 + sequence 1
            // against a mask of 1 makes a gather index fall outside): what such a plan
            // needed proves nothing, so the first predict's real shapes decide.
            if inputs.allSatisfy({ $0.dimensions.allSatisfy { $0.size != nil } }) {
                preparedInputs = needing
                self.backend.announce("\(name): input " + needing.sorted().map { "'\(names[$0])'" }.joined(separator: ", ")
                                      + " is read at prepare (a node needs its value there): each new value makes a new plan")
            }
            outputs = model.graph.outputs.map { Model.describe($0, $0.dims ?? []) }
            lastPlan = nil
            return
        }
        // Outputs without a shape in the file show the one the graph computes.
        outputs = zip(model.graph.outputs, plan.graph.outputs).map { output, value in
            Model.describe(output, output.dims ?? plan.graph.values[value].shape.map(ONNXDimension.value))
        }
        lastPlan = plan
        plans[PlanKey(shapes: shapes, values: [])] = plan
        self.backend.announce(plan, model: name)
    }

    /// The plan of the last inputs (tests read its arena).
    var planForTests: ModelPlan? {
        lock.lock(); defer { lock.unlock() }
        return lastPlan
    }

    /// The values that fp16 storage cannot keep, as judged for the plan of
    /// the last inputs: its constants, and the float inputs of the last
    /// `predict` (checked on a backend with a GPU only, where they are
    /// stored in fp16). Every node reading one runs on the CPU, and its
    /// `cpuReason` says why.
    public var halfRangeFindings: [HalfRange.Finding] {
        lock.lock(); defer { lock.unlock() }
        return lastPlan?.halfRangeFindings ?? []
    }

    /// Runs the model as `predict(inputs:)` does, and checks every value it
    /// has on the host against fp16's range: the `halfRangeFindings` of the
    /// plan, the inputs given, and each value a CPU step computes, in the
    /// order it is computed (on a `.cpuOnly` model, every value). `layerkit
    /// parity` runs its CPU reference so, to say which values a GPU run
    /// would store in fp16 but not keep.
    public func predictCheckingHalfRange(inputs given: [String: Tensor]) throws
        -> (outputs: [String: Tensor], findings: [HalfRange.Finding]) {
        var computed: [HalfRange.Finding] = []
        var planFindings: [HalfRange.Finding] = []
        let outputs = try predict(inputs: given, outputs: [:], profiler: nil) { plan, run in
            planFindings = plan.halfRangeFindings
            run.observeComputed = { v, tensor in
                guard let range = HalfRange(checking: tensor) else { return }
                computed.append(HalfRange.Finding(value: plan.graph.values[v].name, origin: .computed, range: range))
            }
        }
        let inputs = self.inputs.compactMap { input -> HalfRange.Finding? in
            guard !planFindings.contains(where: { $0.origin == .input && $0.value == input.name }),
                  let tensor = given[input.name], let range = HalfRange(checking: tensor) else { return nil }
            return HalfRange.Finding(value: input.name, origin: .input, range: range)
        }
        return (outputs, planFindings + inputs + computed)
    }

    /// Runs the model as `predict(inputs:)` does, rounding each value a
    /// CPU step computes to fp16 as soon as it is computed, before anything
    /// reads it. On a `.cpuOnly` model this is the GPU's "fp16 twin": fp32
    /// arithmetic, every stored value in fp16, as the GPU stores its slice
    /// images. Its distance from a plain CPU run is the error fp16 storage
    /// alone explains, which a deep network amplifies far past one fp16
    /// rounding; `layerkit parity MODEL` bounds the GPU by it.
    public func predictStoringHalf(inputs given: [String: Tensor]) throws -> [String: Tensor] {
        try predict(inputs: given, outputs: [:], profiler: nil) { _, run in
            run.observeComputed = { _, tensor in
                for i in 0..<tensor.count { tensor[i] = Float(Float16(tensor[i])) }
            }
        }
    }

    /// The nodes with where they run, as planned for the last inputs (the
    /// declared shapes until the first `predict`; empty before the first
    /// `predict` of a model whose plan needs an input's values).
    public var nodes: [NodeDescription] {
        lock.lock(); defer { lock.unlock() }
        guard let lastPlan else { return [] }
        let graph = lastPlan.graph
        return graph.steps.enumerated().map { i, step in
            NodeDescription(name: step.name, opType: step.opType, domain: step.domain,
                            placement: step.layer == nil ? nil : lastPlan.placements[i],
                            cpuReason: lastPlan.cpuReasons[i],
                            outputShapes: step.outputs.map { graph.values[$0].shape })
        }
    }

    /// Runs the model on `inputs` (by input name; every input, Float32, of
    /// the model's shape, symbolic dimensions free) and returns its outputs
    /// by name. With `profiler`, every layer's kernels, transfers and CPU
    /// work are recorded as spans under the op `name (OpType)`, inside one
    /// `.run` span (`ProfileSummary` and `ChromeTrace` read them).
    ///
    /// Each output is a new tensor, the caller's to keep: no later run
    /// writes it (the plan's reused host memory holds intermediate values
    /// only). To run without allocating outputs, give them:
    /// `predict(inputs:into:)`.
    public func predict(inputs given: [String: Tensor], profiler: Profiler? = nil) throws -> [String: Tensor] {
        try predict(inputs: given, outputs: [:], profiler: profiler)
    }

    /// Runs the model on `inputs` as `predict(inputs:profiler:)` does,
    /// writing each output named in `outputs` into the tensor given for it,
    /// in place, and returning those same tensors (outputs not named there
    /// come back in new tensors). With every output given, a run allocates
    /// no tensor: intermediate values live in the plan's host arena,
    /// reused run after run, so a loop of `predict(inputs:into:)` on
    /// tensors of the same shapes allocates nothing after its first run.
    ///
    /// Each given tensor must have its output's shape for these inputs
    /// (`nodes`' output shapes; a symbolic dimension takes the inputs'
    /// size) and must not be one of the inputs, nor given for two outputs.
    /// A mismatch throws, naming the output, before anything runs. The
    /// tensors are the caller's: the next run writes them again only if
    /// they are given again.
    public func predict(inputs given: [String: Tensor], into outputs: [String: Tensor],
                        profiler: Profiler? = nil) throws -> [String: Tensor] {
        try predict(inputs: given, outputs: outputs, profiler: profiler)
    }

    /// `predict(inputs:into:)` with the inputs named in `typed` given in
    /// their own types (as `predict(typed:)` takes them) and the others as
    /// float32 tensors: how `TokenGenerator` feeds int64 ids beside a
    /// float32 cache it keeps in its own tensors, with no typed copy of
    /// the cache each step.
    func predict(inputs given: [String: Tensor], typed: [String: TypedTensor],
                 into outputs: [String: Tensor]) throws -> [String: Tensor] {
        try predict(inputs: given, typed: typed, outputs: outputs, profiler: nil)
    }

    /// `prepareRun`, when given, sees the plan and the run before the run starts.
    private func predict(inputs given: [String: Tensor], typed: [String: TypedTensor] = [:], outputs provided: [String: Tensor],
                         profiler: Profiler?, prepareRun: ((ModelPlan, ModelRun) -> Void)? = nil) throws -> [String: Tensor] {
        for name in provided.keys.sorted() where !outputs.contains(where: { $0.name == name }) {
            throw LayerKitError.invalidParameter(
                "the model has no output '\(name)' (outputs: \(outputs.map(\.name).joined(separator: ", ")))")
        }
        for (name, tensor) in provided.sorted(by: { $0.key < $1.key }) {
            if let input = given.first(where: { $0.value === tensor })?.key {
                throw LayerKitError.invalidParameter("the tensor given for output '\(name)' is input '\(input)': "
                                                     + "an output cannot be written over an input")
            }
            if let other = provided.keys.sorted().first(where: { $0 != name && provided[$0] === tensor }), other < name {
                throw LayerKitError.invalidParameter("outputs '\(other)' and '\(name)' were given the same tensor")
            }
        }
        for name in (Array(given.keys) + typed.keys).sorted() where !inputs.contains(where: { $0.name == name }) {
            throw LayerKitError.invalidParameter(
                "the model has no input '\(name)' (inputs: \(inputs.map(\.name).joined(separator: ", ")))")
        }
        if let twice = given.keys.sorted().first(where: { typed[$0] != nil }) {
            throw LayerKitError.invalidParameter("input '\(twice)' was given twice, as a Tensor and as a TypedTensor")
        }
        var values: [TypedTensor?] = Array(repeating: nil, count: inputs.count)
        let tensors = try inputs.enumerated().map { i, input in
            if let value = typed[input.name] {
                let (tensor, typedValue) = try runtimeInput(i, value)
                values[i] = typedValue
                return tensor
            }
            guard let tensor = given[input.name] else {
                throw LayerKitError.invalidParameter("input '\(input.name)' is missing")
            }
            if let form = input.form {
                throw LayerKitError.invalidParameter("input '\(input.name)' is a \(form), which a Tensor cannot hold: "
                                                     + "give it as a TypedTensor (predict(typed:))")
            }
            try Model.check(tensor.shape, fits: input)
            return tensor
        }
        // Typed inputs come as Float32 tensors (integers as whole numbers); they are read as their type here.
        for (i, tensor) in tensors.enumerated() where isTypedInput(i) && typed[inputs[i].name] == nil {
            let type = inputs[i].dataType ?? .int64
            if type == .float64 {
                values[i] = try TypedTensor(tensor).converted(to: .float64)
                continue
            }
            guard type.isInteger, tensor.elements.allSatisfy({ $0 == $0.rounded(.towardZero) && $0.isFinite }) else {
                throw LayerKitError.invalidParameter("input '\(inputs[i].name)' is \(type); give it as a TypedTensor "
                                                     + "(predict(typed:)), or as whole numbers in a float32 Tensor")
            }
            values[i] = try TypedTensor(type, shape: tensor.shape,
                                        integers: tensor.elements.map { Int64(exactly: $0) ?? .min })
        }
        return try run(tensors: tensors, values: values, outputs: provided, profiler: profiler, prepareRun: prepareRun).outputs
    }

    /// Runs the model on `inputs` of their own element types and returns
    /// each output in the type the model declares for it: the API for
    /// models with integer, bool or string values (token ids, masks). Each
    /// input's type must be the model's (a float32 array for an int64 input
    /// is an error naming both, never a silent conversion). float16 and
    /// bfloat16 inputs are computed in float32; integer, bool, string and
    /// float64 inputs stay in their type, computed exactly on the CPU by the
    /// ops that take them (`TypedStep`). An output computed in its own type
    /// (or known at load) is returned exactly; one a float layer computed is
    /// converted from its float32 result to its declared type (integers
    /// rounded to nearest, bools non-zero).
    public func predict(typed given: [String: TypedTensor], profiler: Profiler? = nil) throws -> [String: TypedTensor] {
        for name in given.keys.sorted() where !inputs.contains(where: { $0.name == name }) {
            throw LayerKitError.invalidParameter(
                "the model has no input '\(name)' (inputs: \(inputs.map(\.name).joined(separator: ", ")))")
        }
        var tensors: [Tensor] = []
        var values: [TypedTensor?] = []
        for input in inputs.indices {
            guard let value = given[inputs[input].name] else {
                throw LayerKitError.invalidParameter("input '\(inputs[input].name)' is missing")
            }
            let (tensor, typedValue) = try runtimeInput(input, value)
            tensors.append(tensor)
            values.append(typedValue)
        }
        var known: [Int: TypedTensor] = [:]
        let (results, exact) = try run(tensors: tensors, values: values, outputs: [:], profiler: profiler) { plan, _ in
            known = plan.graph.knownOutputs
        }
        var typed: [String: TypedTensor] = [:]
        for (k, output) in outputs.enumerated() {
            // An output known at load or computed in its type is exact; the others are float32 results.
            if let value = known[k] ?? exact[output.name] {
                typed[output.name] = try value.converted(to: output.dataType ?? value.elementType)
            } else if let result = results[output.name] {
                typed[output.name] = try Model.typed(result, as: output.dataType ?? .float32)
            }
        }
        return typed
    }

    /// Input `i` given as `value` (checked against the input's form, type
    /// and shape) as `run(tensors:values:...)` takes it: a float32 tensor
    /// of a float input's values, or a typed input's shape (no values)
    /// and its value.
    private func runtimeInput(_ i: Int, _ value: TypedTensor) throws -> (tensor: Tensor, value: TypedTensor?) {
        let input = inputs[i]
        if input.form != nil || value.container != nil {
            // A sequence or optional is a zero-size value: a constant of the plan, read at prepare.
            guard let form = input.form, form.admits(value.form) else {
                throw LayerKitError.invalidParameter("input '\(input.name)' is a \(value.form); the model takes "
                                                     + (input.form.map { "a \($0)" } ?? "a tensor"))
            }
            return (try Tensor(shape: value.shape), value)
        }
        let type = input.dataType ?? .float32
        guard value.elementType == type else {
            throw LayerKitError.invalidParameter("input '\(input.name)' is \(value.elementType); the model takes \(type)")
        }
        try Model.check(value.shape, fits: input)
        return isTypedInput(i) ? (try Tensor(shape: value.shape), value) : (try value.float32Tensor(), nil)
    }

    /// A float32 result as a value of `type`: floats rounded to the type,
    /// integers rounded to nearest (a float32 computation of an index may
    /// land a hair off it), bools non-zero.
    static func typed(_ result: Tensor, as type: ElementType) throws -> TypedTensor {
        let values = TypedTensor(result)
        guard type.isInteger, type != .bool else { return try values.converted(to: type) }
        return try TypedTensor(.float64, shape: result.shape, doubles: values.doubles().map { $0.rounded() })
            .converted(to: type)
    }

    /// Runs the plan for `tensors` (one per input; those of typed inputs
    /// only give their shapes) and `values` (per input, the value of a
    /// typed input): the outputs as float32 tensors, and those computed in
    /// their own type exactly, by name.
    private func run(tensors: [Tensor], values given: [TypedTensor?], outputs provided: [String: Tensor], profiler: Profiler?,
                     prepareRun: ((ModelPlan, ModelRun) -> Void)?) throws
        -> (outputs: [String: Tensor], typed: [String: TypedTensor]) {
        lock.lock(); defer { lock.unlock() }
        // An import or a run that needs the values of inputs at prepare makes them
        // values of the plan and asks again; each time adds an input, so this ends.
        while true {
            let planned = try plan(tensors: tensors, values: given)
            guard let plan = planned.plan else { continue }
            do {
                return try run(plan, planned.runtimeInputs, outputs: provided, profiler: profiler, prepareRun: prepareRun)
            } catch let changed as TypedStep.ShapeChanged {
                let more = Set(inputs.indices.filter { i in
                    changed.inputs.contains { importer.graphInputs(feeding: $0).contains(inputs[i].name) }
                }).subtracting(preparedInputs)
                guard !more.isEmpty else { throw LayerKitError.invalidModel("\(name): \(changed.message)") }
                preparedInputs.formUnion(more)
                backend.announce("\(name): input " + more.sorted().map { "'\(inputs[$0].name)'" }.joined(separator: ", ")
                                 + " decides the shape of a value (\(changed.message)): each new value makes a new plan")
            }
        }
    }

    /// One run of `plan` on `runtime` inputs (float and typed, as
    /// `plan(tensors:values:)` gives them). The caller holds `lock`.
    private func run(_ plan: ModelPlan, _ runtime: (floats: [Tensor], typed: [TypedTensor]), outputs provided: [String: Tensor],
                     profiler: Profiler?, prepareRun: ((ModelPlan, ModelRun) -> Void)?) throws
        -> (outputs: [String: Tensor], typed: [String: TypedTensor]) {
        lastPlan = plan
        // The caller's output tensors, checked against this plan's shapes before the run.
        let targets = try zip(outputs, plan.graph.outputs).map { output, value -> Tensor? in
            guard let tensor = provided[output.name] else { return nil }
            let shape = plan.graph.values[value].shape
            guard tensor.shape == shape else {
                throw LayerKitError.shapeMismatch("the tensor given for output '\(output.name)' has shape "
                                                  + "\(Tensor.describe(tensor.shape)); for these inputs it is "
                                                  + Tensor.describe(shape))
            }
            return tensor
        }
        let run = ModelRun(plan: plan, gpu: backend.gpu, inputs: runtime.floats, typedInputs: runtime.typed,
                           outputs: targets, profiler: profiler)
        prepareRun?(plan, run)
        let results = try CPUThreads.with(backend.threads) {
            try profiler.map { try $0.measure(.run, "run \(name)", run.run) } ?? run.run()
        }
        // Output names are unique (ONNXValidation); a repeat would keep the first, never trap.
        let typed = Dictionary(run.typedOutputs.map { (outputs[$0.key].name, $0.value) }, uniquingKeysWith: { first, _ in first })
        return (Dictionary(zip(outputs.map(\.name), results), uniquingKeysWith: { first, _ in first }), typed)
    }

    /// The plan for `tensors` and `values` (as `run` takes them), from the
    /// cache or made, and the inputs it runs on (float and typed, in
    /// order); nil when the import found inputs whose values it needs
    /// (`ValueRequests`), now `preparedInputs`: call again. The caller holds `lock`.
    private func plan(tensors: [Tensor], values given: [TypedTensor?]) throws
        -> (plan: ModelPlan?, runtimeInputs: (floats: [Tensor], typed: [TypedTensor])) {
        // The values of the plan: the prepared inputs, and every zero-size input (it holds
        // nothing to stream; folding takes it). In the input's own type: a float16 or
        // float8 input widened to float32 narrows back exactly.
        var constants: [TypedTensor?] = Array(repeating: nil, count: inputs.count)
        for i in tensors.indices where preparedInputs.contains(i) || tensors[i].count == 0 {
            constants[i] = try given[i] ?? TypedTensor(tensors[i]).converted(to: inputs[i].dataType ?? .float32)
        }
        let runtime = tensors.indices.filter { constants[$0] == nil }
        let floatTensors = runtime.filter { given[$0] == nil }.map { tensors[$0] }
        let typedValues = runtime.compactMap { given[$0] }
        let inputRanges = backend.halfRanges(of: floatTensors)
        let key = PlanKey(shapes: tensors.map(\.shape), values: constants.compactMap { $0 },
                          unfaithfulInputs: inputRanges.indices.filter { inputRanges[$0] != nil })
        if let known = plans[key] {
            planOrder.removeAll { $0 == key }
            planOrder.append(key)
            return (known, (floatTensors, typedValues))
        }
        var named: [String: ONNXTensor] = [:]
        for (input, value) in zip(inputs, constants) {
            if let value { named[input.name] = ONNXTensor(name: input.name, typed: value) }
        }
        let plan: ModelPlan
        do {
            plan = try Model.plan(importer, inputNames: inputs.map(\.name), shapes: key.shapes, values: named,
                                  inputRanges: inputRanges, backend: backend, name: name)
        } catch let needed as ValuesNeeded {
            let more = Set(inputs.indices.filter { needed.inputs.contains(inputs[$0].name) }).subtracting(preparedInputs)
            guard !more.isEmpty else { throw needed.error }
            preparedInputs.formUnion(more)
            backend.announce("\(name): input " + more.sorted().map { "'\(inputs[$0].name)'" }.joined(separator: ", ")
                             + " is read at prepare (a node needs its value there): each new value makes a new plan")
            return (nil, ([], []))
        }
        // Plans hold images: keep those of the most recently used shapes only.
        if plans.count >= Model.planCapacity, let oldest = planOrder.first {
            plans[oldest] = nil
            planOrder.removeFirst()
        }
        plans[key] = plan
        planOrder.append(key)
        backend.announce(plan, model: name)
        return (plan, (floatTensors, typedValues))
    }

    /// An import needed the values of `inputs` at prepare (`ValueRequests`);
    /// `error` is what it threw.
    private struct ValuesNeeded: Error {
        let inputs: Set<String>
        let error: LayerKitError
    }

    /// The plan for inputs of `shapes`; model errors name the model.
    /// Load-time folding evaluates layers: on the backend's threads too.
    /// `inputRanges`: per float input, what fp16 storage does to its data (`ModelPlan.init`).
    private static func plan(_ importer: ONNXImporter, inputNames: [String], shapes: [[Int]],
                             values: [String: ONNXTensor], inputRanges: [HalfRange?], backend: Backend,
                             name: String) throws -> ModelPlan {
        let requests = ValueRequests()
        do {
            let graph = try CPUThreads.with(backend.threads) {
                try importer.graph(inputShapes: Dictionary(zip(inputNames, shapes), uniquingKeysWith: { first, _ in first }),
                                   inputValues: values, requests: requests)
            }
            return try ModelPlan(graph: graph, backend: backend, inputRanges: inputRanges,
                                 constantRange: importer.layerCache?.halfRange(of:) ?? HalfRange.init(checking:))
        } catch LayerKitError.invalidModel(let message) {
            let error = LayerKitError.invalidModel("\(name): \(message)")
            let needed = requests.values.reduce(into: Set<String>()) { $0.formUnion(importer.graphInputs(feeding: $1)) }
            throw needed.isEmpty ? error : ValuesNeeded(inputs: needed, error: error)
        }
    }

    static func describe(_ value: ONNXValueInfo, _ dims: [ONNXDimension]) -> ValueDescription {
        ValueDescription(name: value.name, dimensions: dims.map(Dimension.init),
                         dataType: value.elementType.flatMap { ElementType(rawValue: $0.rawValue) }, form: value.form)
    }

    /// Throws unless `shape` has the input's rank and its fixed dimensions.
    /// A zero-size input is a value of the plan (`plan(tensors:values:)`).
    private static func check(_ shape: [Int], fits input: ValueDescription) throws {
        let fits = shape.count == input.dimensions.count
            && zip(shape, input.dimensions).allSatisfy { extent, dimension in
                extent >= 0 && (dimension.size.map { $0 == extent } ?? true)
            }
        guard fits else {
            throw LayerKitError.shapeMismatch("input '\(input.name)' has shape \(Tensor.describe(shape)); the model "
                                              + "expects \(input.dimensions.map(\.description).joined(separator: "x"))")
        }
    }
}

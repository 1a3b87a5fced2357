import Foundation
import Testing
@testable import LayerKit

/// Randomized graphs run on the GPU and the CPU against a float64
/// interpreter written here: chains and branches of per-element ops whose
/// operands are earlier values, graph inputs, and constants of the
/// activation's full shape, of broadcast shapes and scalars, in either
/// operand position. It exists because a constant of exactly the
/// activation's shape once took the image a finished GPU step had freed,
/// so the next run's upload overwrote it and `Mul(Abs(x), W)` gave |x|·x
/// (issue 27, item 7): a fault of image assignment that no single-op test
/// sees, only graphs whose values share shapes.
struct GraphDifferentialTests {
    /// A value of the graph, as the float64 interpreter holds it.
    struct Value {
        let name: String
        let shape: [Int]
        let values: [Double]
        /// A bound on |x| of every element, through every op: the GPU's error
        /// (one fp16 rounding of at most 2^-11 relative a stored value) is
        /// measured against it, since a difference of large values can be small.
        let bound: Double
    }

    /// One random graph: the model's bytes, its inputs, and the reference outputs.
    struct Case {
        let seed: UInt64
        let model: Data
        let inputs: [String: Tensor]
        let outputs: [Value]
        let steps: Int
        let description: String
    }

    static let unary = ["Abs", "Neg", "Relu"]
    static let binary = ["Add", "Sub", "Mul", "Max", "Min"]

    static func makeCase(seed: UInt64) throws -> Case {
        var rng = SeededGenerator(seed: seed)
        let shape = [[1, 2].randomElement(using: &rng)!, [1, 3, 4, 5, 8].randomElement(using: &rng)!,
                     [1, 2, 3].randomElement(using: &rng)!, [1, 3, 4].randomElement(using: &rng)!]
        let count = shape.reduce(1, *)
        func random(_ n: Int) -> [Double] { (0..<n).map { _ in Double(Float.random(in: -2...2, using: &rng)) } }

        var nodes: [[UInt8]] = [], initializers: [[UInt8]] = [], inputValueInfos: [[UInt8]] = []
        var inputs: [String: Tensor] = [:]
        // Values an op may take as its activation: graph inputs and results, all of `shape`.
        var activations: [Value] = []
        for name in ["x0", "x1"] {
            let values = random(count)
            activations.append(Value(name: name, shape: shape, values: values, bound: 2))
            inputs[name] = try Tensor(shape: shape, values: values.map(Float.init))
            inputValueInfos.append(ModelGraphTests.value(name, shape))
        }
        var made: [String] = []
        func constant(_ constantShape: [Int]) -> Value {
            let values = random(constantShape.reduce(1, *)).map { $0 * 0.75 }
            let name = "w\(initializers.count)"
            initializers.append(ONNXBytes.tensor(name, dims: constantShape.map(Int64.init), type: 1,
                                                 PB.bytes(9, PB.littleEndian(values.map { Float($0).bitPattern }))))
            return Value(name: name, shape: constantShape, values: values, bound: 1.5)
        }
        let steps = Int.random(in: 3...6, using: &rng)
        for step in 0..<steps {
            // Mostly the newest value, so chains form; sometimes an older one, so
            // values branch and images are freed and taken again.
            let a = Bool.random(using: &rng) ? activations.last! : activations.randomElement(using: &rng)!
            let output = "v\(step)"
            let result: Value
            if Int.random(in: 0..<4, using: &rng) == 0 {
                let op = unary.randomElement(using: &rng)!
                nodes.append(ONNXBytes.node(op, inputs: [a.name], outputs: [output], name: "n\(step)"))
                made.append("\(op)(\(a.name))")
                result = Value(name: output, shape: shape, values: a.values.map { Self.apply(op, $0) }, bound: a.bound)
            } else {
                let op = binary.randomElement(using: &rng)!
                let b: Value
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: b = activations.randomElement(using: &rng)!
                case 1, 2: b = constant(shape)
                case 3: b = constant([1, shape[1], 1, 1])
                case 4: b = constant([shape[3]])
                default: b = constant([])
                }
                let (lhs, rhs) = Bool.random(using: &rng) ? (a, b) : (b, a)
                nodes.append(ONNXBytes.node(op, inputs: [lhs.name, rhs.name], outputs: [output], name: "n\(step)"))
                made.append("\(op)(\(lhs.name)\(lhs.shape), \(rhs.name)\(rhs.shape))")
                let values = (0..<count).map { i in
                    Self.apply(op, lhs.values[Self.broadcastIndex(i, of: shape, into: lhs.shape)],
                               rhs.values[Self.broadcastIndex(i, of: shape, into: rhs.shape)])
                }
                let bound = op == "Mul" ? lhs.bound * rhs.bound
                    : op == "Add" || op == "Sub" ? lhs.bound + rhs.bound : max(lhs.bound, rhs.bound)
                result = Value(name: output, shape: shape, values: values, bound: bound)
            }
            activations.append(result)
        }
        // The last value and one earlier result are outputs, so a value made on
        // the GPU mid-graph is downloaded too.
        var outputs = [activations.last!]
        if let earlier = activations.dropLast().last(where: { $0.name.hasPrefix("v") }) { outputs.insert(earlier, at: 0) }
        let model = ModelGraphTests.model(nodes: nodes, inputs: inputValueInfos,
                                          outputs: outputs.map { ModelGraphTests.value($0.name, $0.shape) },
                                          initializers: initializers)
        return Case(seed: seed, model: model, inputs: inputs, outputs: outputs, steps: steps,
                    description: "seed \(seed), shape \(shape): " + made.joined(separator: ", "))
    }

    static func apply(_ op: String, _ x: Double) -> Double {
        switch op {
        case "Abs": return abs(x)
        case "Neg": return -x
        default: return max(x, 0)
        }
    }

    static func apply(_ op: String, _ a: Double, _ b: Double) -> Double {
        switch op {
        case "Add": return a + b
        case "Sub": return a - b
        case "Mul": return a * b
        case "Max": return max(a, b)
        default: return min(a, b)
        }
    }

    /// The flat index into an operand of `operandShape` (numpy broadcasting,
    /// aligned on the right) of element `i` of a tensor of `shape`.
    static func broadcastIndex(_ i: Int, of shape: [Int], into operandShape: [Int]) -> Int {
        var rest = i, index = 0, stride = 1
        for axis in (0..<shape.count).reversed() {
            let coordinate = rest % shape[axis]
            rest /= shape[axis]
            let operandAxis = axis - (shape.count - operandShape.count)
            guard operandAxis >= 0 else { continue }
            if operandShape[operandAxis] != 1 { index += coordinate * stride }
            stride *= operandShape[operandAxis]
        }
        return index
    }

    /// Every output within `tolerance(bound)` of the float64 reference.
    static func check(_ outputs: [String: Tensor], _ c: Case, backend: String, tolerance: (Double) -> Double) {
        for expected in c.outputs {
            guard let y = outputs[expected.name] else {
                Issue.record("\(backend): no output '\(expected.name)' — \(c.description)")
                continue
            }
            let worst = zip(y.values, expected.values).map { abs(Double($0) - $1) }.max() ?? 0
            #expect(worst <= tolerance(expected.bound),
                    "\(backend) '\(expected.name)' off by \(worst) — \(c.description)")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func randomGraphsAgreeWithFloat64OnBothBackends() throws {
        let gpu = try Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in })
        for seed in UInt64(1)...40 {
            let c = try Self.makeCase(seed: seed)
            let cpuModel = try Model(data: c.model, computeUnits: .cpuOnly)
            Self.check(try cpuModel.predict(inputs: c.inputs), c, backend: "CPU") { 1e-5 * max(1, $0) }
            let gpuModel = try Model(data: c.model, backend: gpu)
            // Twice: the second run reuses the plan, its images and its uploaded constants.
            for _ in 0..<2 {
                let outputs = try gpuModel.predict(inputs: c.inputs)
                // Each stored value is rounded to fp16 once a step (2^-11 relative
                // of at most `bound`): 1e-3 a step, twice that bound.
                Self.check(outputs, c, backend: "GPU") { 1e-3 * Double(c.steps + 1) * max(1, $0) }
            }
            #expect(gpuModel.nodes.allSatisfy { $0.placement?.isGPU ?? true },
                    "a step left the GPU — \(c.description): \(gpuModel.nodes.compactMap(\.cpuReason))")
        }
    }

    /// The issue's own example: `Mul(Abs(x), W)`, W of x's shape.
    @Test(.enabled(if: TestGPU.isEnabled))
    func fullShapeConstantAfterAGPUStepKeepsItsImage() throws {
        let x = seededUniform(count: 12, in: -2...2, seed: 7), w = seededUniform(count: 12, in: -2...2, seed: 8)
        for op in ["Mul", "Add", "Sub"] {
            let model = ModelGraphTests.model(
                nodes: [ONNXBytes.node("Abs", inputs: ["x"], outputs: ["t"], name: "abs"),
                        ONNXBytes.node(op, inputs: ["t", "w"], outputs: ["y"], name: "op")],
                inputs: [ModelGraphTests.value("x", [3, 4])], outputs: [ModelGraphTests.value("y", [3, 4])],
                initializers: [ONNXBytes.tensor("w", dims: [3, 4], type: 1, PB.bytes(9, PB.littleEndian(w.map(\.bitPattern))))])
            let gpu = try Model(data: model, backend: Backend(computeUnits: .gpu, context: TestGPU.get(), notice: { _ in }))
            let y = try #require(try gpu.predict(inputs: ["x": Tensor(shape: [3, 4], values: x)])["y"])
            for i in 0..<12 {
                let expected = Self.apply(op, Double(abs(x[i])), Double(w[i]))
                #expect(abs(Double(y[i]) - expected) <= 2e-3 * max(1, abs(expected)), "\(op) element \(i)")
            }
        }
    }
}

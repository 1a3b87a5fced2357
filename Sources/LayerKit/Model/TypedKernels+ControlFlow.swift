import LayerKitONNX

/// If, Loop and Scan: kernels that run their bodies (`ONNXSubgraph`) on the
/// node's known inputs. The last inputs of the node are the outer values
/// its bodies read (`ONNXNode.implicitInputs`), bound by the importer.
extension TypedKernels {
    /// If: the outputs of `then_branch` or `else_branch`, by the condition.
    static let ifThenElse: Kernel = { node, inputs in
        let condition = try input(0, inputs, node)
        guard condition.count == 1 else { throw node.error("its condition holds \(condition.count) elements, not one") }
        let name = condition.integer(at: 0) != 0 ? "then_branch" : "else_branch"
        guard let branch = try node.node.graph(name) else { throw node.error("has no \(name)") }
        return try ONNXSubgraph(branch, of: node, types: [], scope: ONNXSubgraph.scope(of: node, inputs)).run([])
    }

    /// Loop: runs `body` while the trip count `M` (input 0) is not reached
    /// and its condition (input 1, then the body's first output) holds; the
    /// carried values pass from one iteration to the next, and each scan
    /// output is the body's values of every iteration, stacked on a new
    /// first axis. At most `ONNXSubgraph.maxIterations`.
    static let loop: Kernel = { node, inputs in
        guard let graph = try node.node.graph("body") else { throw node.error("has no body") }
        let formal = ONNXSubgraph.formalInputCount(of: node)
        guard formal >= 2 else { throw node.error("needs inputs M and cond (each may be empty)") }
        let tripCount = optional(0, inputs).map { $0.integer(at: 0) }
        var proceeds = optional(1, inputs).map { $0.integer(at: 0) != 0 } ?? true
        var carried = try (2..<formal).map { try input($0, inputs, node) }
        let body = try ONNXSubgraph(graph, of: node, types: [.int64, .bool] + carried.map(\.elementType),
                                    scope: ONNXSubgraph.scope(of: node, inputs))
        guard graph.outputs.count >= 1 + carried.count else {
            throw node.error("its body has \(graph.outputs.count) outputs, fewer than 1 + \(carried.count) carried values")
        }
        var scans: [[TypedTensor]] = Array(repeating: [], count: graph.outputs.count - 1 - carried.count)
        var scanned = 0  // elements of the scan outputs so far
        var iteration: Int64 = 0
        while proceeds, tripCount.map({ iteration < $0 }) ?? true {
            guard iteration < ONNXSubgraph.maxIterations else {
                throw node.error("runs past \(ONNXSubgraph.maxIterations) iterations, LayerKit's limit for a loop")
            }
            let outputs = try body.run([try TypedTensor(.int64, shape: [], integers: [iteration]),
                                        try TypedTensor(.bool, shape: [], integers: [1])] + carried)
            guard outputs[0].count == 1 else { throw node.error("its body's condition holds \(outputs[0].count) elements") }
            proceeds = outputs[0].integer(at: 0) != 0
            carried = Array(outputs[1..<(1 + carried.count)])
            for (k, value) in outputs.dropFirst(1 + carried.count).enumerated() {
                scanned += value.count
                guard scanned <= ONNXImporter.maxValueElements else {
                    throw node.error("its scan outputs would hold more than \(ONNXImporter.maxValueElements >> 20)M elements")
                }
                scans[k].append(value)
            }
            iteration += 1
        }
        return try carried + scans.enumerated().map { k, values in
            guard !values.isEmpty else { return try TypedTensor(zerosOf: .float32, shape: [0]) }
            do { return try TypedTensor.stacking(values, along: 0) } catch {
                throw node.error("scan output \(k) changes shape between iterations: \(error)")
            }
        }
    }

    /// Scan: runs `body` once per slice of the scan inputs along their
    /// axes (`scan_input_axes`, reversed where `scan_input_directions` is 1),
    /// carrying the states from one iteration to the next, and stacks each
    /// scan output along `scan_output_axes` (`scan_output_directions`).
    /// Opset 8's form (a batch axis first, `sequence_lens` as input 0) runs
    /// the same per batch item, every sequence of full length.
    static let scan: Kernel = { node, inputs in
        guard node.opset < 9 else { return try scanItems(node, inputs, from: 0) }
        if let lengths = optional(0, inputs) {
            let full = try input(1, inputs, node).shape.dropFirst().first
            guard lengths.integers().allSatisfy({ Int($0) == full }) else {
                throw node.error("sequence_lens shorter than the scan inputs are not supported")
            }
        }
        let formal = ONNXSubgraph.formalInputCount(of: node)
        guard formal > 1, let batch = try input(1, inputs, node).shape.first else { throw node.error("has no batch axis") }
        var items: [[TypedTensor]] = []
        for b in 0..<batch {
            var item = inputs
            for i in 1..<formal { item[i] = try input(i, inputs, node).slice(b, of: 0) }
            items.append(try scanItems(node, item, from: 1))
        }
        guard let first = items.first else { throw node.error("has an empty batch") }
        return try first.indices.map { k in try TypedTensor.stacking(items.map { $0[k] }, along: 0) }
    }

    /// Scan (opset 9's form) on the node inputs from `first` on.
    private static func scanItems(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], from first: Int) throws -> [TypedTensor] {
        guard let graph = try node.node.graph("body") else { throw node.error("has no body") }
        guard let scanCount = try node.node.int("num_scan_inputs"), scanCount >= 1 else {
            throw node.error("needs num_scan_inputs of at least 1")
        }
        let formal = ONNXSubgraph.formalInputCount(of: node)
        guard formal > first else { throw node.error("has no scan inputs") }
        let given = try (first..<formal).map { try input($0, inputs, node) }
        guard scanCount <= given.count else { throw node.error("has \(given.count) inputs, fewer than num_scan_inputs") }
        var states = Array(given.dropLast(scanCount))
        let scanned = Array(given.suffix(scanCount))
        func attribute(_ name: String, count: Int) throws -> [Int] {
            // Opset 8 names the input directions "directions" and has no axes.
            let values = node.opset >= 9 ? try node.node.ints(name)
                : name == "scan_input_directions" ? try node.node.ints("directions") : nil
            guard let values else { return Array(repeating: 0, count: count) }
            guard values.count == count else { throw node.error("\(name) has \(values.count) values, not \(count)") }
            return values
        }
        let axes = try zip(try attribute("scan_input_axes", count: scanCount), scanned).map { try node.axis($0, rank: $1.shape.count) }
        let directions = try attribute("scan_input_directions", count: scanCount)
        let lengths = Set(zip(scanned, axes).map { $0.shape[$1] })
        guard lengths.count == 1, let length = lengths.first else {
            throw node.error("its scan inputs have different lengths along their axes: \(lengths.sorted())")
        }
        guard length <= ONNXSubgraph.maxIterations else {
            throw node.error("scans \(length) slices, past \(ONNXSubgraph.maxIterations), LayerKit's limit for a loop")
        }
        let body = try ONNXSubgraph(graph, of: node, types: given.map(\.elementType), scope: ONNXSubgraph.scope(of: node, inputs))
        let outputCount = graph.outputs.count - states.count
        guard outputCount >= 0 else { throw node.error("its body has fewer outputs than the \(states.count) states") }
        var outputs: [[TypedTensor]] = Array(repeating: [], count: outputCount)
        for t in 0..<length {
            let slices = try zip(zip(scanned, axes), directions).map { part, direction in
                try part.0.slice(direction == 1 ? length - 1 - t : t, of: part.1)
            }
            let computed = try body.run(states + slices)
            states = Array(computed.prefix(states.count))
            for (k, value) in computed.dropFirst(states.count).enumerated() { outputs[k].append(value) }
        }
        let outputAxes = try attribute("scan_output_axes", count: outputCount)
        let outputDirections = try attribute("scan_output_directions", count: outputCount)
        return try states + outputs.indices.map { k in
            guard let rank = outputs[k].first?.shape.count else { return try TypedTensor(zerosOf: .float32, shape: [0]) }
            let values = outputDirections[k] == 1 ? outputs[k].reversed() : outputs[k]
            return try TypedTensor.stacking(values, along: node.axis(outputAxes[k], rank: rank + 1))
        }
    }
}

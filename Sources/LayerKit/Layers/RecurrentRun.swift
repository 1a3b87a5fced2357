import CKernels
import Synchronization

/// One `RecurrentLayer.evaluate`: every step's projected input, the
/// outputs, and the walk over the steps, split over threads by direction
/// and batch items (independent sequences: no step waits for another
/// thread), or, for one sequence of a wide cell, each step's hidden units
/// (every thread waits for the step before the next).
final class RecurrentRun: Sendable {
    /// The layer: its options, packed weights and activation programs.
    let layer: RecurrentLayer
    /// The sequence's steps and batch items (X's two outer extents).
    let steps: Int
    let batch: Int
    /// 1, or 2 for bidirectional.
    let directions: Int
    /// The hidden size.
    let hidden: Int
    /// Gates times hidden: one direction's columns of W', R' and the projection.
    let rows: Int
    /// Each batch item's length.
    let lengths: [Int]
    /// The initial states, when given.
    let initialH: Tensor?
    let initialC: Tensor?
    /// The outputs the node lists (Y, Y_h, Y_c in order).
    let y: Tensor?
    let yh: Tensor?
    let yc: Tensor?
    /// X W' + bias for every step and direction, `[steps * batch, directions * rows]`,
    /// in X's row order.
    let projected: Tensor
    /// The threads the run may use (`CPUThreads.current`).
    let threads: Int
    /// Set when a matrix product could not get its work buffer.
    private let failed = Mutex(false)

    init(layer: RecurrentLayer, steps: Int, batch: Int, initialH: Tensor?, initialC: Tensor?, outputs: [Tensor],
         threads: Int) throws {
        (self.layer, self.steps, self.batch, self.initialH, self.initialC) = (layer, steps, batch, initialH, initialC)
        (directions, hidden, rows) = (layer.options.direction.count, layer.hiddenSize, layer.cell.gates * layer.hiddenSize)
        lengths = layer.options.sequenceLengths ?? Array(repeating: steps, count: batch)
        y = outputs.count > 0 ? outputs[0] : nil
        yh = outputs.count > 1 ? outputs[1] : nil
        yc = outputs.count > 2 ? outputs[2] : nil
        projected = try Tensor(shape: [steps * batch, directions * rows])
        self.threads = max(1, threads)
    }

    /// Fills `projected` with X W' + bias, rows split over threads when the product is large.
    func project(_ x: Tensor) throws {
        let (count, width, input) = (steps * batch, directions * rows, layer.inputSize)
        let large = count * width * input >= 1 << 18
        let chunk = large ? (count + threads - 1) / threads : max(count, 1)
        let (weights, bias, output, isa) = (layer.inputWeights, layer.bias, projected, layer.packedISA)
        forEachChunk(count: count, chunkSize: chunk, threadCount: large ? threads : 1) { range in
            let status = lk_sgemm_f32_packed_b(isa, range.count, width, input, 1, x.dataPointer + range.lowerBound * input,
                                               input, 1, weights.dataPointer, output.dataPointer + range.lowerBound * width,
                                               width, nil, bias.dataPointer, 0)
            if status != 0 { self.failed.withLock { $0 = true } }
        }
        try checkProducts()
    }

    /// Walks every direction's steps into the outputs. Threads join below
    /// 2^17 multiply-adds in all (a run of well under a millisecond, where
    /// handing work to the pool costs about what it saves), and a step's
    /// units split only from 2^15 a step, since every thread then waits at
    /// every step; these bounds follow the convolutions' rule of thumb and
    /// were not measured on this layer.
    func walk() throws {
        let stepWork = batch * rows * hidden
        var (batchChunks, unitChunks) = (1, 1)
        if threads > 1 && steps * directions * stepWork >= 1 << 17 {
            batchChunks = min(batch, max(1, threads / directions))
            if directions * batchChunks == 1 && stepWork >= 1 << 15 && hidden >= 16 { unitChunks = min(threads, hidden / 8) }
        }
        let (itemsPerDirection, unitsSplit) = (batchChunks, unitChunks)
        let perChunk = (batch + batchChunks - 1) / max(batchChunks, 1)
        let items = directions * batchChunks
        forEachChunk(count: items, chunkSize: 1, threadCount: min(threads, items)) { range in
            for item in range {
                let (d, start) = (item / itemsPerDirection, (item % itemsPerDirection) * perChunk)
                let end = min(batch, start + perChunk)
                if start < end { self.walk(direction: d, items: start..<end, unitChunks: unitsSplit) }
            }
        }
        try checkProducts()
    }

    private func checkProducts() throws {
        if failed.withLock({ $0 }) {
            throw LayerKitError.unsupported("\(layer.layerName): a matrix product could not allocate its work buffer")
        }
    }

    // MARK: - Layout

    /// Whether direction `d` walks from each sequence's end.
    private func walksBack(_ d: Int) -> Bool { layer.options.direction == .reverse || d == 1 }

    /// The time index batch item `b` is at on step `s` of direction `d`.
    private func time(_ b: Int, step s: Int, direction d: Int) -> Int { walksBack(d) ? lengths[b] - 1 - s : s }

    /// The row of X (and `projected`) of time `t`, batch item `b`.
    private func inputRow(_ t: Int, _ b: Int) -> Int { layer.options.batchMajor ? b * steps + t : t * batch + b }

    /// Where Y holds time `t`, direction `d`, batch item `b`.
    private func outputOffset(_ t: Int, _ d: Int, _ b: Int) -> Int {
        layer.options.batchMajor ? ((b * steps + t) * directions + d) * hidden : ((t * directions + d) * batch + b) * hidden
    }

    /// Where a state (initial_h, Y_h, ...) holds direction `d`, batch item `b`.
    private func stateOffset(_ d: Int, _ b: Int) -> Int {
        layer.options.batchMajor ? (b * directions + d) * hidden : (d * batch + b) * hidden
    }

    // MARK: - Steps

    /// One walk's memory: the rows of its batch items.
    private struct Rows: @unchecked Sendable {
        /// The gates' inputs, then their values, `[items, rows]`.
        let gates: UnsafeMutablePointer<Float>
        /// The state before the step and the one it makes, `[items, hidden]` each.
        var previous: UnsafeMutablePointer<Float>
        var next: UnsafeMutablePointer<Float>
        /// LSTM: the cell state, updated in place (a unit reads only its own).
        let cell: UnsafeMutablePointer<Float>
        /// GRU: the reset state r ⊙ H, or with `linear_before_reset` H R' + Rb, of the candidate gate.
        let candidate: UnsafeMutablePointer<Float>
    }

    /// What a thread working on a range of hidden units needs of its own:
    /// each program's registers.
    private final class Workspace: @unchecked Sendable {
        let scratch: [CPUProgram.Scratch]
        init(_ programs: [CPUProgram]) { scratch = programs.map(CPUProgram.Scratch.init) }
    }

    /// The parts of a step: GRU without `linear_before_reset` finds its reset
    /// gate for every unit before the candidate gate reads r ⊙ H; the other
    /// cells' step is one part.
    private enum Part { case whole, resetGates, candidate }

    /// Walks direction `d` for batch items `items`, each step's units split in `unitChunks`.
    private func walk(direction d: Int, items: Range<Int>, unitChunks: Int) {
        let count = items.count
        let buffers = (0..<5).map { k in
            let size = max(1, count * (k == 0 ? rows : hidden))
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: size)
            buffer.initialize(repeating: 0, count: size)
            return buffer
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        var memory = Rows(gates: buffers[0], previous: buffers[1], next: buffers[2], cell: buffers[3], candidate: buffers[4])
        for (i, b) in items.enumerated() {
            let offset = stateOffset(d, b)
            for (state, initial) in [(memory.previous, initialH), (memory.cell, initialC)] {
                if let initial {
                    (state + i * hidden).update(from: initial.dataPointer + offset, count: hidden)
                } else {
                    (state + i * hidden).update(repeating: 0, count: hidden)
                }
            }
            if let y {
                for t in lengths[b]..<steps { (y.dataPointer + outputOffset(t, d, b)).update(repeating: 0, count: hidden) }
            }
        }
        let programs = layer.programs[d]
        // A gate's packed R' block is read from a multiple of the column block on.
        let block = max(1, lk_sgemm_column_block(layer.packedISA))
        let chunk = ((hidden + unitChunks - 1) / unitChunks + block - 1) / block * block
        let chunks = (hidden + chunk - 1) / chunk
        let workspaces = (0..<chunks).map { _ in Workspace(programs) }
        let parts: [Part] = layer.cell == .gru && !layer.options.linearBeforeReset ? [.resetGates, .candidate] : [.whole]
        let longest = items.map { lengths[$0] }.max() ?? 0
        for s in 0..<longest {
            for part in parts {
                let state = memory
                if chunks > 1 {
                    forEachChunk(count: hidden, chunkSize: chunk, threadCount: chunks) { units in
                        self.step(s, part, d, items, units, state, workspaces[units.lowerBound / chunk])
                    }
                } else {
                    step(s, part, d, items, 0..<hidden, state, workspaces[0])
                }
            }
            swap(&memory.previous, &memory.next)
        }
        for (i, b) in items.enumerated() {
            let offset = stateOffset(d, b)
            for (output, state) in [(yh, memory.previous), (yc, memory.cell)] {
                guard let output else { continue }
                if lengths[b] == 0 {
                    (output.dataPointer + offset).update(repeating: 0, count: hidden)
                } else {
                    (output.dataPointer + offset).update(from: state + i * hidden, count: hidden)
                }
            }
        }
    }

    /// Part `part` of step `s` of direction `d` for batch items `items`, hidden units `units`.
    private func step(_ s: Int, _ part: Part, _ d: Int, _ items: Range<Int>, _ units: Range<Int>, _ memory: Rows,
                      _ workspace: Workspace) {
        let (j0, n, count) = (units.lowerBound, units.count, items.count)
        let gates: [Int] = switch (layer.cell, part) {
        case (.rnn, _): [0]
        case (.lstm, _): [0, 1, 2, 3]
        case (.gru, .whole): [0, 1, 2]
        case (.gru, .resetGates): [0, 1]
        case (.gru, .candidate): [2]
        }
        // The projected inputs of each item's time index.
        for (i, b) in items.enumerated() where s < lengths[b] {
            let source = projected.dataPointer + inputRow(time(b, step: s, direction: d), b) * directions * rows + d * rows
            for g in gates { (memory.gates + i * rows + g * hidden + j0).update(from: source + g * hidden + j0, count: n) }
        }
        // Plus the previous state times R' (for GRU's candidate gate: r ⊙ H, or kept apart with linear_before_reset).
        let isa = layer.packedISA
        for g in gates {
            let weights = layer.recurrentWeights.dataPointer + (d * layer.cell.gates + g) * layer.gatePanels + j0 * hidden
            var status: Int32
            if layer.cell == .gru && g == 2 && part == .whole, let bias = layer.candidateRecurrentBias {
                status = lk_sgemm_f32_packed_b(isa, count, n, hidden, 1, memory.previous, hidden, 1, weights,
                                               memory.candidate + j0, hidden, nil, bias.dataPointer + d * hidden + j0, 0)
            } else {
                let state = layer.cell == .gru && g == 2 ? memory.candidate : memory.previous
                status = lk_sgemm_f32_packed_b(isa, count, n, hidden, 1, state, hidden, 1, weights,
                                               memory.gates + g * hidden + j0, rows, nil, nil, 1)
            }
            if status != 0 { failed.withLock { $0 = true } }
        }
        let programs = layer.programs[d]
        /// Activation `k` of `count` values at `values`, in place.
        func activate(_ k: Int, _ values: UnsafeMutablePointer<Float>) {
            programs[k].run(segment: values, output: values, count: n, channel: 0, scratch: workspace.scratch[k], isa: isa)
        }
        for (i, b) in items.enumerated() {
            let (previous, next) = (memory.previous + i * hidden + j0, memory.next + i * hidden + j0)
            guard s < lengths[b] else {
                // Past its length an item keeps its state.
                if part != .resetGates { next.update(from: previous, count: n) }
                continue
            }
            let row = memory.gates + i * rows + j0
            switch (layer.cell, part) {
            case (.rnn, _):
                activate(0, row)
                next.update(from: row, count: n)
            case (.lstm, _):
                lstm(row, previous, next, memory.cell + i * hidden + j0, d, j0, n, activate)
            case (.gru, .resetGates):
                // z and r, then r ⊙ H for the candidate gate's product.
                activate(0, row)
                activate(0, row + hidden)
                for j in 0..<n { memory.candidate[i * hidden + j0 + j] = row[hidden + j] * previous[j] }
            case (.gru, .whole):
                activate(0, row)
                activate(0, row + hidden)
                // With linear_before_reset, r scales H R' + Rb.
                let recurrent = memory.candidate + i * hidden + j0
                for j in 0..<n { row[2 * hidden + j] += row[hidden + j] * recurrent[j] }
                gruUpdate(row, previous, next, n, activate)
            case (.gru, .candidate):
                gruUpdate(row, previous, next, n, activate)
            }
            if let y, part != .resetGates { (y.dataPointer + outputOffset(time(b, step: s, direction: d), d, b) + j0).update(from: next, count: n) }
        }
    }

    /// GRU's candidate h = g(...) and H = (1 - z) ⊙ h + z ⊙ H.
    private func gruUpdate(_ row: UnsafeMutablePointer<Float>, _ previous: UnsafeMutablePointer<Float>,
                           _ next: UnsafeMutablePointer<Float>, _ n: Int,
                           _ activate: (Int, UnsafeMutablePointer<Float>) -> Void) {
        let candidate = row + 2 * hidden
        activate(1, candidate)
        for j in 0..<n { next[j] = (1 - row[j]) * candidate[j] + row[j] * previous[j] }
    }

    /// One LSTM step of one item's units: the gates (i, o, f, c at `row`,
    /// `hidden` apart), the cell state updated in place at `cell`, and
    /// H = o ⊙ h(C) into `next`.
    private func lstm(_ row: UnsafeMutablePointer<Float>, _ previous: UnsafeMutablePointer<Float>,
                      _ next: UnsafeMutablePointer<Float>, _ cell: UnsafeMutablePointer<Float>, _ d: Int, _ j0: Int,
                      _ n: Int, _ activate: (Int, UnsafeMutablePointer<Float>) -> Void) {
        let (input, output, forget, candidate) = (row, row + hidden, row + 2 * hidden, row + 3 * hidden)
        let peepholes = layer.peepholes.map { $0.dataPointer + d * 3 * hidden + j0 }
        if let p = peepholes {
            for j in 0..<n {
                input[j] += p[j] * cell[j]
                forget[j] += p[2 * hidden + j] * cell[j]
            }
        }
        activate(0, input)
        if layer.options.inputForget {
            for j in 0..<n { forget[j] = 1 - input[j] }
        } else {
            activate(0, forget)
        }
        activate(1, candidate)
        for j in 0..<n { cell[j] = forget[j] * cell[j] + input[j] * candidate[j] }
        if let bound = layer.options.cellClip { for j in 0..<n { cell[j] = min(max(cell[j], -bound), bound) } }
        if let p = peepholes { for j in 0..<n { output[j] += p[hidden + j] * cell[j] } }
        activate(0, output)
        // h(C) where the candidate was: it is no longer needed.
        candidate.update(from: cell, count: n)
        activate(2, candidate)
        for j in 0..<n { next[j] = output[j] * candidate[j] }
    }
}

import CKernels

/// A formula compiled for the CPU: a straight-line list of vector
/// primitives (`lk_unary_f32`, `lk_binary_f32`, `lk_select_f32`) run over
/// blocks of elements that stay in L1, so no tree is interpreted per
/// element. Known shapes of formula run as one fused kernel instead.
struct CPUProgram: Sendable {
    /// Where an instruction reads an operand: the input, a register (one
    /// block of floats), or a scalar slot (read with stride 0).
    enum Operand: Sendable, Equatable {
        case input
        case register(Int)
        case slot(Int)
    }

    enum Instruction: Sendable {
        case unary(UnaryFunction, Operand)
        case binary(BinaryFunction, Operand, Operand)
        case select(Operand, Operand, Operand)
        /// Swish, `x * sigmoid(beta * x)`, of `source` by the fused C kernel; beta is a slot.
        case swish(beta: Int, source: Operand)
        /// An affine map and/or a clamp of `source` in one pass (lk_affine_clamp_f32).
        case affineClamp(AffineClamp, source: Operand)
        /// `where(compare(a, b), t, f)` with the comparison computed inline (lk_select_cmp_f32).
        case selectCompare(BinaryFunction, Operand, Operand, Operand, Operand)
    }

    /// `scale * E + offset` clamped to [lower, upper], parts given as slots
    /// (nil: absent). `upperFirst`: the formula is max(min(v, upper), lower),
    /// which gives `lower` where lower > upper; the primitive clamps to lower
    /// first, so the upper bound is then raised to the lower one.
    struct AffineClamp: Sendable, Equatable {
        var scale: Int?
        var offset: Int?
        var lower: Int?
        var upper: Int?
        var upperFirst = false
    }

    /// Elements per block: 4 KiB a register, so several stay in L1.
    static let blockSize = 1024

    /// Instruction `i` writes register `destinations[i]`; the last writes the output.
    private(set) var instructions: [Instruction] = []
    private(set) var destinations: [Int] = []
    private(set) var registerCount = 0
    /// The operand holding the result (a leaf when there are no instructions).
    private(set) var result: Operand = .input
    /// Slot values: constants and scalar parameters.
    private(set) var slotValues: [Float] = []
    /// Slots whose value changes with the channel: (slot, value per channel).
    private(set) var channelSlots: [(slot: Int, values: [Float])] = []

    /// Compiles the chain's stages in order, each reading the previous
    /// stage's result as its `x`.
    init(_ chain: FormulaChain) throws {
        var free: [Int] = []
        for stage in chain.stages {
            let stageInput = result
            var context = StageContext(stage: stage, input: stageInput)
            let stageResult = try compile(stage.formula, &context, free: &free)
            // The stage's input and its computed subformulas stayed while the stage read them; now they may go.
            for r in context.computed.values where .register(r) != stageResult { free.append(r) }
            if case .register(let r) = stageInput, stageResult != stageInput { free.append(r) }
            result = stageResult
        }
        // The last instruction writes the output: when the result is a leaf
        // (a last stage of `x` or a constant), copy it there with `+ -0`,
        // which returns every float unchanged.
        if !instructions.isEmpty, result != .register(destinations[destinations.count - 1]) {
            slotValues.append(-0.0)
            var released: [Int] = []
            if case .register(let r) = result { released.append(r) }
            result = emit(.binary(.add, result, .slot(slotValues.count - 1)), releasing: released, free: &free)
        }
    }

    /// What compiling one stage needs: its values, the operand its `x`
    /// reads, and the subformulas it reads more than once.
    private struct StageContext {
        let stage: FormulaChain.Stage
        let input: Operand
        /// Reads of each subformula that is not a leaf, a repeated one
        /// counted once per distinct reader (`CPUProgram.reads(of:)`).
        let reads: [Expr: Int]
        /// The registers of subformulas read more than once, computed.
        var computed: [Expr: Int] = [:]

        init(stage: FormulaChain.Stage, input: Operand) {
            self.stage = stage
            self.input = input
            reads = CPUProgram.reads(of: stage.formula)
        }

        /// The registers among an instruction's `operands` it may free:
        /// not the stage's input, nor a computed subformula's (both may be
        /// read again later in the stage).
        func released(_ operands: [Operand]) -> [Int] {
            let kept = Set(computed.values)
            return operands.compactMap { operand in
                guard case .register(let r) = operand, operand != input, !kept.contains(r) else { return nil }
                return r
            }
        }
    }

    /// How many distinct readers each subformula of `formula` that is not
    /// a leaf has. A derivative repeats subformulas (Swish's dx reads
    /// sigmoid(beta * x) three times); those read more than once are
    /// computed once, and their registers kept to the end of the stage.
    /// (Kept to the end, not to their last reader: a fused instruction reads
    /// a subformula's parts directly, so the count of later readers is not
    /// exact.)
    static func reads(of formula: Expr) -> [Expr: Int] {
        var reads: [Expr: Int] = [:]
        var seen: Set<Expr> = []
        func visit(_ e: Expr) {
            guard seen.insert(e).inserted else { return }
            let children: [Expr] = switch e {
            case .input, .constant, .value: []
            case .unary(_, let a): [a]
            case .binary(_, let a, let b): [a, b]
            case .select(let c, let a, let b): [c, a, b]
            }
            for child in children {
                switch child {
                case .input, .constant, .value: break
                case .unary, .binary, .select: reads[child, default: 0] += 1
                }
                visit(child)
            }
        }
        visit(formula)
        return reads
    }

    /// `e`'s operand, computed once when the stage reads it more than once.
    private mutating func compile(_ e: Expr, _ context: inout StageContext, free: inout [Int]) throws -> Operand {
        if let known = context.computed[e] { return .register(known) }
        let operand = try compileOnce(e, &context, free: &free)
        if case .register(let r) = operand, let reads = context.reads[e], reads > 1 { context.computed[e] = r }
        return operand
    }

    private mutating func compileOnce(_ e: Expr, _ context: inout StageContext, free: inout [Int]) throws -> Operand {
        let x = context.input
        switch e {
        case .input:
            return x
        case .constant, .value:
            return .slot(try slot(for: e, context.stage))
        case .binary(.mul, .input, .unary(.sigmoid, .binary(.mul, let beta, .input))) where beta.isLeafValue:
            let slot = try slot(for: beta, context.stage)
            return emit(.swish(beta: slot, source: x), releasing: context.released([]), free: &free)
        case _ where Self.affineClamp(e) != nil:
            let (core, parts) = Self.affineClamp(e)!
            var fused = AffineClamp(upperFirst: parts.upperFirst)
            fused.scale = try parts.scale.map { try slot(for: $0, context.stage) }
            fused.offset = try parts.offset.map { try slot(for: $0, context.stage) }
            fused.lower = try parts.lower.map { try slot(for: $0, context.stage) }
            fused.upper = try parts.upper.map { try slot(for: $0, context.stage) }
            let a = try compile(core, &context, free: &free)
            return emit(.affineClamp(fused, source: a), releasing: context.released([a]), free: &free)
        case .select(.binary(let f, let a, let b), let t, let u) where f.isComparison:
            let a = try compile(a, &context, free: &free)
            let b = try compile(b, &context, free: &free)
            let t = try compile(t, &context, free: &free)
            let u = try compile(u, &context, free: &free)
            return emit(.selectCompare(f, a, b, t, u), releasing: context.released([a, b, t, u]), free: &free)
        case .unary(let f, let a):
            let a = try compile(a, &context, free: &free)
            return emit(.unary(f, a), releasing: context.released([a]), free: &free)
        case .binary(let f, let a, let b):
            let a = try compile(a, &context, free: &free)
            let b = try compile(b, &context, free: &free)
            return emit(.binary(f, a, b), releasing: context.released([a, b]), free: &free)
        case .select(let c, let a, let b):
            let c = try compile(c, &context, free: &free)
            let a = try compile(a, &context, free: &free)
            let b = try compile(b, &context, free: &free)
            return emit(.select(c, a, b), releasing: context.released([c, a, b]), free: &free)
        }
    }

    /// The parts of `e` that one affine-clamp pass computes: a clamp with
    /// both bounds (`min(max(E, lo), hi)` or `max(min(E, hi), lo)`, each
    /// operand order), an affine map (`s * E + t`, each operand order), or a
    /// one-sided clamp of an affine map; bounds, scale and offset must be
    /// leaves (constants or values). Nil when there is nothing to fuse (a
    /// lone min, max, mul or add is one pass already), and for `E` a leaf.
    static func affineClamp(_ e: Expr) -> (core: Expr, parts: (scale: Expr?, offset: Expr?, lower: Expr?,
                                                               upper: Expr?, upperFirst: Bool))? {
        /// (other, leaf) when one operand is a leaf (the right one preferred).
        func split(_ p: Expr, _ q: Expr) -> (Expr, Expr)? {
            q.isLeafValue ? (p, q) : p.isLeafValue ? (q, p) : nil
        }
        var core = e
        var lower: Expr?, upper: Expr?, upperFirst = false
        if case .binary(let outer, let p, let q) = e, outer == .min || outer == .max, let (inner, bound) = split(p, q) {
            core = inner
            if outer == .min { upper = bound } else { lower = bound }
            if case .binary(let f, let r, let s) = inner, f == (outer == .min ? .max : .min),
               let (innermost, innerBound) = split(r, s) {
                core = innermost
                if outer == .min { lower = innerBound } else { upper = innerBound; upperFirst = true }
            }
        }
        var scale: Expr?, offset: Expr?
        if case .binary(.add, let p, let q) = core {
            for (m, t) in [(p, q), (q, p)] where t.isLeafValue && scale == nil {
                if case .binary(.mul, let u, let v) = m, let (inner, s) = split(u, v) {
                    (core, scale, offset) = (inner, s, t)
                }
            }
        }
        let bounds = (lower != nil ? 1 : 0) + (upper != nil ? 1 : 0)
        guard !core.isLeafValue, scale != nil ? bounds <= 2 : bounds == 2 else { return nil }
        return (core, (scale, offset, lower, upper, upperFirst))
    }

    /// The slot of a leaf: a constant, a scalar value, or a per-channel value.
    private mutating func slot(for leaf: Expr, _ stage: FormulaChain.Stage) throws -> Int {
        let value: Float
        switch leaf {
        case .constant(let c):
            value = c
        case .value(let name):
            if let values = stage.channelValues[name] {
                channelSlots.append((slotValues.count, values))
                value = values.first ?? 0
            } else if let scalar = stage.scalars[name] {
                value = scalar
            } else {
                throw LayerKitError.invalidParameter("\(stage.name) uses '\(name)', which has no value")
            }
        default:
            throw LayerKitError.invalidParameter("internal: \(leaf) is not a leaf")
        }
        slotValues.append(value)
        return slotValues.count - 1
    }

    /// Appends `instruction`, freeing the `released` registers it reads
    /// first (every primitive may write over its own operands) and taking
    /// one for its result.
    private mutating func emit(_ instruction: Instruction, releasing released: [Int], free: inout [Int]) -> Operand {
        for r in released where !free.contains(r) { free.append(r) }
        let destination: Int
        if let reused = free.popLast() {
            destination = reused
        } else {
            destination = registerCount
            registerCount += 1
        }
        instructions.append(instruction)
        destinations.append(destination)
        return .register(destination)
    }

    /// Runs the program over `count` elements of `input` into `output`
    /// (which may be `input`); `plane` consecutive elements share a channel,
    /// and there are `channels` channels per image.
    func run(input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, count: Int,
             plane: Int, channels: Int, threadCount: Int, isa: lk_isa) {
        let program = self
        let (source, destination) = (SendablePointer(raw: UnsafeMutableRawPointer(mutating: input)),
                                     SendablePointer(raw: UnsafeMutableRawPointer(output)))
        forEachChunk(count: count, threadCount: threadCount) { range in
            program.runChunk(range, input: source.raw.assumingMemoryBound(to: Float.self),
                             output: destination.raw.assumingMemoryBound(to: Float.self),
                             plane: max(plane, 1), channels: max(channels, 1), isa: isa)
        }
    }

    private func runChunk(_ range: Range<Int>, input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>,
                          plane: Int, channels: Int, isa: lk_isa) {
        // Cache-line aligned (blockSize floats are whole lines): see Tensor.init.
        let registers = UnsafeMutableRawPointer.allocate(byteCount: max(1, registerCount) * Self.blockSize * 4,
                                                         alignment: 64)
            .bindMemory(to: Float.self, capacity: max(1, registerCount) * Self.blockSize)
        let slots = UnsafeMutablePointer<Float>.allocate(capacity: max(1, slotValues.count))
        defer {
            registers.deallocate()
            slots.deallocate()
        }
        slots.initialize(from: slotValues, count: slotValues.count)
        var start = range.lowerBound
        while start < range.upperBound {
            var end = min(range.upperBound, start + Self.blockSize)
            if !channelSlots.isEmpty {
                // A block never crosses a plane when values differ per channel.
                end = min(end, (start / plane + 1) * plane)
                let channel = (start / plane) % channels
                for (slot, values) in channelSlots { slots[slot] = values[channel] }
            }
            runBlock(input + start, output + start, end - start, registers: registers, slots: slots, isa: isa)
            start = end
        }
    }

    /// The registers and slots a run of the program works in, made once per
    /// caller (a convolution chunk's epilogue) and reused for each segment.
    final class Scratch {
        let registers: UnsafeMutablePointer<Float>
        let slots: UnsafeMutablePointer<Float>

        init(_ program: CPUProgram) {
            registers = UnsafeMutableRawPointer.allocate(byteCount: max(1, program.registerCount) * CPUProgram.blockSize * 4,
                                                         alignment: 64)
                .bindMemory(to: Float.self, capacity: max(1, program.registerCount) * CPUProgram.blockSize)
            slots = UnsafeMutablePointer<Float>.allocate(capacity: max(1, program.slotValues.count))
            slots.initialize(from: program.slotValues, count: program.slotValues.count)
        }

        deinit {
            registers.deallocate()
            slots.deallocate()
        }
    }

    /// Runs the program over `count` consecutive elements of one channel
    /// (`channel` picks the per-channel values), in blocks, on the calling
    /// thread: a fused epilogue's pass over one output row segment.
    /// `output` may be `input`.
    func run(segment input: UnsafePointer<Float>, output: UnsafeMutablePointer<Float>, count: Int, channel: Int,
             scratch: Scratch, isa: lk_isa) {
        for (slot, values) in channelSlots { scratch.slots[slot] = values[channel] }
        var start = 0
        while start < count {
            let n = min(count - start, Self.blockSize)
            runBlock(input + start, output + start, n, registers: scratch.registers, slots: scratch.slots, isa: isa)
            start += n
        }
    }

    /// Whether some value of the program differs per channel.
    var hasChannelValues: Bool { !channelSlots.isEmpty }

    // The `_isa` primitives cannot fail here: an evaluator only holds ISAs
    // this CPU supports, and every op comes from the enums.
    private func runBlock(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ n: Int,
                          registers: UnsafeMutablePointer<Float>, slots: UnsafeMutablePointer<Float>, isa: lk_isa) {
        func source(_ operand: Operand) -> (UnsafePointer<Float>, Int32) {
            switch operand {
            case .input: (x, 1)
            case .register(let r): (UnsafePointer(registers + r * Self.blockSize), 1)
            case .slot(let s): (UnsafePointer(slots + s), 0)
            }
        }
        guard !instructions.isEmpty else {
            // The formula is a leaf: x itself or a constant.
            let (pointer, stride) = source(result)
            for i in 0..<n { y[i] = pointer[stride == 0 ? 0 : i] }
            return
        }
        for (index, instruction) in instructions.enumerated() {
            let destination = index == instructions.count - 1 ? y : registers + destinations[index] * Self.blockSize
            switch instruction {
            case .unary(let f, let a):
                let (pa, _) = source(a)
                if case .slot = a {
                    // A function of a constant: broadcast it first.
                    destination.update(repeating: pa.pointee, count: n)
                    _ = lk_unary_f32_isa(isa, f.primitive, destination, destination, n)
                } else {
                    _ = lk_unary_f32_isa(isa, f.primitive, pa, destination, n)
                }
            case .binary(let f, let a, let b):
                let ((pa, sa), (pb, sb)) = (source(a), source(b))
                _ = lk_binary_f32_isa(isa, f.primitive, pa, sa, pb, sb, destination, n)
            case .select(let c, let a, let b):
                let ((pc, sc), (pa, sa), (pb, sb)) = (source(c), source(a), source(b))
                if sc == 0 {
                    // A constant condition picks one side for the whole block.
                    let (pick, stride) = pc.pointee != 0 ? (pa, sa) : (pb, sb)
                    for i in 0..<n { destination[i] = pick[stride == 0 ? 0 : i] }
                } else {
                    _ = lk_select_f32_isa(isa, pc, pa, sa, pb, sb, destination, n)
                }
            case .swish(let beta, let x):
                _ = lk_swish_f32_isa(isa, source(x).0, destination, n, slots[beta])
            case .affineClamp(let f, let a):
                let lower = f.lower.map { slots[$0] } ?? -.infinity
                var upper = f.upper.map { slots[$0] } ?? .infinity
                if f.upperFirst, lower > upper { upper = lower }
                // The source is never a slot: affineClamp(_:) refuses a leaf.
                _ = lk_affine_clamp_f32_isa(isa, source(a).0, f.scale.map { slots[$0] } ?? 1, f.offset.map { slots[$0] } ?? -0.0,
                                            lower, upper, destination, n)
            case .selectCompare(let f, let a, let b, let t, let u):
                let ((pa, sa), (pb, sb), (pt, st), (pu, su)) = (source(a), source(b), source(t), source(u))
                _ = lk_select_cmp_f32_isa(isa, f.primitive, pa, sa, pb, sb, pt, st, pu, su, destination, n)
            }
        }
    }
}

extension UnaryFunction {
    /// The C primitive computing this function.
    var primitive: lk_unary_op {
        switch self {
        case .neg: LK_NEG
        case .abs: LK_ABS
        case .exp: LK_EXP
        case .log: LK_LOG
        case .log1p: LK_LOG1P
        case .expm1: LK_EXPM1
        case .sqrt: LK_SQRT
        case .reciprocal: LK_RECIPROCAL
        case .tanh: LK_TANH
        case .sigmoid: LK_SIGMOID
        case .softplus: LK_SOFTPLUS
        case .erf: LK_ERF
        case .sin: LK_SIN
        case .cos: LK_COS
        case .floor: LK_FLOOR
        case .ceil: LK_CEIL
        case .round: LK_ROUND
        case .isnan: LK_ISNAN
        case .isinf: LK_ISINF
        case .tan: LK_TAN
        case .asin: LK_ASIN
        case .acos: LK_ACOS
        case .atan: LK_ATAN
        case .sinh: LK_SINH
        case .cosh: LK_COSH
        case .asinh: LK_ASINH
        case .acosh: LK_ACOSH
        case .atanh: LK_ATANH
        }
    }
}

extension BinaryFunction {
    /// The C primitive computing this function.
    var primitive: lk_binary_op {
        switch self {
        case .add: LK_ADD
        case .sub: LK_SUB
        case .mul: LK_MUL
        case .div: LK_DIV
        case .pow: LK_POW
        case .min: LK_MIN
        case .max: LK_MAX
        case .greater: LK_GT
        case .greaterEqual: LK_GE
        case .less: LK_LT
        case .lessEqual: LK_LE
        case .equal: LK_EQ
        case .notEqual: LK_NE
        }
    }
}

extension BinaryFunction {
    /// Whether the function is a comparison (1 or 0).
    var isComparison: Bool {
        switch self {
        case .greater, .greaterEqual, .less, .lessEqual, .equal, .notEqual: true
        default: false
        }
    }
}

extension Expr {
    /// A constant or named value: what a fused kernel takes as a scalar.
    var isLeafValue: Bool {
        switch self {
        case .constant, .value: true
        default: false
        }
    }
}

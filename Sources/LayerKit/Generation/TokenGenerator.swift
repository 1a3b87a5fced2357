/// Greedy text generation with a KV cache, ids in and ids out: the prompt
/// runs once with an empty past (the prefill), then each chosen id runs
/// alone, each present output fed back as its past input, the attention
/// mask and positions grown by one, never a re-import.
///
/// The decode window: when the model takes a mask and positions, `generate`
/// runs its decode steps on pasts that grow 64 positions at a time, up to
/// the run's whole span (prompt + count - 2 positions): the cached tokens at
/// the end, the slots before them zeros that the mask hides (left padding,
/// as `transformers` pads a batch). Steps within 64 positions have the same
/// input shapes and run one plan; a cache that grows by one is a new shape,
/// so a new plan, each step (about 13 ms of a GPT-2-small decode step). A
/// step reads at most 63 masked slots (their keys and values are copied and
/// attended to, weighing exactly 0). A model without a mask or positions
/// input (positions then come from the past's length) grows its cache by
/// one, as `next(after:)` does.
///
/// The cache lives in float32 tensors of the generator's own, run to run:
/// a step's presents are the next step's outputs again while their shapes
/// hold (the decode window's steps), so a step allocates nothing for the
/// cache and copies it once, present into past. A float16, bfloat16 or
/// float8 cache is computed, and kept, in float32 (as `Model` computes those types).
///
/// With a GPU backend the cache does not stay on the device between steps:
/// `Model` takes and returns host tensors, so each step uploads every past
/// tensor and downloads every present one (2 x layers x [1, heads, past,
/// head size] values per token, each way).
public final class TokenGenerator {
    public let model: Model
    public let layout: KVCacheLayout
    /// The cache: each pair's present of the last step, by past input name.
    private var past: [String: Tensor] = [:]
    /// The last step's presents, by present name: the next step writes
    /// into them when its presents have their shapes.
    private var presents: [String: Tensor] = [:]
    /// How many tokens the cache holds.
    public private(set) var cachedTokens = 0
    /// Positions on each past's sequence axis: `cachedTokens`, or more in
    /// the decode window (the first `pastSlots - cachedTokens` masked out).
    private var pastSlots = 0
    /// The positions a window's past grows by.
    static let windowStep = 64

    /// A generator for `model`, whose inputs and outputs must make a
    /// `KVCacheLayout` with a cache of floats; it starts with an empty cache.
    public init(model: Model) throws {
        self.model = model
        layout = try KVCacheLayout(model)
        for pair in layout.pairs {
            let type = model.inputs.first { $0.name == pair.past }?.dataType ?? .float32
            guard !ModelGraph.holdsTyped(type) else {
                throw LayerKitError.invalidModel("the cache input '\(pair.past)' is \(type); a KV cache holds "
                                                 + "values computed in float32 (float32, float16, bfloat16, float8)")
            }
        }
        try reset()
    }

    /// Empties the cache: the next `next(after:)` is a prefill.
    public func reset() throws {
        past = try Dictionary(uniqueKeysWithValues: layout.pairs.map { ($0.past, try Tensor(shape: $0.emptyShape)) })
        presents = [:]
        (cachedTokens, pastSlots) = (0, 0)
    }

    /// Runs `ids` after the tokens the cache holds and keeps their keys and
    /// values; returns the greedy next id, the argmax of the last logits row
    /// (the first of equal maxima). An id outside the vocabulary is an error,
    /// and so is a run past the model's context (its message names the positions).
    public func next(after ids: [Int64]) throws -> Int64 {
        try next(after: ids, window: nil)
    }

    /// `next(after:)` in a decode window whose longest past is `window`
    /// positions (see above); nil grows the cache by `ids.count`.
    private func next(after ids: [Int64], window: Int?) throws -> Int64 {
        try layout.check(ids)
        let total = cachedTokens + ids.count
        var typed = [layout.inputIDs.name: try integers(ids, for: layout.inputIDs)]
        if let mask = layout.attentionMask {
            let hidden = pastSlots - cachedTokens
            typed[mask.name] = try integers(Array(repeating: 0, count: hidden) + Array(repeating: 1, count: total), for: mask)
        }
        if let positions = layout.positionIDs {
            typed[positions.name] = try integers((cachedTokens..<total).map(Int64.init), for: positions)
        }
        // Each present's shape: its past's, `ids.count` longer. Last step's presents take this
        // step's when they have it (a new shape gets new tensors, checked below).
        var expected: [String: [Int]] = [:]
        for pair in layout.pairs {
            guard var shape = past[pair.past]?.shape else { continue }
            shape[pair.sequenceAxis] += ids.count
            expected[pair.present] = shape
        }
        let reused = presents.filter { name, tensor in tensor.shape == expected[name] }
        let outputs: [String: Tensor]
        do {
            outputs = try model.predict(inputs: past, typed: typed, into: reused)
        } catch let error as LayerKitError {
            // A model's context ends somewhere (GPT-2's position table): say where the run was.
            throw error.prefixed("\(ids.count) token(s) after \(cachedTokens) in the cache (positions "
                                 + "\(cachedTokens)..<\(total)): ")
        }
        // The next past's length: in the window, the tokens rounded up to its step;
        // past the window (or without one), the present's.
        let step = Self.windowStep
        let slots = window.map { total <= $0 ? min($0, (total + step - 1) / step * step) : pastSlots + ids.count } ?? total
        var nextPast: [String: Tensor] = [:]
        var nextPresents: [String: Tensor] = [:]
        for pair in layout.pairs {
            guard let value = outputs[pair.present], let before = past[pair.past], let shape = expected[pair.present] else {
                throw LayerKitError.invalidModel("the model returned no '\(pair.present)'")
            }
            guard value.shape == shape else {
                throw LayerKitError.invalidModel(
                    "'\(pair.present)' has shape \(value.shape) after \(ids.count) token(s) on a past of \(before.shape); "
                    + "expected \(shape): it is not the cache of '\(pair.past)'")
            }
            var pastShape = shape
            pastShape[pair.sequenceAxis] = slots
            if pastShape == shape {
                nextPast[pair.past] = value   // the present is the next past as it is
                continue
            }
            // The input just read is free to take the next past when the shape holds.
            let target = before.shape == pastShape ? before : try Tensor(shape: pastShape)
            Self.rightAlign(value, axis: pair.sequenceAxis, into: target)
            nextPast[pair.past] = target
            nextPresents[pair.present] = value
        }
        guard let logits = outputs[layout.logits], let vocabulary = logits.shape.last, vocabulary > 0,
              logits.count % vocabulary == 0 else {
            throw LayerKitError.invalidModel("the model's '\(layout.logits)' output has no rows of logits")
        }
        (past, presents) = (nextPast, nextPresents)
        (cachedTokens, pastSlots) = (total, slots)
        return Int64(Self.argmax(logits, row: logits.count / vocabulary - 1, width: vocabulary))
    }

    /// Generates `count` ids greedily after `prompt` (the cache emptied
    /// first), calling `step` with each new id and whether it came from the prefill.
    public func generate(after prompt: [Int64], count: Int,
                         step: (_ id: Int64, _ isPrefill: Bool) throws -> Void = { _, _ in }) throws -> [Int64] {
        try reset()
        let window = layout.attentionMask != nil && layout.positionIDs != nil && count > 2 ? prompt.count + count - 2 : nil
        var ids: [Int64] = []
        var input = prompt
        for index in 0..<max(0, count) {
            let id = try next(after: input, window: window)
            ids.append(id)
            try step(id, index == 0)
            input = [id]
        }
        return ids
    }

    /// Where the cache's tensors (pasts and presents) keep their values.
    var cacheStorageForTests: Set<UnsafeMutablePointer<Float>> {
        Set((Array(past.values) + presents.values).map(\.dataPointer))
    }

    /// The index of the largest value in row `row` of `width` values, the
    /// first of equal maxima.
    static func argmax(_ values: Tensor, row: Int, width: Int) -> Int {
        let start = values.dataPointer + row * width
        var best = 0
        for j in 1..<width where start[j] > start[best] { best = j }
        return best
    }

    /// Writes `value`'s last positions on `axis` into `target` (of
    /// `value`'s shape but for `axis`), after zeros when `value` has
    /// fewer (the slots the mask hides).
    static func rightAlign(_ value: Tensor, axis: Int, into target: Tensor) {
        let (length, slots) = (value.shape[axis], target.shape[axis])
        let outer = value.shape[..<axis].reduce(1, *)
        let row = value.shape[(axis + 1)...].reduce(1, *)
        let (kept, skipped, padding) = (min(length, slots), max(0, length - slots), max(0, slots - length))
        for o in 0..<outer {
            let to = target.dataPointer + o * slots * row
            to.update(repeating: 0, count: padding * row)
            (to + padding * row).update(from: value.dataPointer + (o * length + skipped) * row, count: kept * row)
        }
    }

    /// `values` as a `[1, count]` tensor of `input`'s integer type.
    private func integers(_ values: [Int64], for input: Model.ValueDescription) throws -> TypedTensor {
        try TypedTensor(input.dataType ?? .int64, shape: [1, values.count], integers: values)
    }
}

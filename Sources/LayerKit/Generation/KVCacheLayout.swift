/// How a decoder exported with its key/value cache as inputs and outputs
/// (transformers' `past_key_values.N.key` in, `present.N.key` out, as
/// optimum and torch.onnx write GPT-2) is driven one token at a time: which
/// input takes the token ids, the mask and positions, which output holds
/// the logits, and which present output feeds which past input back.
public struct KVCacheLayout: Sendable {
    /// One cache tensor: the output a step writes and the input the next step reads it from.
    public struct Pair: Sendable, Equatable {
        /// The input (`past_key_values.0.key`).
        public let past: String
        /// The output (`present.0.key`).
        public let present: String
        /// The axis that grows by one per token (2 in `[batch, heads, past, head size]`).
        public let sequenceAxis: Int
        /// The input's shape with an empty past: 0 on `sequenceAxis`, a symbolic batch 1.
        public let emptyShape: [Int]
    }

    /// The token ids input (`input_ids`, `[1, S]`).
    public let inputIDs: Model.ValueDescription
    /// `attention_mask` (`[1, past + S]`, all ones), when the model takes one.
    public let attentionMask: Model.ValueDescription?
    /// `position_ids` (`[1, S]`, past..<past + S), when the model takes them.
    public let positionIDs: Model.ValueDescription?
    /// The logits output (`[1, S, vocabulary]`).
    public let logits: String
    /// Every cache tensor, in the model's input order.
    public let pairs: [Pair]
    /// The logits' last dimension when the file fixes it: ids must lie in `0..<vocabulary`.
    public let vocabulary: Int?

    /// Refuses an empty list of ids and an id outside `0..<vocabulary` (when the file fixes it).
    public func check(_ ids: [Int64]) throws {
        guard !ids.isEmpty else { throw LayerKitError.invalidParameter("no token ids to run") }
        if let vocabulary, let bad = ids.first(where: { $0 < 0 || $0 >= Int64(vocabulary) }) {
            throw LayerKitError.invalidParameter("token id \(bad) is outside the model's vocabulary 0..<\(vocabulary)")
        }
    }

    /// The past input names a present output `name` may be fed back into, most common first.
    static func pastNames(forPresent name: String) -> [String] {
        for prefix in ["present_key_values", "present"] where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            return ["past_key_values" + rest, "past" + rest]
        }
        return []
    }

    /// The layout of `model`; a model that lacks the inputs and outputs of a
    /// KV-cache decoder is an error naming what was expected and what it has.
    public init(_ model: Model) throws {
        let inputs = Dictionary(model.inputs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var pairs: [Pair] = []
        for output in model.outputs {
            guard let past = Self.pastNames(forPresent: output.name).compactMap({ inputs[$0] }).first else { continue }
            pairs.append(try Self.pair(past: past, present: output))
        }
        let names = "inputs: \(model.inputs.map(\.name).joined(separator: ", ")); "
            + "outputs: \(model.outputs.map(\.name).joined(separator: ", "))"
        guard !pairs.isEmpty else {
            throw LayerKitError.invalidModel(
                "the model has no KV cache: expected outputs named present.N.key and present.N.value (or "
                + "present_key_values.N...) fed back into inputs past_key_values.N.key and past_key_values.N.value "
                + "(or past.N...); \(names)")
        }
        let order = Dictionary(model.inputs.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.pairs = pairs.sorted { (order[$0.past] ?? 0) < (order[$1.past] ?? 0) }
        let cacheInputs = Set(pairs.map(\.past))
        var others = model.inputs.filter { !cacheInputs.contains($0.name) }
        func take(_ name: String) -> Model.ValueDescription? {
            guard let index = others.firstIndex(where: { $0.name == name }) else { return nil }
            return others.remove(at: index)
        }
        attentionMask = take("attention_mask")
        positionIDs = take("position_ids")
        if let ids = take("input_ids") ?? (others.count == 1 ? others.removeFirst() : nil) {
            inputIDs = ids
        } else {
            throw LayerKitError.invalidModel("the model has no token ids input: expected one named input_ids; \(names)")
        }
        if let extra = others.first {
            throw LayerKitError.invalidModel(
                "the model's input '\(extra.name)' is none of a KV-cache decoder's (input_ids, attention_mask, "
                + "position_ids, the past of each present output); \(names)")
        }
        for value in [inputIDs, attentionMask, positionIDs].compactMap({ $0 }) {
            guard let type = value.dataType, type.isInteger, type != .bool else {
                throw LayerKitError.invalidModel("the model's input '\(value.name)' is \(value.dataType.map { "\($0)" } ?? "untyped"); token ids, masks and positions are integers")
            }
        }
        let presents = Set(pairs.map(\.present))
        let rest = model.outputs.filter { !presents.contains($0.name) }
        guard let logits = rest.first(where: { $0.name == "logits" }) ?? (rest.count == 1 ? rest.first : nil) else {
            throw LayerKitError.invalidModel("the model has no logits output: expected one named logits; \(names)")
        }
        self.logits = logits.name
        vocabulary = logits.dimensions.last?.size
    }

    /// The pair of `past` and `present`: the growing axis is the one whose
    /// symbol differs between them (`past_sequence` and `total_sequence`),
    /// else the past's last symbolic axis.
    private static func pair(past: Model.ValueDescription, present: Model.ValueDescription) throws -> Pair {
        let dimensions = past.dimensions
        let symbolic = dimensions.indices.filter { dimensions[$0].size == nil }
        let differing = symbolic.filter { axis in
            axis >= present.dimensions.count || present.dimensions[axis] != dimensions[axis]
        }
        guard let axis = differing.count == 1 ? differing.first : symbolic.last else {
            throw LayerKitError.invalidModel("the cache input '\(past.name)' has the fixed shape \(past); "
                                             + "its past length must be a symbolic dimension")
        }
        let shape = dimensions.indices.map { $0 == axis ? 0 : dimensions[$0].size ?? 1 }
        return Pair(past: past.name, present: present.name, sequenceAxis: axis, emptyShape: shape)
    }
}

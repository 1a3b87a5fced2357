import LayerKitONNX

extension TypedKernels {
    /// ZipMap (ai.onnx.ml): each row of the [N, C] (or [C]) probabilities
    /// as a map from the C class labels (`classlabels_strings` or
    /// `classlabels_int64s`) to that row's values: the sequence of N maps
    /// scikit-learn's classifiers end in when skl2onnx exports them with
    /// its default options.
    static let zipMap: Kernel = { node, inputs in
        let scores = try input(0, inputs, node)
        guard scores.container == nil, scores.elementType == .float32, (1...2).contains(scores.shape.count) else {
            throw node.error("takes a float32 [N, C] or [C] tensor, got \(scores)")
        }
        let strings = try node.node.strings("classlabels_strings")
        let integers = try node.node.ints("classlabels_int64s")
        let keys: TypedTensor
        switch (strings, integers) {
        case (let labels?, nil): keys = try TypedTensor(shape: [labels.count], strings: labels)
        case (nil, let labels?): keys = try TypedTensor(.int64, shape: [labels.count], integers: labels.map(Int64.init))
        default: throw node.error("needs one of classlabels_strings and classlabels_int64s")
        }
        let columns = scores.shape.last ?? 0
        guard keys.count == columns else {
            throw node.error("has \(keys.count) class labels for \(columns) columns of probabilities")
        }
        let rows = scores.shape.count == 2 ? try (0..<scores.shape[0]).map { try scores.slice($0, of: 0) } : [scores]
        let maps = rows.map { TypedTensor(container: .map(keys: keys, values: $0), elementType: .float32) }
        return [TypedTensor(container: .sequence(maps), elementType: .float32)]
    }
}

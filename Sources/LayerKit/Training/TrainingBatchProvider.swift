/// Training examples, one at a time: Core ML's `MLBatchProvider` for
/// updates. Each example is a model input (without the batch axis) and its
/// target (a class index as a one-element tensor, or a tensor of the
/// prediction's shape without the batch axis); the trainer stacks them into
/// mini-batches in a seeded shuffled order.
public protocol TrainingBatchProvider {
    /// The number of examples.
    var count: Int { get }
    /// Example `index`, in `0..<count`.
    func features(at index: Int) throws -> (input: Tensor, target: Tensor)
}

/// Examples held in two tensors whose axis 0 counts them: `inputs`
/// `[N, ...]` and `targets` `[N, ...]` (class indices as `[N]`).
public struct ArrayBatchProvider: TrainingBatchProvider {
    public let inputs: Tensor
    public let targets: Tensor

    /// Throws unless both tensors have rank 1 or more and the same extent on axis 0.
    public init(inputs: Tensor, targets: Tensor) throws {
        guard let n = inputs.shape.first, n > 0 else {
            throw LayerKitError.shapeMismatch("training data of shape \(Tensor.describe(inputs.shape)) holds no examples")
        }
        guard targets.shape.first == n else {
            throw LayerKitError.shapeMismatch("\(n) examples (data \(Tensor.describe(inputs.shape))) but targets of shape "
                                              + "\(Tensor.describe(targets.shape)): axis 0 must count the same examples")
        }
        self.inputs = inputs
        self.targets = targets
    }

    public var count: Int { inputs.shape[0] }

    public func features(at index: Int) throws -> (input: Tensor, target: Tensor) {
        guard (0..<count).contains(index) else {
            throw LayerKitError.invalidParameter("example \(index) is outside 0..<\(count)")
        }
        return (try Self.item(index, of: inputs), try Self.item(index, of: targets))
    }

    /// Item `index` along axis 0, its own shape the rest of the axes (`[1]` for a rank-1 tensor).
    private static func item(_ index: Int, of tensor: Tensor) throws -> Tensor {
        let shape = tensor.shape.count == 1 ? [1] : Array(tensor.shape.dropFirst())
        let size = tensor.count / tensor.shape[0]
        let item = try Tensor(shape: shape)
        item.dataPointer.update(from: tensor.dataPointer + index * size, count: size)
        return item
    }
}

extension TrainingBatchProvider {
    /// Examples `indices` stacked along a new axis 0: `[B, ...]` inputs and
    /// targets (class indices `[B]`). Throws naming the example whose shape
    /// differs from the first one's.
    func batch(_ indices: ArraySlice<Int>) throws -> (input: Tensor, target: Tensor) {
        let examples = try indices.map { try features(at: $0) }
        guard !examples.isEmpty else { throw LayerKitError.invalidParameter("an empty mini-batch") }
        func stack(_ parts: [Tensor], _ what: String) throws -> Tensor {
            let itemShape = parts[0].shape
            let stacked = try Tensor(shape: [parts.count] + (itemShape == [1] && what == "target" ? [] : itemShape))
            for (k, part) in parts.enumerated() {
                guard part.shape == itemShape else {
                    throw LayerKitError.shapeMismatch("example \(indices[indices.startIndex + k]) has a \(what) of shape "
                        + "\(Tensor.describe(part.shape)); example \(indices[indices.startIndex]) has "
                        + Tensor.describe(itemShape))
                }
                (stacked.dataPointer + k * part.count).update(from: part.dataPointer, count: part.count)
            }
            return stacked
        }
        return (try stack(examples.map(\.input), "input"), try stack(examples.map(\.target), "target"))
    }
}

/// The order examples are visited in epoch `epoch`: a Fisher-Yates shuffle
/// of `0..<count` drawn from `SeededGenerator` seeded by the training seed
/// and the epoch, so a run resumed at any epoch sees the same order as an
/// uninterrupted one without storing generator state.
func shuffledOrder(count: Int, seed: UInt64, epoch: Int) -> [Int] {
    var order = Array(0..<count)
    var generator = SeededGenerator(seed: seed ^ (UInt64(epoch) &* 0x9E37_79B9_7F4A_7C15))
    order.shuffle(using: &generator)
    return order
}

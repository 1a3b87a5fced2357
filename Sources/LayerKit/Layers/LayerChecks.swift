import Foundation

/// Checks and helpers the standard op layers share.
enum LayerChecks {
    /// Threads the op layers' CPU kernels use: one per active processor.
    static let threadCount = ProcessInfo.processInfo.activeProcessorCount

    /// Throws unless there are exactly `count` input shapes.
    static func requireInputCount(_ shapes: [[Int]], _ count: Int, layer: String) throws {
        guard shapes.count == count else {
            throw LayerKitError.shapeMismatch("\(layer) takes \(count) input\(count == 1 ? "" : "s"), got \(shapes.count)")
        }
    }

    /// Throws unless `shape`'s rank is in `ranks`.
    static func requireRank(_ shape: [Int], in ranks: ClosedRange<Int>, layer: String) throws {
        guard ranks.contains(shape.count) else {
            let allowed = ranks.upperBound == .max ? "at least \(ranks.lowerBound)"
                : ranks.count == 1 ? "\(ranks.lowerBound)" : "\(ranks.lowerBound) to \(ranks.upperBound)"
            throw LayerKitError.shapeMismatch(
                "\(layer): input of rank \(shape.count) (\(Tensor.describe(shape))), expected rank \(allowed)")
        }
    }

    /// The product of `dims` (1 for none).
    static func product(_ dims: ArraySlice<Int>) -> Int { dims.reduce(1, *) }
}

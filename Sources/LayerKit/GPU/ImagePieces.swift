/// How an NCHW tensor too large for one slice image is cut into pieces that
/// each fit the device's image limits, for per-element work.
///
/// A piece is a box of whole batch items, channels, rows and columns. Along
/// array layers it takes as many whole batch items as fit `maxLayers`; when
/// even one item has more slices than that, it takes runs of whole slices
/// (`4 × maxLayers` channels, starting at a multiple of 4) of one item, so
/// channel `c` of the piece is channel `channels.lowerBound + c` of the
/// tensor and keeps its lane (`c % 4`). Rows and columns are cut into runs
/// of at most `maxDimension`.
struct ImagePieces: Equatable {
    /// One box of the tensor.
    struct Piece: Equatable {
        var batches: Range<Int>
        var channels: Range<Int>
        var rows: Range<Int>
        var columns: Range<Int>

        /// `[batch, channels, rows, columns]`.
        var shape: [Int] { [batches.count, channels.count, rows.count, columns.count] }
    }

    /// The pieces, in storage order of their first element.
    let pieces: [Piece]

    /// A device limit a slice image can exceed.
    enum Limit: Equatable {
        /// Batch × slices array layers over `maxImageArrayLayers`.
        case arrayLayers
        /// A width or height over `maxImageDimension2D`.
        case dimension2D
    }

    /// The limit a tensor of this NCHW shape exceeds, if any (array layers
    /// first); nil when it fits one slice image.
    static func limitExceeded(n: Int, c: Int, h: Int, w: Int, maxDimension: Int, maxLayers: Int) -> Limit? {
        let (layers, overflow) = n.multipliedReportingOverflow(by: (c + 3) / 4)
        if overflow || layers > maxLayers { return .arrayLayers }
        return h > maxDimension || w > maxDimension ? .dimension2D : nil
    }

    /// Whether a tensor of this NCHW shape fits one slice image.
    static func fits(n: Int, c: Int, h: Int, w: Int, maxDimension: Int, maxLayers: Int) -> Bool {
        limitExceeded(n: n, c: c, h: h, w: w, maxDimension: maxDimension, maxLayers: maxLayers) == nil
    }

    /// The texels of a slice image of NCHW `shape`: batch × slices × height ×
    /// width, saturating at `Int.max` (a count that large is past every bound).
    static func texels(ofImageShape shape: [Int]) -> Int {
        [shape[0], (shape[1] + 3) / 4, shape[2], shape[3]].reduce(1) { total, extent in
            let (product, overflow) = total.multipliedReportingOverflow(by: extent)
            return overflow ? Int.max : product
        }
    }

    /// Cuts `n × c × h × w` into pieces within the device's limits that also
    /// hold at most `maxTexels` texels each (rows and columns shortened only
    /// when one slice alone is larger), so work streamed piece by piece needs
    /// images and staging buffers of a bounded size.
    init(n: Int, c: Int, h: Int, w: Int, maxDimension: Int, maxLayers: Int, maxTexels: Int) {
        var dimension = maxDimension
        if h * w > maxTexels { dimension = min(dimension, max(1, Int(Double(maxTexels).squareRoot()))) }
        let sliceTexels = min(h, dimension) * min(w, dimension)
        self.init(n: n, c: c, h: h, w: w, maxDimension: dimension,
                  maxLayers: min(maxLayers, max(1, maxTexels / sliceTexels)))
    }

    /// Cuts `n × c × h × w` (all positive) under limits of at least 1.
    init(n: Int, c: Int, h: Int, w: Int, maxDimension: Int, maxLayers: Int) {
        let slices = (c + 3) / 4
        // (batches, channels) boxes along the array layers.
        var layerBoxes: [(Range<Int>, Range<Int>)] = []
        if slices <= maxLayers {
            let step = maxLayers / slices
            for first in stride(from: 0, to: n, by: step) {
                layerBoxes.append((first..<min(first + step, n), 0..<c))
            }
        } else {
            let step = 4 * maxLayers
            for item in 0..<n {
                for first in stride(from: 0, to: c, by: step) {
                    layerBoxes.append((item..<item + 1, first..<min(first + step, c)))
                }
            }
        }
        func runs(_ extent: Int) -> [Range<Int>] {
            stride(from: 0, to: extent, by: maxDimension).map { $0..<min($0 + maxDimension, extent) }
        }
        var pieces: [Piece] = []
        for (batches, channels) in layerBoxes {
            for rows in runs(h) {
                for columns in runs(w) {
                    pieces.append(Piece(batches: batches, channels: channels, rows: rows, columns: columns))
                }
            }
        }
        self.pieces = pieces
    }
}

extension Tensor {
    /// A new tensor holding `piece` of this NCHW tensor.
    func copy(_ piece: ImagePieces.Piece) throws -> Tensor {
        let result = try Tensor(shape: piece.shape)
        try transfer(piece, result, toPiece: true)
        return result
    }

    /// Writes `source`, shaped like `piece`, into `piece` of this tensor.
    func paste(_ source: Tensor, at piece: ImagePieces.Piece) throws {
        try transfer(piece, source, toPiece: false)
    }

    /// Copies row by row between `piece` of this tensor and `other`.
    private func transfer(_ piece: ImagePieces.Piece, _ other: Tensor, toPiece: Bool) throws {
        let s = try nchw()
        guard other.count == piece.shape.reduce(1, *) else {
            throw LayerKitError.shapeMismatch(
                "piece \(Tensor.describe(piece.shape)) vs tensor \(Tensor.describe(other.shape))")
        }
        let run = piece.columns.count
        var inPiece = 0
        for n in piece.batches {
            for c in piece.channels {
                for y in piece.rows {
                    let inWhole = ((n * s.c + c) * s.h + y) * s.w + piece.columns.lowerBound
                    if toPiece {
                        (other.dataPointer + inPiece).update(from: dataPointer + inWhole, count: run)
                    } else {
                        (dataPointer + inWhole).update(from: other.dataPointer + inPiece, count: run)
                    }
                    inPiece += run
                }
            }
        }
    }
}

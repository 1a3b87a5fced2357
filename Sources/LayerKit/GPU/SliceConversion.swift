import CKernels
import Foundation

/// Host-side conversion between Float32 NCHW tensors and the fp16 texels of
/// a slice image, tightly packed (layer by layer, row by row, four lanes a
/// texel): what uploads write into and downloads read from their staging
/// buffers. Rounds to nearest fp16, ties to even (F16C where the CPU has it,
/// exact portable C otherwise), on several threads for large tensors.
enum SliceConversion {
    /// Texels per work item: 64K texels is 1 MiB of Float32 read and 512 KiB
    /// of fp16 written.
    static let defaultChunkTexels = 65_536

    /// The number of texels of a slice image shaped like `tensor`.
    static func texelCount(_ tensor: Tensor) throws -> Int {
        ImagePieces.texels(ofImageShape: try Tensor.nchwShape(tensor.shape))
    }

    /// Writes `tensor` as the texels of a slice image of its shape at
    /// `texels` (`texelCount(tensor)` × 8 bytes). `portable` forces plain C.
    static func pack(_ tensor: Tensor, into texels: UnsafeMutableRawPointer, threadCount: Int,
                     portable: Bool = false, chunkTexels: Int = defaultChunkTexels) throws {
        let s = try tensor.nchw()
        let destination = SendablePointer(raw: texels)
        forEachChunk(count: try texelCount(tensor), chunkSize: chunkTexels, threadCount: threadCount) { range in
            lk_pack_slices_f16(tensor.dataPointer, destination.raw.assumingMemoryBound(to: UInt16.self),
                               s.c, s.h * s.w, range.lowerBound, range.count, portable ? 1 : 0)
        }
    }

    /// Fills `tensor` from the texels of a slice image of its shape at `texels`.
    static func unpack(_ texels: UnsafeRawPointer, into tensor: Tensor, threadCount: Int,
                       portable: Bool = false, chunkTexels: Int = defaultChunkTexels) throws {
        let s = try tensor.nchw()
        let source = SendablePointer(raw: UnsafeMutableRawPointer(mutating: texels))
        forEachChunk(count: try texelCount(tensor), chunkSize: chunkTexels, threadCount: threadCount) { range in
            lk_unpack_slices_f16(source.raw.assumingMemoryBound(to: UInt16.self), tensor.dataPointer,
                                 s.c, s.h * s.w, range.lowerBound, range.count, portable ? 1 : 0)
        }
    }
}

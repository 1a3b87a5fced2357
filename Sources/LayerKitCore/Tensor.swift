#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A Float32 host tensor in row-major (C) order, NCHW for images: the
/// `MLMultiArray` of LayerKit.
///
/// `Tensor` is a reference type, like `MLMultiArray`, so a layer's
/// `evaluate(inputs:outputs:)` writes into output tensors the caller owns.
/// The element storage is allocated once and freed with the tensor; a
/// tensor made by `init(viewing:shape:owner:)` (a model plan's host arena,
/// never handed to a caller) instead views memory its owner keeps alive.
public final class Tensor: @unchecked Sendable {
    /// The extent of each dimension, outermost first (N, C, H, W for images).
    public let shape: [Int]
    /// The number of elements, the product of `shape`.
    public let count: Int
    /// The first element; `count` Float32 values follow contiguously.
    public let dataPointer: UnsafeMutablePointer<Float>
    /// What keeps a view's memory alive (`init(viewing:shape:owner:)`);
    /// nil when the tensor allocated its storage and frees it.
    private let owner: AnyObject?

    /// Where tests count the tensor storage allocated while they run (a
    /// task-local: only allocations on the counting task are seen, so tests
    /// running in parallel do not disturb each other; a layer's worker
    /// threads are not counted).
    @TaskLocal package static var allocationCounter: TensorAllocationCounter?

    /// Makes a zero-filled tensor. Throws if a dimension is negative or the
    /// tensor would not fit in this machine's physical memory (an absurd
    /// shape must be an error, not an out-of-memory kill).
    public convenience init(shape: [Int]) throws {
        try self.init(shape: shape, zeroed: true)
    }

    /// Storage for `shape`, zero-filled when `zeroed` (else the caller
    /// writes every element before anyone reads one).
    private init(shape: [Int], zeroed: Bool) throws {
        let count = try Tensor.elementCount(of: shape)
        let memory = Tensor.physicalMemory
        guard UInt64(count) * 4 <= memory else {
            throw LayerKitError.shapeMismatch(
                // Parenthesized: Swift's >> binds tighter than *, so `count * 4 >> 20` was count * 0.
                "shape \(Tensor.describe(shape)) needs \((UInt64(count) * 4 + (1 << 20) - 1) >> 20) MiB, more than this machine's "
                + "\(memory >> 20) MiB of memory")
        }
        self.count = count
        self.shape = shape
        // Cache-line aligned: vector kernels load 64 bytes at a time, and a
        // load that straddles two lines costs twice (measured: a pass over
        // 1024 floats in L1 took 42 ns at 16-byte alignment, 24 ns at 64).
        // posix_memalign, not `UnsafeMutableRawPointer.allocate`: that one
        // traps when the system refuses the memory (`ulimit -v`, overcommit
        // off), and a refused allocation must be an error the caller sees.
        var raw: UnsafeMutableRawPointer?
        guard posix_memalign(&raw, 64, max(count, 1) * 4) == 0, let raw else {
            throw LayerKitError.shapeMismatch(
                "cannot allocate \((UInt64(count) * 4) >> 20) MiB for a tensor of shape \(Tensor.describe(shape)): "
                + "the system refused the memory")
        }
        dataPointer = raw.bindMemory(to: Float.self, capacity: max(count, 1))
        if zeroed { dataPointer.initialize(repeating: 0, count: max(count, 1)) }
        owner = nil
        Tensor.allocationCounter?.record(bytes: count * 4)
    }

    /// A tensor of `shape` over `pointer`'s `count` floats, which `owner`
    /// keeps alive and which this tensor neither copies nor frees: a model
    /// plan's host arena hands its steps such views, made once at prepare.
    /// Nothing is zeroed; the memory is shared with whatever else the owner
    /// puts there, so a view must never reach a caller.
    package init(viewing pointer: UnsafeMutablePointer<Float>, shape: [Int], owner: AnyObject) throws {
        count = try Tensor.elementCount(of: shape)
        self.shape = shape
        dataPointer = pointer
        self.owner = owner
    }

    /// Makes a tensor holding `values`, which must have `shape`'s element count.
    public convenience init(shape: [Int], values: [Float]) throws {
        let count = try Tensor.elementCount(of: shape)
        guard values.count == count else {
            throw LayerKitError.shapeMismatch(
                "\(values.count) values do not fill shape \(Tensor.describe(shape)) (\(count) elements)")
        }
        try self.init(shape: shape) { elements in
            values.withUnsafeBufferPointer { source in
                // An empty array may have no storage at all.
                if let base = source.baseAddress { elements.baseAddress!.initialize(from: base, count: count) }
            }
        }
    }

    /// A tensor whose elements `initialize` writes, every one of them: not
    /// zero-filled first (a 0.5 GB model's weights were a memset besides their copy).
    package convenience init(shape: [Int], initializingWith initialize: (UnsafeMutableBufferPointer<Float>) throws -> Void) throws {
        try self.init(shape: shape, zeroed: false)
        try initialize(elements)
    }

    deinit { if owner == nil { free(dataPointer) } }

    /// This machine's memory, read once (Foundation reads it from the system
    /// on every call, 0.4 µs, which a model's small tensors would pay each).
    private static let physicalMemory = ProcessInfo.processInfo.physicalMemory

    /// Element `i` in storage order; `i` must be in `0..<count`.
    ///
    /// Checked with `assert`: a debug build of LayerKitCore traps on an index
    /// outside the tensor, naming it; an optimized build does not check, so
    /// hot loops pay nothing (use `elements` for them anyway).
    public subscript(i: Int) -> Float {
        get { assertInBounds(i); return dataPointer[i] }
        set { assertInBounds(i); dataPointer[i] = newValue }
    }

    /// Traps in a debug build when `i` is outside `0..<count`; nothing in an
    /// optimized one.
    @inline(__always)
    private func assertInBounds(_ i: Int) {
        assert(i >= 0 && i < count, "Tensor index \(i) out of range 0..<\(count)")
    }

    /// The elements as a buffer, for fast loops.
    public var elements: UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: dataPointer, count: count)
    }

    /// A copy of the elements as an array.
    public var values: [Float] { Array(elements) }

    /// A copy of the elements under another shape of the same element count.
    public func reshaped(to newShape: [Int]) throws -> Tensor {
        guard try Tensor.elementCount(of: newShape) == count else {
            throw LayerKitError.shapeMismatch(
                "cannot reshape \(Tensor.describe(shape)) (\(count) elements) to \(Tensor.describe(newShape))")
        }
        return try Tensor(shape: newShape) { $0.baseAddress!.initialize(from: dataPointer, count: count) }
    }

    /// The shape read as N, C, H, W by ``nchwShape(_:)``: the one rule
    /// every path (uploads, downloads, slice images, the CPU's per-channel
    /// code, single layers and models) uses.
    public func nchw() throws -> (n: Int, c: Int, h: Int, w: Int) {
        let s = try Tensor.nchwShape(shape)
        return (s[0], s[1], s[2], s[3])
    }

    /// ONNX's rule for a tensor of rank 1 to 4 as an NCHW image: axis 1 is the
    /// channel axis and missing trailing dimensions are 1, so the row-major
    /// order is unchanged (a [N, C] tensor is N items of C channels at 1x1,
    /// a [N, C, L] tensor N items of C channels over L x 1). Higher ranks throw.
    public static func nchwShape(_ shape: [Int]) throws -> [Int] {
        guard (1...4).contains(shape.count) else {
            throw LayerKitError.shapeMismatch(
                "expected a tensor of rank 1 to 4 (read as NCHW), got shape \(describe(shape))")
        }
        return shape + Array(repeating: 1, count: 4 - shape.count)
    }

    /// `1x6x256x256`-style text for a shape.
    public static func describe(_ shape: [Int]) -> String {
        shape.map(String.init).joined(separator: "x")
    }

    /// The element count of `shape`; throws for negative extents or a count
    /// too large to allocate. The non-zero extents must multiply within the
    /// limit too, so that any product of some of a valid shape's extents
    /// (a plane, a broadcast group) cannot overflow, even when one extent
    /// is 0 ([0, 2^40, 2^40] holds no element but is refused).
    public static func elementCount(of shape: [Int]) throws -> Int {
        var total = 1, nonZero = 1
        for extent in shape {
            guard extent >= 0 else {
                throw LayerKitError.shapeMismatch("negative dimension in shape \(describe(shape))")
            }
            let (product, overflow) = nonZero.multipliedReportingOverflow(by: max(extent, 1))
            guard !overflow, product <= Int.max / 8 else {
                throw LayerKitError.shapeMismatch("shape \(describe(shape)) has too many elements")
            }
            nonZero = product
            total *= extent
        }
        return total
    }
}

/// Counts tensor storage allocations (`Tensor.allocationCounter`): tests
/// of the host arena check that repeated runs allocate none.
package final class TensorAllocationCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var counted = (allocations: 0, bytes: 0)
    package init() {}

    /// The allocations and their bytes so far.
    package var allocations: Int { lock.lock(); defer { lock.unlock() }; return counted.allocations }
    package var bytes: Int { lock.lock(); defer { lock.unlock() }; return counted.bytes }

    package func record(bytes: Int) {
        lock.lock()
        counted.allocations += 1
        counted.bytes += bytes
        lock.unlock()
    }
}

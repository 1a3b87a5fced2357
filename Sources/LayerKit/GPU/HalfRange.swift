import CKernels
import Foundation

/// What fp16 storage (a slice image's rgba16f texels) would do to a tensor
/// whose values it cannot keep faithfully; made only for such a tensor.
///
/// The GPU computes in fp32 but stores every value that crosses an image in
/// fp16, which keeps about three decimal digits between 6.1e-5 and 65504.
/// Three losses are serious enough to say so (the rule of
/// Docs/ARCHITECTURE.md, "fp16 storage has a range"), checked in this order:
///
/// - `overflow`: a finite element beyond ±65504 becomes an infinity.
/// - `underflow`: every nonzero element is below 6.1e-5 (fp16's smallest
///   normal number) and fp16 changes some of them: the whole tensor keeps
///   at most ten bits, and what is below 6e-8 becomes 0. Judged on the
///   whole tensor, not per element: a few tiny elements beside values near
///   1 lose nothing that matters. Elements fp16 holds exactly (a tensor
///   already rounded to fp16) lose nothing at all.
/// - `lostIntegerBits`: an element beyond ±2048 that fp16 changes: there
///   fp16 keeps no fraction and, above 4096, not even every integer, so
///   10000..10003 all become 10000 (and a softmax of them uniform).
///
/// Anything else (rounding to three digits) is what fp16 storage always
/// does, and the parity tolerance allows for it.
public struct HalfRange: Sendable, Equatable, CustomStringConvertible {
    public enum Loss: Sendable, Equatable {
        case overflow, underflow, lostIntegerBits
    }

    /// fp16's largest finite value (the bound `lk_half_scan_f32` counts overflows by).
    public static let largest: Float = LK_HALF_LARGEST
    /// fp16's smallest normal value, 2^-14: below it precision drains away.
    public static let smallestNormal: Float = 0x1p-14
    /// fp16 keeps every integer up to this magnitude exactly, and no fraction beyond it.
    public static let largestExactInteger: Float = LK_HALF_LARGEST_EXACT_INTEGER

    public let loss: Loss
    /// The elements that suffer the loss.
    public let elements: Int
    /// Elements in the tensor.
    public let count: Int
    /// The tensor's smallest and largest finite element.
    public let lowest: Float
    public let highest: Float

    /// Checks every element of `tensor`: nil when fp16 storage keeps it
    /// faithfully, else the first loss it suffers. One pass, no allocation
    /// (`lk_half_scan_f32`: every constant of a plan goes through it).
    public init?(checking tensor: Tensor) {
        var scan = lk_half_scan()
        lk_half_scan_f32(tensor.dataPointer, tensor.count, &scan)
        let (overflows, changed) = (Int(scan.overflows), Int(scan.changed))
        let changedBeyondIntegers = Int(scan.changed_beyond_integers)
        let largestMagnitude = Float(bitPattern: scan.largest_magnitude)
        let found: (Loss, Int)? = if overflows > 0 {
            (.overflow, overflows)
        } else if changed > 0, largestMagnitude < HalfRange.smallestNormal {
            (.underflow, changed)
        } else if changedBeyondIntegers > 0 {
            (.lostIntegerBits, changedBeyondIntegers)
        } else {
            nil
        }
        guard let (loss, elements) = found else { return nil }
        self.loss = loss
        self.elements = elements
        self.count = tensor.count
        // A loss means a finite element, so both keys name one.
        self.lowest = lk_half_scan_float(scan.lowest)
        self.highest = lk_half_scan_float(scan.highest)
    }

    /// What fp16 storage does to the tensor, naming the elements and the
    /// range: `3 of 4 elements beyond ±2048, where fp16 keeps no fraction:
    /// they would change and may no longer differ (values 10000..10003)`.
    public var description: String {
        let which = "\(elements) of \(count) element\(count == 1 ? "" : "s")"
        let values = "(values \(HalfRange.text(lowest))..\(HalfRange.text(highest)))"
        return switch loss {
        case .overflow: "\(which) beyond ±65504, fp16's largest value: they would become infinite \(values)"
        case .underflow: "\(which) changed by fp16, all below 6.1e-5, fp16's smallest normal value: "
            + "fp16 keeps them to 6e-8 at best and makes smaller ones 0 \(values)"
        case .lostIntegerBits: "\(which) beyond ±2048, where fp16 keeps no fraction: they would change "
            + "and may no longer differ \(values)"
        }
    }

    /// `10000`, `1e-09`, `-3.5`: six significant digits, no trailing zeros.
    static func text(_ value: Float) -> String { String(format: "%g", Double(value)) }
}

extension HalfRange {
    /// A value of a model that fp16 storage cannot keep, by name.
    public struct Finding: Sendable, Equatable, CustomStringConvertible {
        public enum Origin: String, Sendable {
            case input, constant
            /// A value a step computes (parity checks its CPU reference).
            case computed = "value"
        }

        public let value: String
        public let origin: Origin
        public let range: HalfRange

        /// `input 'x': 4 of 4 elements beyond ±2048, ...`.
        public var description: String { "\(origin.rawValue) '\(value)': \(range)" }
    }
}

import CLayerKitAPI
import Foundation
import LayerKit

/// One `lk_register_layer` call: the caller's callbacks and user data.
/// The registry's entry and every layer made from it hold it, so `destroy`
/// runs once, when the last of them (and so the registration) is gone.
final class CallbackRegistration: @unchecked Sendable {
    let name: String
    let evaluate: lk_evaluate_fn
    let shape: lk_shape_fn?
    let userData: UnsafeMutableRawPointer?
    let destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    init(name: String, evaluate: lk_evaluate_fn, shape: lk_shape_fn?, userData: UnsafeMutableRawPointer?,
         destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        self.name = name
        self.evaluate = evaluate
        self.shape = shape
        self.userData = userData
        self.destroy = destroy
    }

    deinit { destroy?(userData) }

    /// A callback's non-zero return as the API's error.
    func failure(_ callback: String, returned code: Int32) -> CAPIError {
        CAPIError(status: lk_status(LK_ERROR_CALLBACK),
                  description: "custom layer '\(name)': its \(callback) callback returned \(code)")
    }
}

/// A custom layer evaluated on the CPU by C callbacks (`lk_register_layer`):
/// Core ML's `evaluate` as a function pointer with user data. It has no GPU
/// path, so a GPU backend runs it on the CPU between GPU layers.
final class CallbackLayer: CustomLayer {
    static let name = "CallbackLayer"
    let registration: CallbackRegistration

    var layerName: String { registration.name }

    init(registration: CallbackRegistration) { self.registration = registration }

    /// Never used: callback layers are made by their registration's entry,
    /// which holds the callbacks (a class name alone has none).
    init(parameters: [String: Any]) throws {
        throw LayerKitError.invalidParameter("a C callback layer is made by its registration (lk_register_layer)")
    }

    func setWeightData(_ weights: [Data]) throws {
        guard weights.isEmpty else {
            throw LayerKitError.invalidWeights("custom layer '\(layerName)' takes no weights, got \(weights.count)")
        }
    }

    /// The shape callback's shape, or the first input's without one.
    func outputShapes(forInputShapes shapes: [[Int]]) throws -> [[Int]] {
        guard let shape = registration.shape else {
            guard let first = shapes.first else {
                throw LayerKitError.shapeMismatch("custom layer '\(layerName)' takes at least one input "
                                                  + "(without a shape callback its output has the first input's shape)")
            }
            return [first]
        }
        var dims = [Int64](repeating: 0, count: Int(LK_MAX_RANK))
        var rank = 0
        let code = withCShapes(shapes) { pointers, ranks in
            dims.withUnsafeMutableBufferPointer { dims in
                shape(registration.userData, shapes.count, pointers, ranks, dims.baseAddress, &rank)
            }
        }
        guard code == 0 else { throw registration.failure("shape", returned: code) }
        guard (1...Int(LK_MAX_RANK)).contains(rank) else {
            throw CAPIError(status: lk_status(LK_ERROR_CALLBACK),
                            description: "custom layer '\(layerName)': its shape callback gave rank \(rank) "
                                + "(1 to \(LK_MAX_RANK))")
        }
        let output = dims[..<rank].map(Int.init)
        guard output.allSatisfy({ $0 >= 1 }), (try? Tensor.elementCount(of: output)) != nil else {
            throw CAPIError(status: lk_status(LK_ERROR_CALLBACK),
                            description: "custom layer '\(layerName)': its shape callback gave the shape "
                                + "\(Tensor.describe(output)) (every dim at least 1)")
        }
        return [output]
    }

    func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        guard let output = outputs.first else { return }
        let data = inputs.map { UnsafePointer<Float>?(UnsafePointer($0.dataPointer)) }
        let outputShape = output.shape.map(Int64.init)
        let code = withCShapes(inputs.map(\.shape)) { shapes, ranks in
            data.withUnsafeBufferPointer { data in
                outputShape.withUnsafeBufferPointer { outputShape in
                    registration.evaluate(registration.userData, inputs.count, data.baseAddress, shapes, ranks,
                                          output.dataPointer, outputShape.baseAddress, outputShape.count)
                }
            }
        }
        guard code == 0 else { throw registration.failure("evaluate", returned: code) }
    }
}

/// Runs `body` with `shapes` as the callbacks take them: an array of
/// pointers to each shape's dims (int64) and an array of ranks, valid for
/// the call only.
private func withCShapes<R>(_ shapes: [[Int]],
                            _ body: (UnsafePointer<UnsafePointer<Int64>?>?, UnsafePointer<Int>?) -> R) -> R {
    let dims = shapes.flatMap { $0.map(Int64.init) }
    let ranks = shapes.map(\.count)
    return dims.withUnsafeBufferPointer { dims in
        var offset = 0
        let pointers = ranks.map { rank -> UnsafePointer<Int64>? in
            defer { offset += rank }
            return dims.baseAddress.map { $0 + offset }
        }
        return pointers.withUnsafeBufferPointer { pointers in
            ranks.withUnsafeBufferPointer { ranks in body(pointers.baseAddress, ranks.baseAddress) }
        }
    }
}

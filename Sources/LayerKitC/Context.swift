import CLayerKitAPI
import Foundation
import LayerKit

/// What an `lk_context` holds: the backend every call on it runs on, the
/// registry of the custom layers registered on it (the built-in ones plus
/// its own: contexts never see each other's), where its notices go, and
/// each thread's last error.
final class Context: @unchecked Sendable {
    let backend: Backend
    let registry = LayerRegistry()
    /// The destination of the backend's notices (`lk_context_set_notice`).
    let notices: NoticeSink
    private let lock = NSLock()
    /// The weight names of the formulas registered on this context, in the
    /// order their callers gave (`lk_layer_set_weights` takes that order;
    /// the registry keeps the formula's own), by lowercased name.
    private var formulaWeightOrders: [String: [String]] = [:]
    /// Each thread's last message, as a C string it may hold until its next
    /// call on this context (freed then, or with the context).
    private var errors: [pthread_t: UnsafeMutablePointer<CChar>] = [:]
    nonisolated(unsafe) private static let empty = StaticStrings.permanent("")

    init(backend: Backend, notices: NoticeSink) {
        self.backend = backend
        self.notices = notices
    }

    deinit { errors.values.forEach { $0.deallocate() } }

    /// Runs one API call for the calling thread: clears its last error, runs
    /// `body`, and turns a thrown error into its status and message.
    func call(_ body: () throws -> Void) -> lk_status {
        setError(nil)
        do {
            try body()
            return lk_status(LK_OK)
        } catch {
            setError("\(error)")
            return statusCode(of: error)
        }
    }

    /// The order `lk_layer_set_weights` takes the weights of the layer
    /// registered as `name`: its caller's for a formula registered here.
    func weightOrder(of name: String, registered entry: LayerRegistry.Entry) -> [String] {
        lock.lock(); defer { lock.unlock() }
        return formulaWeightOrders[name.lowercased()] ?? entry.weightNames
    }

    /// Records (or, with nil, forgets) the caller's weight order of a
    /// registration named `name`.
    func setWeightOrder(_ order: [String]?, of name: String) {
        lock.lock(); defer { lock.unlock() }
        formulaWeightOrders[name.lowercased()] = order
    }

    /// The calling thread's last message, or "".
    var lastError: UnsafePointer<CChar> {
        lock.lock(); defer { lock.unlock() }
        return errors[pthread_self()].map { UnsafePointer($0) } ?? Context.empty
    }

    private func setError(_ message: String?) {
        let copy = message.map { UnsafeMutablePointer(mutating: StaticStrings.permanent($0)) }
        lock.lock()
        let old = errors[pthread_self()]
        errors[pthread_self()] = copy
        lock.unlock()
        old?.deallocate()
    }
}

/// Runs `body` with the context behind `pointer` as one API call (see
/// `Context.call`); a NULL or foreign context is LK_ERROR_INVALID_ARGUMENT,
/// with no context to hold a message.
func withContext(_ pointer: OpaquePointer?, _ body: (Context) throws -> Void) -> lk_status {
    guard let context = try? Handle.object(pointer, as: Context.self, "the context") else {
        return lk_status(LK_ERROR_INVALID_ARGUMENT)
    }
    return context.call { try body(context) }
}

@c @implementation
public func lk_context_create(_ computeUnits: Int32, _ threads: Int32, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                              _ error: UnsafeMutablePointer<CChar>?, _ errorCapacity: Int) -> lk_status {
    out?.pointee = nil
    do {
        guard out != nil else { throw CAPIError.invalidArgument("the output pointer is NULL") }
        let units: ComputeUnits
        switch computeUnits {
        case Int32(LK_COMPUTE_AUTOMATIC): units = .automatic
        case Int32(LK_COMPUTE_CPU): units = .cpuOnly
        case Int32(LK_COMPUTE_GPU): units = .gpu
        default:
            throw CAPIError.invalidArgument("compute units must be LK_COMPUTE_AUTOMATIC, LK_COMPUTE_CPU or "
                + "LK_COMPUTE_GPU (0, 1, 2), got \(computeUnits)")
        }
        guard threads >= 0 else { throw CAPIError.invalidArgument("threads must be 0 (all cores) or more, got \(threads)") }
        let notices = NoticeSink()
        let backend = try Backend(computeUnits: units, threads: threads == 0 ? nil : Int(threads),
                                  notice: notices.send)
        try Handle.store(Context(backend: backend, notices: notices), in: out)
        return lk_status(LK_OK)
    } catch let failure {
        if let error, errorCapacity > 0 { try? writeString("\(failure)", to: error, capacity: errorCapacity, length: nil) }
        return statusCode(of: failure)
    }
}

@c @implementation
public func lk_context_destroy(_ context: OpaquePointer?) { Handle.release(context) }

@c @implementation
public func lk_context_last_error(_ context: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let context = try? Handle.object(context, as: Context.self, "the context") else {
        return StaticStrings.status(lk_status(LK_ERROR_INVALID_ARGUMENT))
    }
    return context.lastError
}

@c @implementation
public func lk_context_uses_gpu(_ context: OpaquePointer?, _ usesGPU: UnsafeMutablePointer<Int32>?) -> lk_status {
    withContext(context) { context in
        guard let usesGPU else { throw CAPIError.invalidArgument("uses_gpu is NULL") }
        usesGPU.pointee = context.backend.gpu == nil ? 0 : 1
    }
}

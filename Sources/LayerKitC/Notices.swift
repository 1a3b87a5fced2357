import CLayerKitAPI
import Foundation
import LayerKit

/// Where a context's notices go (a layer placed on the CPU although a GPU
/// was allowed, a DOUBLE input computed in float32): standard error, as
/// `Backend.standardErrorNotice` writes them, until `lk_context_set_notice`
/// names a callback, or NULL to drop them. The backend holds `send`, so
/// the destination can change after the backend is made.
final class NoticeSink: @unchecked Sendable {
    private let lock = NSLock()
    private var callback: lk_notice_fn? = nil
    private var userData: UnsafeMutableRawPointer? = nil
    private var silenced = false

    /// Sends one notice to the current destination.
    func send(_ message: String) {
        lock.lock()
        let (callback, userData, silenced) = (self.callback, self.userData, self.silenced)
        lock.unlock()
        if let callback {
            message.withCString { callback(userData, $0) }
        } else if !silenced {
            Backend.standardErrorNotice(message)
        }
    }

    /// Sends later notices to `callback` with `userData`, or drops them when it is nil.
    func set(_ callback: lk_notice_fn?, _ userData: UnsafeMutableRawPointer?) {
        lock.lock(); defer { lock.unlock() }
        self.callback = callback
        self.userData = userData
        silenced = callback == nil
    }
}

@c @implementation
public func lk_context_set_notice(_ context: OpaquePointer?, _ notice: lk_notice_fn?,
                                  _ userData: UnsafeMutableRawPointer?) -> lk_status {
    withContext(context) { context in context.notices.set(notice, userData) }
}

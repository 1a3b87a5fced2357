import CLayerKitAPI

/// Handles are retained Swift objects behind the header's opaque pointers.
/// Each use casts back through `AnyObject`, so a handle of the wrong kind
/// (a tensor where a layer is expected) is an error, not a misread object.
enum Handle {
    /// A new handle owning one retain of `object`.
    static func make(_ object: AnyObject) -> OpaquePointer {
        OpaquePointer(Unmanaged<AnyObject>.passRetained(object).toOpaque())
    }

    /// The object behind `pointer`, or an error naming `what` when it is
    /// NULL or of another kind.
    static func object<T: AnyObject>(_ pointer: OpaquePointer?, as type: T.Type, _ what: String) throws -> T {
        guard let pointer else { throw CAPIError.invalidArgument("\(what) is NULL") }
        guard let object = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue() as? T
        else { throw CAPIError.invalidArgument("\(what) is not a handle of the right kind") }
        return object
    }

    /// Gives up the handle's retain (the `*_destroy` functions); NULL is a no-op.
    static func release(_ pointer: OpaquePointer?) {
        guard let pointer else { return }
        Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(pointer)).release()
    }

    /// Stores a new handle of `object` in a caller's `out` parameter.
    static func store(_ object: AnyObject, in out: UnsafeMutablePointer<OpaquePointer?>?) throws {
        guard let out else { throw CAPIError.invalidArgument("the output pointer is NULL") }
        out.pointee = make(object)
    }
}

import CLayerKitAPI
import LayerKit

@c @implementation
public func lk_api_version() -> Int32 { Int32(LK_API_VERSION) }

@c @implementation
public func lk_version_string() -> UnsafePointer<CChar>? { StaticStrings.version }

import CLayerKitAPI
import LayerKit

/// The Vulkan devices the API reports, surveyed once per process (opening
/// a Vulkan instance for each call would cost milliseconds): nil when
/// there is no Vulkan loader or driver to ask, which counts as no devices.
enum DeviceList {
    static let survey: GPUDeviceSurvey? = try? GPUContext.availableDevices()

    /// The header's LK_DEVICE_* value of `kind`.
    static func code(of kind: GPUDeviceInfo.Kind) -> Int32 {
        switch kind {
        case .discrete: Int32(LK_DEVICE_DISCRETE)
        case .integrated: Int32(LK_DEVICE_INTEGRATED)
        case .virtual: Int32(LK_DEVICE_VIRTUAL)
        case .cpu: Int32(LK_DEVICE_CPU)
        case .other: Int32(LK_DEVICE_OTHER)
        }
    }
}

@c @implementation
public func lk_device_count(_ context: OpaquePointer?, _ count: UnsafeMutablePointer<Int32>?) -> lk_status {
    withContext(context) { _ in
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = Int32(clamping: DeviceList.survey?.devices.count ?? 0)
    }
}

@c @implementation
public func lk_device_info(_ context: OpaquePointer?, _ index: Int32, _ name: UnsafeMutablePointer<CChar>?,
                           _ nameCapacity: Int, _ nameLength: UnsafeMutablePointer<Int>?,
                           _ kind: UnsafeMutablePointer<Int32>?, _ usable: UnsafeMutablePointer<Int32>?,
                           _ chosen: UnsafeMutablePointer<Int32>?) -> lk_status {
    withContext(context) { _ in
        let device = try element(DeviceList.survey?.devices ?? [], Int(index), "device")
        kind?.pointee = DeviceList.code(of: device.kind)
        usable?.pointee = device.isUsable ? 1 : 0
        chosen?.pointee = device.index == DeviceList.survey?.chosen?.index ? 1 : 0
        // The name last: a buffer too small is reported after every other field is written.
        if let name {
            try writeString(device.name, to: name, capacity: TensorArguments.count(nameCapacity, "name_capacity"),
                            length: nameLength)
        } else {
            nameLength?.pointee = device.name.utf8.count
        }
    }
}

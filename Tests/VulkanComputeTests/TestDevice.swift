import Foundation
import Testing
@testable import VulkanCompute

/// The device the GPU tests share: validation always on, so any validation
/// error fails the test that caused it. With no Vulkan device the tests fail,
/// unless `LAYERKIT_ALLOW_NO_GPU=1` marks them disabled instead.
enum TestDevice {
    static let shared: Result<Device, Error> = Result { try Device(validation: true) }

    static func get() throws -> Device { try shared.get() }

    /// Runs GPU tests unless there is no device and the opt-out is set.
    static let isEnabled: Bool = {
        if case .success = shared { return true }
        return ProcessInfo.processInfo.environment["LAYERKIT_ALLOW_NO_GPU"] != "1"
    }()
}

import CVulkan
import Testing
@testable import VulkanCompute

@Suite(.enabled(if: TestDevice.isEnabled))
struct DeviceTests {
    @Test func theChosenDeviceIsUsableAndDescribed() throws {
        let device = try TestDevice.get()
        #expect(device.info.isUsable)
        #expect(!device.info.name.isEmpty)
        #expect(device.info.apiVersion.split(separator: ".").count == 3)
        #expect(device.instance.validationEnabled)
    }

    @Test func overrideByIndexAndNameAndItsErrors() throws {
        let devices = try TestDevice.get().instance.physicalDevices()
        let first = try #require(devices.first)
        #expect(try PhysicalDeviceInfo.choose(from: devices, override: "0").index == 0)
        let fragment = String(first.name.prefix(4)).uppercased()
        #expect(try PhysicalDeviceInfo.choose(from: devices, override: fragment).index == first.index)
        #expect(throws: VulkanError.self) {
            try PhysicalDeviceInfo.choose(from: devices, override: "no-such-device-name")
        }
        #expect(throws: VulkanError.self) {
            try PhysicalDeviceInfo.choose(from: devices, override: "\(devices.count + 5)")
        }
        #expect(throws: VulkanError.self) { try PhysicalDeviceInfo.choose(from: []) }
    }

    @Test func validationIsAParameterNeverTheEnvironment() throws {
        // The suite runs with LAYERKIT_VALIDATION=1; VulkanCompute must not read it.
        #expect(try !Instance().validationEnabled)
        #expect(try !Device(validation: false).instance.validationEnabled)
    }

    @Test func theDeviceOverrideIsAParameter() throws {
        let devices = try TestDevice.get().instance.physicalDevices()
        let last = try #require(devices.last { $0.isUsable })
        #expect(try Device(deviceOverride: "\(last.index)").info.index == last.index)
        #expect(throws: VulkanError.self) { try Device(deviceOverride: "no-such-device-name") }
    }

    @Test func kindsArePreferredDiscreteFirst() {
        let order: [PhysicalDeviceInfo.Kind] = [.cpu, .other, .discrete, .virtual, .integrated]
        #expect(order.sorted() == [.discrete, .integrated, .virtual, .cpu, .other])
    }

    @Test func validationErrorsReachTheMessenger() throws {
        // A zero-sized buffer breaks VUID-VkBufferCreateInfo-size-00912; the
        // messenger must record it so tests would fail on such misuse. A
        // device of its own keeps the error away from tests running beside it.
        let device = try Device(validation: true)
        var info = VkBufferCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.size = 0
        info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT.rawValue
        var buffer: VkBuffer?
        let before = device.instance.validationErrorCount
        _ = vkCreateBuffer(device.handle, &info, nil, &buffer)
        if let buffer { vkDestroyBuffer(device.handle, buffer, nil) }
        #expect(device.instance.validationErrorCount > before)
        let errors = device.instance.takeValidationErrors()
        #expect(errors.contains { $0.contains("size") })
    }

    @Test func imagesPastTheDeviceLimitsAreRefusedByName() throws {
        let device = try TestDevice.get()
        let tooWide = Int(device.info.maxImageDimension2D) + 1
        #expect(throws: VulkanError.limitExceeded(
            "image \(tooWide)x1 exceeds maxImageDimension2D (\(device.info.maxImageDimension2D))")) {
            try Image(device: device, width: tooWide, height: 1, layers: 1)
        }
        let tooManyLayers = Int(device.info.maxImageArrayLayers) + 1
        #expect(throws: VulkanError.self) {
            try Image(device: device, width: 1, height: 1, layers: tooManyLayers)
        }
    }
}

@Suite(.enabled(if: TestDevice.isEnabled))
struct AllocationFailureTests {
    /// An absurd request fails with a thrown error (not a crash), and the
    /// device keeps working afterwards.
    @Test func absurdAllocationsThrowAndTheDeviceKeepsWorking() throws {
        // A device of its own, so other tests' objects do not move the count.
        let device = try Device(validation: false)
        let before = device.liveObjectCount
        #expect(throws: VulkanError.self) { try Buffer(device: device, length: 1 << 50) }
        let side = Int(device.info.maxImageDimension2D)
        #expect(throws: VulkanError.self) {
            try Image(device: device, width: side, height: side, layers: Int(device.info.maxImageArrayLayers))
        }
        #expect(device.liveObjectCount == before)
        let small = try Buffer(device: device, length: 64)
        #expect(small.contents != nil)
    }
}

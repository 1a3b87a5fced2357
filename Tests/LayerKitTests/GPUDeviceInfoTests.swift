import Testing
import VulkanCompute
@testable import LayerKit

/// The device description LayerKit gives: the survey of every device and
/// the chosen one, with no Vulkan type in it.
@Suite(.enabled(if: TestGPU.isEnabled))
struct GPUDeviceInfoTests {
    @Test func theSurveyChoosesTheDeviceAContextOpens() throws {
        let survey = try GPUContext.availableDevices()
        let chosen = try #require(survey.chosen, "\(survey.reason)")
        #expect(survey.devices.contains(chosen))
        #expect(chosen.isUsable)
        #expect(chosen == (try GPUContext()).deviceInfo)
        #expect(!survey.reason.isEmpty)
    }

    @Test func theDescriptionTellsTheTruth() throws {
        let info = try TestGPU.get().deviceInfo
        #expect(!info.name.isEmpty)
        #expect(info.apiVersion.split(separator: ".").count == 3)
        #expect(info.supportsRGBA16FStorage)
        #expect(info.maxImageDimension2D >= 4096 && info.maxImageArrayLayers >= 256)
        #expect(info.supportsTimestamps == (info.timestampValidBits > 0))
        // Mesa's lavapipe is a CPU pretending to be a GPU, and says so.
        if info.name.lowercased().contains("llvmpipe") { #expect(info.kind == .cpu) }
    }

    @Test func anOverrideThatMatchesNothingChoosesNoneAndSaysWhy() throws {
        let survey = try GPUContext.availableDevices()
        let named = GPUDeviceSurvey(try Instance(validation: false).physicalDevices(), override: "no-such-device-name")
        #expect(named.devices == survey.devices)
        #expect(named.chosen == nil)
        #expect(named.reason.hasPrefix("LAYERKIT_DEVICE=no-such-device-name: "), "\(named.reason)")
        let first = GPUDeviceSurvey(try Instance(validation: false).physicalDevices(), override: "0")
        #expect(first.chosen?.index == 0 && first.reason == "LAYERKIT_DEVICE=0")
    }
}

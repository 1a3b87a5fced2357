import Foundation
import LayerKit

/// `layerkit devices`: every Vulkan device, what it supports, which is chosen and why.
enum DevicesCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .devices)
        if arguments.has("--json") {
            let survey = try? GPUContext.availableDevices()
            console.print(try JSONText.line(InfoRecords.Devices(survey, reason: survey?.reason)))
            return 0
        }
        console.print("CPU evaluator: \(CPUEvaluator.instructionSet), \(DeviceNote.threads(ProcessInfo.processInfo.activeProcessorCount))")
        let survey: GPUDeviceSurvey
        do {
            survey = try GPUContext.availableDevices()
        } catch {
            console.print("no Vulkan devices (\(error)): layers run on the CPU")
            return 0
        }
        if survey.devices.isEmpty {
            console.print("no Vulkan devices found: layers run on the CPU (install a driver, e.g. mesa-vulkan-drivers)")
            return 0
        }
        for device in survey.devices {
            let mark = device.index == survey.chosen?.index ? "* " : "  "
            console.print("\(mark)[\(device.index)] \(device.name)")
            console.print("      type: \(device.kind.rawValue)\(device.kind == .cpu ? " — GPU timings are emulated" : "")")
            console.print("      Vulkan API: \(device.apiVersion)")
            console.print("      shaderFloat16: \(yesNo(device.supportsFloat16))")
            console.print("      rgba16f storage images: \(yesNo(device.supportsRGBA16FStorage))")
            console.print("      timestamps: \(device.supportsTimestamps ? "yes (\(device.timestampValidBits) bits, \(device.timestampPeriod) ns/tick)" : "no")")
            console.print("      limits: 2D \(device.maxImageDimension2D), array layers \(device.maxImageArrayLayers)")
        }
        if let chosen = survey.chosen {
            console.print("chosen: [\(chosen.index)] \(chosen.name), by \(survey.reason) (LAYERKIT_DEVICE=<index|name> to override)")
            if chosen.kind == .cpu {
                console.print("note: a CPU-type device is slower than the CPU evaluator; --backend auto uses the CPU, --backend gpu uses this device")
            }
        } else {
            console.print("chosen: none (\(survey.reason)): layers run on the CPU")
        }
        return 0
    }

    private static func yesNo(_ value: Bool) -> String { value ? "yes" : "no" }
}

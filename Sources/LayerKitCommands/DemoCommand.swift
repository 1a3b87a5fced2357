import Foundation
import LayerKit

/// `layerkit demo`: the main job with a built-in input. Swish over six
/// feature maps of a built-in image, on the GPU and the CPU, side by side.
enum DemoCommand {
    static let channelNames = ["red", "green", "blue", "luminance", "d/dx", "d/dy"]

    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--output"])
        let outputPath = arguments.value("--output") ?? defaultOutput()
        try TensorFiles.checkOutput(outputPath, notAmong: [])

        let input = try DemoImage.features(of: DemoImage.landscape()).roundedToHalf()
        let layer = try Swish(beta: 1)
        console.print("LayerKit demo: Swish (beta 1) on a built-in \(DemoImage.size)x\(DemoImage.size) image's "
                      + "6 feature maps, shape \(Tensor.describe(input.shape))")

        let cpu = try timed { try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input]) }
        let gpuBackend = Backend(computeUnits: .cpuAndGPU, notice: { console.note($0) })
        var gpu: (run: LayerRun, milliseconds: Double)?
        if let context = gpuBackend.gpu {
            console.print("GPU: \(context.deviceInfo.name) (\(context.deviceInfo.kind.rawValue))"
                          + (context.deviceInfo.kind == .cpu ? " — timings are emulated, not GPU speed" : ""))
            _ = try gpuBackend.run(layer, inputs: [input])  // warm-up: pipeline creation
            gpu = try timed { try gpuBackend.run(layer, inputs: [input]) }
        } else {
            console.note("no GPU: \(gpuBackend.gpuUnavailableReason ?? "none"); showing the CPU only")
        }

        let cpuOut = cpu.run.outputs[0]
        let plane = input.count / 6
        console.print("")
        console.print("channel   mean(CPU)    " + (gpu == nil ? "" : "mean(GPU)    max|GPU-CPU|"))
        for c in 0..<6 {
            let range = c * plane..<(c + 1) * plane
            let cpuMean = range.reduce(0.0) { $0 + Double(cpuOut[$1]) } / Double(plane)
            var line = pad(channelNames[c], 10) + pad(String(format: "%+.5f", cpuMean), 13)
            if let gpuOut = gpu?.run.outputs[0] {
                let gpuMean = range.reduce(0.0) { $0 + Double(gpuOut[$1]) } / Double(plane)
                let maxDiff = range.map { abs(Double(gpuOut[$0]) - Double(cpuOut[$0])) }.max() ?? 0
                line += pad(String(format: "%+.5f", gpuMean), 13) + String(format: "%.2e", maxDiff)
            }
            console.print(line)
        }
        console.print("")
        var passed = true
        if let gpu {
            let report = try ParityReport(gpu: gpu.run.outputs[0], cpu: cpuOut)
            passed = report.passed
            console.print("parity: \(report.passed ? "PASS" : "FAIL") (max rel error "
                          + "\(ParityCommand.scientific(report.maxRelError)), tolerance 1e-3, "
                          + "max \(report.maxULPs) fp16 ulps)")
            let stamps = Dictionary(gpu.run.gpuTimestamps.map { ($0.label, $0.nanoseconds) }) { a, _ in a }
            let kernel = (stamps["kernel"] ?? 0) - (stamps["upload"] ?? 0)
            console.print(String(format: "timing: CPU evaluator %.3f ms; GPU end to end %.3f ms (kernel %.3f ms by GPU timestamps)",
                                 cpu.milliseconds, gpu.milliseconds, kernel / 1e6))
        } else {
            console.print(String(format: "timing: CPU evaluator %.3f ms", cpu.milliseconds))
        }
        try TensorFiles.write(gpu?.run.outputs[0] ?? cpuOut, to: outputPath)
        console.print("activation map (6 tiles, \(gpu == nil ? "CPU" : "GPU") output): \(outputPath)")
        return passed ? 0 : 1
    }

    private static func timed(_ body: () throws -> LayerRun) throws -> (run: LayerRun, milliseconds: Double) {
        let start = ContinuousClock.now
        let run = try body()
        let elapsed = ContinuousClock.now - start
        return (run, Timing.milliseconds(elapsed))
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    /// `$TMPDIR/layerkit-demo/swish-activations.png`: never in the user's files.
    private static func defaultOutput() -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("layerkit-demo")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("swish-activations.png").path
    }
}

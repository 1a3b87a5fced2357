import Foundation
import LayerKit

/// `layerkit demo`: the main job with a built-in input. The Core ML
/// custom-layer article's model (Conv → Swish as a custom layer → global
/// average pooling → Dense → softmax), built into the binary, on a built-in
/// image, on the GPU and the CPU side by side. `--style`: the built-in
/// style-transfer network (`Models/style.onnx`) on the same kind of image,
/// written as a PNG picture, and beside it the input and the output side by side.
enum DemoCommand {
    /// Where `demo --style` writes its picture without `--output`.
    static let defaultStylePath = "style.png"
    /// The side of the built-in image `demo --style` runs on (the network takes any size).
    static let styleSide = 96
    /// What the style network's seeded weights make, said wherever its picture is shown.
    static let styleCaption = "the weights are seeded, not trained: expect a grey-purple haze with faint traces "
        + "of the image, not a painting"

    /// `style.png` → `style-side-by-side.png`: where `demo --style` writes input | output.
    static func sideBySidePath(for outputPath: String) -> String {
        String(outputPath.dropLast(".png".count)) + "-side-by-side.png"
    }

    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .demo)
        let threads = try arguments.threads()
        if arguments.has("--style") { return try style(arguments, threads: threads, console: console) }
        let outputPath = arguments.value("--output")
        if let outputPath {
            guard outputPath.lowercased().hasSuffix(".npy") else {
                throw UsageError("\(outputPath): the demo writes its 10 predictions as .npy")
            }
            try TensorFiles.checkOutput(outputPath, notAmong: ReadFiles([]))
        }
        guard let data = BuiltInModels.data(named: BuiltInModels.articleName) else {
            throw LayerKitError.unsupported("this binary was built without Models/\(BuiltInModels.articleName)")
        }
        let cpuModel = try Model(data: data, computeUnits: .cpuOnly, threads: threads, notice: { console.note($0) })
        guard let input = cpuModel.inputs.first, let side = input.dimensions.last?.size else {
            throw LayerKitError.invalidModel("the built-in model has no fixed-size image input")
        }
        // The CPU reads the same fp16-rounded image the GPU stores (parity, as defined).
        let inputs = try ModelParity.rounded([input.name: DemoImage.landscape(size: side)])
        console.print("LayerKit demo: the Core ML custom-layer article's model on a built-in \(side)x\(side) image")
        console.print("model: " + cpuModel.nodes.map { $0.domain.isEmpty ? $0.opType : "\($0.opType) (custom, \($0.domain))" }
            .joined(separator: " -> "))

        // The GPU side even on an emulated device: the comparison is the point.
        let gpuModel: Model?
        do {
            gpuModel = try Model(data: data, computeUnits: .gpu, threads: threads, notice: { console.note($0) })
        } catch LayerKitError.gpuUnavailable(let why) {
            gpuModel = nil
            console.note("no GPU: \(why); showing the CPU only")
        }
        let cpu = try profiledRun(cpuModel, inputs)
        let gpu = try gpuModel.map { try profiledRun($0, inputs) }
        if let info = gpuModel?.backend.gpu?.deviceInfo {
            console.print("GPU: \(info.name) (\(info.kind.rawValue))"
                          + (info.kind == .cpu ? " — timings are emulated, not GPU speed" : ""))
        }

        let outputName = cpuModel.outputs[0].name
        let comparison = try gpu.map { try ModelParity.compare(gpu: $0.outputs, cpu: cpu.outputs, outputs: [outputName])[0] }
        let cpuOut = try comparison?.cpu ?? ModelParity.value(cpu.outputs, outputName)
        let gpuOut = comparison?.gpu
        console.print("")
        let rows = (0..<cpuOut.count).map { k -> [String] in
            var row = ["\(k)", String(format: "%.6f", cpuOut[k])]
            if let gpuOut {
                row += [String(format: "%.6f", gpuOut[k]), String(format: "%.2e", abs(gpuOut[k] - cpuOut[k]))]
            }
            return row
        }
        let header = ["class", "CPU"] + (gpuOut == nil ? [] : ["GPU", "|GPU-CPU|"])
        TextTable.lines(header: header, rows: rows).forEach { console.print($0) }
        console.print("")
        var passed = true
        if let report = comparison?.report {
            passed = report.passed
            console.print("parity: \(passed ? "PASS" : "FAIL") (max |GPU-CPU| \(ParityCommand.scientific(report.maxAbsError)), "
                          + "max rel \(ParityCommand.scientific(report.maxRelError)); tolerance 1e-3 * max(1, |cpu|))")
        }
        console.print("top class: CPU \(argmax(cpuOut))" + (gpuOut.map { ", GPU \(argmax($0))" } ?? ""))
        console.print("")
        timings(cpu: cpu.profile, gpu: gpu?.profile, console: console)
        if let outputPath {
            try TensorFiles.write(gpuOut ?? cpuOut, to: outputPath, png: .grid)
            console.print("wrote the \(gpuOut == nil ? "CPU" : "GPU") predictions to \(outputPath)")
        }
        return passed ? 0 : 1
    }

    /// `demo --style`: the style network on the GPU and the CPU, the parity
    /// of the two, and the picture (the GPU's, or the CPU's without a GPU).
    private static func style(_ arguments: Arguments, threads: Int?, console: Console) throws -> Int32 {
        let outputPath = arguments.value("--output") ?? defaultStylePath
        guard outputPath.lowercased().hasSuffix(".png") else {
            throw UsageError("\(outputPath): demo --style writes its picture as .png")
        }
        try TensorFiles.checkOutput(outputPath, notAmong: ReadFiles([]))
        let pairPath = Self.sideBySidePath(for: outputPath)
        try TensorFiles.checkOutput(pairPath, notAmong: ReadFiles([]))
        guard let data = BuiltInModels.data(named: BuiltInModels.styleName) else {
            throw LayerKitError.unsupported("this binary was built without Models/\(BuiltInModels.styleName)")
        }
        let cpuModel = try Model(data: data, name: BuiltInModels.styleName, computeUnits: .cpuOnly, threads: threads,
                                 notice: { console.note($0) })
        guard let input = cpuModel.inputs.first, let output = cpuModel.outputs.first else {
            throw LayerKitError.invalidModel("the built-in style model has no input or no output")
        }
        let side = styleSide
        let inputs = try ModelParity.rounded([input.name: DemoImage.landscape(size: side)])
        console.print("LayerKit demo --style: a fast-style-transfer network (seeded weights) on a built-in \(side)x\(side) image")
        console.print("note: \(styleCaption)")
        var counts: [String: Int] = [:]
        for node in cpuModel.nodes { counts[node.opType, default: 0] += 1 }
        console.print("model: \(cpuModel.nodes.count) nodes: " + counts.sorted { $0.key < $1.key }
            .map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        let gpuModel: Model?
        do {
            gpuModel = try Model(data: data, name: BuiltInModels.styleName, computeUnits: .gpu, threads: threads,
                                 notice: { console.note($0) })
        } catch LayerKitError.gpuUnavailable(let why) {
            gpuModel = nil
            console.note("no GPU: \(why); showing the CPU only")
        }
        let cpu = try profiledRun(cpuModel, inputs)
        let gpu = try gpuModel.map { try profiledRun($0, inputs) }
        if let gpuModel, let info = gpuModel.backend.gpu?.deviceInfo {
            let onGPU = gpuModel.nodes.filter { $0.placement?.isGPU == true }.count
            console.print("GPU: \(info.name) (\(info.kind.rawValue))" + (info.kind == .cpu ? " — timings are emulated, not GPU speed" : "")
                          + "; \(onGPU) of \(gpuModel.nodes.count) nodes on the GPU")
        }
        let comparison = try gpu.map { try ModelParity.compare(gpu: $0.outputs, cpu: cpu.outputs, outputs: [output.name])[0] }
        let picture = try comparison?.gpu ?? ModelParity.value(cpu.outputs, output.name)
        var passed = true
        if let report = comparison?.report {
            passed = report.passed
            console.print("parity: \(passed ? "PASS" : "FAIL") (max |GPU-CPU| \(ParityCommand.scientific(report.maxAbsError)), "
                          + "max rel \(ParityCommand.scientific(report.maxRelError)); tolerance 1e-3 * max(1, |cpu|))")
        }
        console.print(String(format: "end to end: CPU %.3f ms", cpu.profile.wallNanoseconds / 1e6)
                      + (gpu.map { String(format: ", GPU %.3f ms", $0.profile.wallNanoseconds / 1e6) } ?? ""))
        try picture.writeImagePNG(to: outputPath)
        console.print("wrote the \(comparison == nil ? "CPU" : "GPU")'s \(side)x\(side) RGB picture to \(outputPath)")
        try sideBySide(ModelParity.value(inputs, input.name), picture).writeImagePNG(to: pairPath)
        console.print("wrote input | output side by side to \(pairPath)")
        return passed ? 0 : 1
    }

    /// `left` and `right` (1xCxHxW each) in one 1xCxHx(2W+4) picture, a white
    /// bar 4 pixels wide between them.
    static func sideBySide(_ left: Tensor, _ right: Tensor) throws -> Tensor {
        guard left.shape == right.shape, left.shape.count == 4, left.shape[0] == 1 else {
            throw LayerKitError.shapeMismatch("side by side: \(left.shape) and \(right.shape) are not one 1xCxHxW shape")
        }
        let (channels, height, width, gap) = (left.shape[1], left.shape[2], left.shape[3], 4)
        let total = 2 * width + gap
        let picture = try Tensor(shape: [1, channels, height, total])
        for row in 0..<(channels * height) {
            for x in 0..<width {
                picture[row * total + x] = left[row * width + x]
                picture[row * total + width + gap + x] = right[row * width + x]
            }
            for x in width..<(width + gap) { picture[row * total + x] = 1 }
        }
        return picture
    }

    private static func argmax(_ tensor: Tensor) -> Int {
        tensor.values.indices.max { tensor[$0] < tensor[$1] } ?? 0
    }

    /// The model's outputs and the profile of a run (after an unprofiled one:
    /// load-time work such as first-touch allocations stays out of it).
    private static func profiledRun(_ model: Model, _ inputs: [String: Tensor]) throws
        -> (outputs: [String: Tensor], profile: ProfileSummary) {
        _ = try model.predict(inputs: inputs)
        let profiler = Profiler()
        let outputs = try model.predict(inputs: inputs, profiler: profiler)
        return (outputs, ProfileSummary(spans: profiler.spans))
    }

    /// Per-layer times of both runs side by side, then the totals.
    private static func timings(cpu: ProfileSummary, gpu: ProfileSummary?, console: Console) {
        let gpuLayers = Dictionary((gpu?.layers ?? []).map { ($0.op, $0) }) { a, _ in a }
        let rows = cpu.layers.map { layer -> [String] in
            var row = [layer.op, String(format: "%.3f", layer.nanoseconds / 1e6)]
            if gpu != nil {
                let g = gpuLayers[layer.op]
                row.append(g.map { String(format: "%.3f", $0.nanoseconds / 1e6) } ?? "-")
                row.append(g.map { $0.onGPU ? "GPU" : "CPU" } ?? "-")
            }
            return row
        }
        console.print("per-layer time, ms (GPU layers by GPU timestamps):")
        TextTable.lines(header: ["layer", "CPU run"] + (gpu == nil ? [] : ["GPU run", "ran on"]), rows: rows)
            .forEach { console.print($0) }
        console.print(String(format: "end to end: CPU %.3f ms", cpu.wallNanoseconds / 1e6)
                      + (gpu.map { String(format: ", GPU %.3f ms (uploads, kernels, downloads, waits)", $0.wallNanoseconds / 1e6) } ?? ""))
    }
}

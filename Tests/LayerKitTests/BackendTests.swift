import Foundation
import Testing
@testable import LayerKit

/// Which processor a layer runs on, and that every fallback is announced.
struct BackendTests {
    /// A layer with no `encode`, as a user's first port would be.
    final class CPUOnlyDouble: CustomLayer {
        static let name = "Double"
        init(parameters: [String: Any]) throws {}
        func setWeightData(_ weights: [Data]) throws {}
        func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] { inputShapes }
        func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
            doubleEachElement(inputs: inputs, outputs: outputs)
        }
    }

    final class Notices: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
    }

    @Test func cpuOnlyNeverOpensTheGPU() throws {
        let backend = try Backend(computeUnits: .cpuOnly)
        #expect(backend.gpu == nil)
        #expect(backend.placement(for: try Swish()) == .cpu(reason: nil))
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func cpuAndGPURunsSwishOnTheGPU() throws {
        let backend = try Backend(computeUnits: .gpu, context: try TestGPU.get())
        #expect(backend.placement(for: try Swish()) == .gpu)
        let run = try backend.run(try Swish(), inputs: [Tensor(shape: [1, 3, 4, 4])])
        #expect(run.placement == .gpu)
        #expect(run.gpuTimestamps.map(\.label) == ["start", "upload", "kernel", "download"])
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func automaticChoiceSkipsACPUTypeDeviceAndSaysSo() throws {
        let context = try TestGPU.get()
        let notices = Notices()
        let backend = try Backend(computeUnits: .automatic, context: context, notice: notices.append)
        let run = try backend.run(try Swish(), inputs: [Tensor(shape: [1, 3, 4, 4])])
        if context.deviceInfo.kind == .cpu {
            #expect(!run.placement.isGPU)
            #expect(notices.all.count == 1)
            #expect(notices.all.first?.contains("CPU emulation") == true)
        } else {
            #expect(run.placement == .gpu)
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func aLayerWithoutEncodeFallsBackWithOneNotice() throws {
        let notices = Notices()
        let backend = try Backend(computeUnits: .gpu, context: try TestGPU.get(), notice: notices.append)
        let layer = try CPUOnlyDouble(parameters: [:])
        let input = try Tensor(shape: [1, 1, 1, 3], values: [1, -2, 3])
        for _ in 0..<3 {
            let run = try backend.run(layer, inputs: [input])
            #expect(run.outputs[0].values == [2, -4, 6])
        }
        #expect(notices.all == ["Double runs on the CPU: it has no GPU implementation (encode)"])
    }

    /// `.automatic` on an emulated device: the device's reason is said once
    /// for all the backend's work (fine-tuning ran ~20 kinds of layers and
    /// repeated it for each), a layer's own reason still per layer.
    @Test(.enabled(if: TestGPU.isEnabled))
    func theEmulatedDeviceIsAnnouncedOnceForEveryLayer() throws {
        let context = try TestGPU.get()
        guard context.deviceInfo.kind == .cpu else { return }
        let notices = Notices()
        let backend = try Backend(computeUnits: .automatic, context: context, notice: notices.append)
        let input = try Tensor(shape: [1, 1, 1, 3], values: [1, -2, 3])
        _ = try backend.run(try ElementwiseLayer(parameters: ["op": "Relu"]), inputs: [input])
        _ = try backend.run(try ElementwiseLayer(parameters: ["op": "Sigmoid"]), inputs: [input])
        _ = try backend.run(try CPUOnlyDouble(parameters: [:]), inputs: [input])
        _ = try Optimizer(.sgd(learningRate: 0.1), backend: backend)
        #expect(notices.all.count == 1, "\(notices.all)")
        #expect(notices.all.first?.hasPrefix("everything runs on the CPU evaluator: the Vulkan device") == true)
    }

    /// Caller-provided outputs: written in place of new tensors, also in
    /// place of a per-element layer's input; wrong shapes and aliasing a
    /// layer that is not per-element are errors.
    @Test(arguments: [ComputeUnits.cpuOnly, .gpu])
    func resultsLandInTheCallersOutputs(units: ComputeUnits) throws {
        guard units == .cpuOnly || TestGPU.isEnabled else { return }
        let backend = try Backend(computeUnits: units, context: units == .gpu ? TestGPU.get() : nil)
        let values: [Float] = [-2, -0.5, 0, 0.5, 2, 3]
        let input = try Tensor(shape: [1, 2, 1, 3], values: values)
        let relu = try ElementwiseLayer(parameters: ["op": "Relu"])
        let output = try Tensor(shape: [1, 2, 1, 3])
        let run = try backend.run(relu, inputs: [input], outputs: [output])
        #expect(run.outputs[0] === output)
        #expect(output.values == values.map { max(0, $0) })
        #expect(input.values == values, "the input is left alone when the output is another tensor")
        // In place: the input takes the result.
        let inPlace = try backend.run(relu, inputs: [input], outputs: [input])
        #expect(inPlace.outputs[0] === input)
        #expect(input.values == values.map { max(0, $0) })
        #expect(throws: LayerKitError.self) {
            try backend.run(relu, inputs: [input], outputs: [Tensor(shape: [1, 2, 3, 1])])
        }
        let conv = try Convolution(weights: Tensor(shape: [2, 2, 1, 1], values: [1, 0, 0, 1]))
        #expect(throws: LayerKitError.self) { try backend.run(conv, inputs: [input], outputs: [input]) }
    }

    @Test func noticeLinesArePrefixedAndOneLineEach() {
        #expect(Backend.noticeLine("Double runs on the CPU") == "layerkit: Double runs on the CPU\n")
        #expect(Backend.noticeLine("two\nlines\r\n") == "layerkit: two lines \n")
    }

    /// Without a `notice`, a fallback is written to standard error (fd 2,
    /// redirected to a file for the duration; other tests' writes there in
    /// that window land in the file too, so this looks for its own line).
    @Test func withoutANoticeTheFallbackGoesToStandardError() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("lk-notice-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let captured = open(file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(captured >= 0)
        let saved = dup(STDERR_FILENO)
        dup2(captured, STDERR_FILENO)
        let result = Result {
            let backend = try Backend(computeUnits: .automatic, context: TestGPU.isEnabled ? try TestGPU.get() : nil)
            return try backend.run(try CPUOnlyDouble(parameters: [:]), inputs: [Tensor(shape: [1, 1, 1, 2])])
        }
        dup2(saved, STDERR_FILENO)
        close(saved)
        close(captured)
        let run = try result.get()
        guard case .cpu(let reason?) = run.placement else {
            Issue.record("the layer without encode ran on \(run.placement)")
            return
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        // The line names the layer, or, for a reason that holds for every layer (an emulated device), all work.
        let why = reason.components(separatedBy: "runs on the CPU: ").last ?? reason
        #expect(text.contains("layerkit: \(reason)\n") || text.contains("layerkit: everything runs on the CPU evaluator: \(why)\n"),
                "standard error held: \(text)")
    }
}

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
}

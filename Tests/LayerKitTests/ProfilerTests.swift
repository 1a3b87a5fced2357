import Foundation
import Testing
@testable import LayerKit

/// The profiler on the GPU (lavapipe here): timestamps, spans, the summary
/// and the trace; and the summary's accounting on spans made by hand.
@Suite(.enabled(if: TestGPU.isEnabled))
struct ProfilerGPUTests {
    /// One profiled GPU run of Swish over `shape`.
    func profiledRun(shape: [Int] = [2, 5, 17, 9]) throws -> (run: LayerRun, profiler: Profiler, input: Tensor) {
        let backend = try Backend(computeUnits: .gpu, context: try TestGPU.get())
        let input = try Tensor.uniform(shape: shape, in: -6...6, seed: 3).roundedToHalf()
        let layer = try Swish(beta: 1)
        let profiler = Profiler()
        let run = try profiler.measure(.run, "run") { try backend.run(layer, inputs: [input], profiler: profiler) }
        return (run, profiler, input)
    }

    @Test func timestampsAreMonotonicAndNonZero() throws {
        let (run, profiler, _) = try profiledRun()
        let marks = run.gpuTimestamps.map(\.nanoseconds)
        #expect(run.gpuTimestamps.map(\.label) == ["start", "upload", "kernel", "download"])
        #expect(marks.first == 0)
        #expect(zip(marks, marks.dropFirst()).allSatisfy { $0 <= $1 }, "\(marks)")
        #expect((marks.last ?? 0) > 0)

        // What the placement guarantees under any load (GPUWorkProfile.place):
        // inside [submit start, wait end], in order, not overlapping, durations >= 0.
        let gpu = profiler.spans.filter(\.timedOnGPU)
        #expect(gpu.map(\.kind) == [.upload, .kernel, .download])
        #expect(gpu.allSatisfy { $0.duration >= 0 }, "\(gpu.map(\.duration))")
        #expect(zip(gpu, gpu.dropFirst()).allSatisfy { $0.end <= $1.start }, "GPU spans overlap")
        let submit = try #require(profiler.spans.first { $0.kind == .submit })
        let wait = try #require(profiler.spans.first { $0.kind == .wait })
        #expect(gpu.allSatisfy { $0.start >= submit.start && $0.end <= wait.end },
                "\(gpu.map { ($0.start, $0.end) }) outside \(submit.start)...\(wait.end)")
    }

    /// lavapipe calibrates its timestamps against CLOCK_MONOTONIC, so the
    /// profile uses the calibration there (a device without it uses the wait).
    @Test func lavapipeCalibratesTimestamps() throws {
        let context = try TestGPU.get()
        guard context.deviceInfo.name.contains("llvmpipe") else { return }
        #expect(context.deviceInfo.supportsCalibratedTimestamps)
        #expect(context.deviceInfo.supportsSignedZeroInfNanPreserve)
    }

    @Test func spansCarryOpShapeWorkgroupAndBytes() throws {
        let (_, profiler, input) = try profiledRun()
        let kernel = try #require(profiler.spans.first { $0.kind == .kernel })
        #expect(kernel.op == "Swish")
        #expect(kernel.shape == [2, 5, 17, 9])
        #expect(kernel.workgroupSize == [8, 8, 1])
        // In and out: 17x9 texels, 2 slices x 2 items, 8 bytes a texel.
        #expect(kernel.bytes == 2 * 17 * 9 * 4 * 8)
        let kinds = Set(profiler.spans.map(\.kind))
        #expect(kinds == Set(ProfileSpan.Kind.allCases.filter { $0 != .cpuLayer }))
        let pack = try #require(profiler.spans.first { $0.kind == .upload && !$0.timedOnGPU })
        #expect(pack.bytes == 4 * input.count + 17 * 9 * 4 * 8)
    }

    @Test func profiledRunsMatchPlainOnes() throws {
        let (run, _, input) = try profiledRun()
        let plain = try Backend(computeUnits: .gpu, context: try TestGPU.get()).run(try Swish(beta: 1), inputs: [input])
        #expect(run.outputs[0].values == plain.outputs[0].values)
    }

    @Test func timestampsCanBeSwitchedOff() throws {
        let backend = try Backend(computeUnits: .gpu, context: try TestGPU.get(), timestamps: false)
        let input = try Tensor.uniform(shape: [1, 3, 4, 4], in: -2...2, seed: 1).roundedToHalf()
        let run = try backend.run(try Swish(beta: 1), inputs: [input])
        #expect(run.gpuTimestamps.isEmpty)
        let stamped = try Backend(computeUnits: .gpu, context: try TestGPU.get()).run(try Swish(beta: 1), inputs: [input])
        #expect(run.outputs[0].values == stamped.outputs[0].values)
    }

    @Test func aProfiledBufferReturnsOnlyTheCallersMarks() throws {
        let context = try TestGPU.get()
        let input = try Tensor.uniform(shape: [1, 4, 8, 8], in: -2...2, seed: 2)
        let image = try context.makeSliceImage(like: input)
        let commands = try context.makeCommandBuffer(profiler: Profiler())
        try commands.timestamp("before")
        try commands.upload(input, to: image)
        try commands.timestamp("after")
        try commands.commit()
        try commands.waitUntilCompleted()
        #expect(try commands.timestamps().map(\.label) == ["before", "after"])
    }

    @Test func summaryAddsUpToTheWallTime() throws {
        let (_, profiler, _) = try profiledRun(shape: [1, 8, 64, 64])
        let summary = ProfileSummary(spans: profiler.spans)
        let run = try #require(profiler.spans.first { $0.kind == .run })
        #expect(abs(summary.wallNanoseconds - run.duration) < 1e-6 * run.duration)
        let total = summary.layerNanoseconds + summary.overhead.reduce(0) { $0 + $1.nanoseconds }
        #expect(abs(total - summary.wallNanoseconds) <= 1e-6 * summary.wallNanoseconds)
        #expect(summary.layers.map(\.op) == ["Swish"])
        #expect(summary.layers[0].onGPU)
        #expect(summary.layers[0].nanoseconds > 0)
    }

    @Test func traceParsesWithThreeTracks() throws {
        let (_, profiler, _) = try profiledRun()
        let data = try ChromeTrace.json(profiler.spans, title: "test", metadata: ["device": "lavapipe"])
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let events = try #require(root["traceEvents"] as? [[String: Any]])
        let names = events.filter { $0["name"] as? String == "thread_name" }
            .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(Set(names) == ["GPU kernels", "CPU work", "transfers"])
        let complete = events.filter { $0["ph"] as? String == "X" }
        #expect(complete.count == profiler.spans.count)
        let tids = Set(complete.compactMap { $0["tid"] as? Int })
        #expect(tids == Set(ProfileSpan.Track.allCases.map(ChromeTrace.threadID)))
        for event in complete {
            #expect(event["ts"] is Double && event["dur"] is Double && event["pid"] as? Int == 1)
        }
    }
}

struct ProfilerTests {
    /// A GPU total (100 ns) longer than the host's submit-to-wait-end
    /// interval (50 ns), as a loaded machine or a skewed clock gives: every
    /// mark still lands inside the interval, in order. Without the clamp the
    /// last mark would land at 1100 (the old placement) or 1090 (calibrated).
    @Test func gpuMarksAreClampedIntoTheHostInterval() {
        let stamps: [Double] = [0, 10, 60, 100]
        for first in [nil, 990, 1040] as [Double?] {
            let times = GPUWorkProfile.place(stamps, first: first, submit: 1000, waitEnd: 1050)
            #expect(times.count == 4)
            #expect(times.allSatisfy { $0 >= 1000 && $0 <= 1050 }, "first \(String(describing: first)): \(times)")
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "\(times)")
        }
        // Uncalibrated, too long: compressed in proportion, so durations stay > 0.
        #expect(GPUWorkProfile.place(stamps, first: nil, submit: 1000, waitEnd: 1050) == [1000, 1005, 1030, 1050])
        // Uncalibrated and short enough: the last mark at the end of the wait.
        #expect(GPUWorkProfile.place([0, 5, 20], first: nil, submit: 1000, waitEnd: 1050) == [1030, 1035, 1050])
        // Calibrated and inside: kept exactly.
        #expect(GPUWorkProfile.place([0, 5, 20], first: 1010, submit: 1000, waitEnd: 1050) == [1010, 1015, 1030])
        // A wait end before the submit (impossible, but no crash): everything at the submit.
        #expect(GPUWorkProfile.place([0, 5], first: nil, submit: 1000, waitEnd: 900) == [1000, 1000])
    }

    @Test func aCPURunIsOneLayerSpan() throws {
        let profiler = Profiler()
        let input = try Tensor.uniform(shape: [1, 3, 5, 7], in: -2...2, seed: 1)
        _ = try Backend(computeUnits: .cpuOnly).run(try Swish(beta: 1), inputs: [input], profiler: profiler)
        let spans = profiler.spans
        #expect(spans.count == 1)
        #expect(spans[0].kind == .cpuLayer && spans[0].op == "Swish" && spans[0].bytes == 8 * input.count)
        #expect(spans[0].track == .cpuWork)
    }

    /// Kernel 10..20 inside a wait 5..30, a GPU copy 20..22, the host packing
    /// 0..4 inside the recording 0..5, all in a run 0..32.
    @Test func eachInstantGoesToTheHighestRankingSpan() {
        let spans = [
            ProfileSpan(kind: .run, name: "run", start: 0, duration: 32),
            ProfileSpan(kind: .record, name: "record", start: 0, duration: 5),
            ProfileSpan(kind: .upload, name: "pack", start: 0, duration: 4),
            ProfileSpan(kind: .wait, name: "wait", start: 5, duration: 25),
            ProfileSpan(kind: .kernel, name: "k", start: 10, duration: 10, timedOnGPU: true, op: "A", bytes: 100),
            ProfileSpan(kind: .download, name: "copy", start: 20, duration: 2, timedOnGPU: true),
        ]
        let summary = ProfileSummary(spans: spans)
        #expect(summary.wallNanoseconds == 32)
        #expect(summary.layers.count == 1 && summary.layers[0].op == "A" && summary.layers[0].nanoseconds == 10)
        let overhead = Dictionary(uniqueKeysWithValues: summary.overhead.map { ($0.label, $0.nanoseconds) })
        #expect(overhead[ProfileSummary.label(spans[2])] == 4)   // pack
        #expect(overhead[ProfileSummary.label(spans[1])] == 1)   // record beyond the pack
        #expect(overhead[ProfileSummary.label(spans[5])] == 2)   // GPU copy
        #expect(overhead[ProfileSummary.label(spans[3])] == 13)  // wait 5..30 less kernel and copy
        #expect(overhead[ProfileSummary.label(spans[0])] == 2)   // the run after the wait
    }

    @Test func opsGroupByNameAndPlace() {
        let spans = [
            ProfileSpan(kind: .kernel, name: "conv.comp", start: 0, duration: 3, op: "Conv", workgroupSize: [8, 8, 1], bytes: 10),
            ProfileSpan(kind: .kernel, name: "conv.comp", start: 3, duration: 2, op: "Conv", workgroupSize: [8, 8, 1], bytes: 20),
            ProfileSpan(kind: .cpuLayer, name: "Softmax", start: 5, duration: 1, op: "Softmax"),
        ]
        let layers = ProfileSummary(spans: spans).layers
        #expect(layers.map(\.op) == ["Conv", "Softmax"])
        #expect(layers[0].calls == 2 && layers[0].nanoseconds == 5 && layers[0].bytes == 30)
        #expect(layers[0].workgroupSize == [8, 8, 1] && layers[0].onGPU)
        #expect(!layers[1].onGPU && layers[1].bytes == nil)
    }
}

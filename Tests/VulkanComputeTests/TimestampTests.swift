import Testing
@testable import VulkanCompute

@Suite(.enabled(if: TestDevice.isEnabled))
struct TimestampTests {
    @Test func timestampsAreMonotonicAndMeasureWork() throws {
        let device = try TestDevice.get()
        try #require(device.info.supportsTimestamps, "\(device.info.name) reports no timestamp support")
        let count = 1 << 20
        let input = try Buffer(device: device, length: count * 4)
        let output = try Buffer(device: device, length: count * 4)
        let pipeline = try DispatchTests.scalePipeline(device)
        let constants = DispatchTests.scaleConstants(count: count, scale: 2, offset: 0)
        let commands = try CommandBuffer(device: device)
        try commands.timestamp("begin")
        try commands.dispatch(pipeline, bindings: [.buffer(input), .buffer(output)],
                              pushConstants: constants, threads: (count, 1, 1))
        try commands.timestamp("first")
        try commands.barrier()
        try commands.dispatch(pipeline, bindings: [.buffer(output), .buffer(input)],
                              pushConstants: constants, threads: (count, 1, 1))
        try commands.timestamp("second")
        try commands.commit()
        try commands.waitUntilCompleted()
        let stamps = try commands.timestamps()
        #expect(stamps.map(\.label) == ["begin", "first", "second"])
        #expect(stamps[0].nanoseconds == 0)
        // A million-element dispatch takes real time: each mark is later than the last.
        #expect(stamps[1].nanoseconds > 0)
        #expect(stamps[2].nanoseconds > stamps[1].nanoseconds)
        // ... but not absurdly long (a scaling or masking bug shows up as years).
        #expect(stamps[2].nanoseconds < 60e9)
    }

    /// Command buffers borrow the device's query pools: pools held at once
    /// are separate (both buffers read their own marks), and a freed
    /// buffer's pool goes back for reuse, so a thousand profiled buffers
    /// leave no more Vulkan objects than the first pair did.
    @Test func queryPoolsAreBorrowedAndReused() throws {
        // A device of its own, so other tests' objects do not move the count.
        let device = try Device(validation: false)
        try #require(device.info.supportsTimestamps, "\(device.info.name) reports no timestamp support")
        func pair() throws {
            let first = try CommandBuffer(device: device)
            let second = try CommandBuffer(device: device)
            try first.timestamp("a")
            try second.timestamp("x")
            try second.timestamp("y")
            try first.timestamp("b")
            try first.timestamp("c")
            for commands in [first, second] {
                try commands.commit()
                try commands.waitUntilCompleted()
            }
            #expect(try first.timestamps().map(\.label) == ["a", "b", "c"])
            #expect(try second.timestamps().map(\.label) == ["x", "y"])
            for stamps in [try first.timestamps(), try second.timestamps()] {
                #expect(stamps[0].nanoseconds == 0)
                #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0.nanoseconds <= $1.nanoseconds })
                #expect(stamps.last!.nanoseconds < 60e9)
            }
        }
        try pair()
        let objects = device.liveObjectCount
        for _ in 0..<500 { try pair() }
        #expect(device.liveObjectCount == objects)
    }

    @Test func timestampsBeforeCompletionAreEmpty() throws {
        let commands = try CommandBuffer(device: try TestDevice.get())
        try commands.timestamp("only")
        #expect(try commands.timestamps().isEmpty)
    }
}

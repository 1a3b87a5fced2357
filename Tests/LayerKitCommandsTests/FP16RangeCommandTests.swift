import Foundation
import LayerKit
import Testing

/// Issue 27, item 11: values fp16 storage cannot keep. A GPU run keeps the
/// steps that read such a known value on the CPU and says why; parity warns
/// of every such value and no longer passes a result whose values were
/// lost. Expected values come from float64 math.
@Suite(.enabled(if: gpuTestsEnabled))
struct FP16RangeCommandTests {
    let directory: String
    init() throws { directory = try CommandRunner.scratchDirectory() }

    /// Writes `nodes` as a chain model of `shape`; returns its path.
    func model(_ nodes: [TinyONNX.Node], shape: [Int]) throws -> String {
        let path = "\(directory)/model\(UUID().uuidString.prefix(8)).onnx"
        try TinyONNX.chain(nodes, shape: shape).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Softmax (or, `log`, LogSoftmax) of `row` in float64.
    static func softmax(_ row: [Double], log: Bool) -> [Double] {
        let top = row.max() ?? 0
        let sum = row.reduce(0) { $0 + Foundation.exp($1 - top) }
        return row.map { log ? $0 - top - Foundation.log(sum) : Foundation.exp($0 - top) / sum }
    }

    @Test(arguments: ["Softmax", "LogSoftmax"])
    func aRowFP16CannotKeepApartRunsOnTheCPUWithTheRightAnswer(opType: String) throws {
        // The case: on the GPU 10000..10003 became 10000 four times, a uniform row (10000 itself is exact).
        let row: [Double] = [10000, 10001, 10002, 10003]
        let path = try model([TinyONNX.Node(opType: opType)], shape: [1, 4])
        try writeNPY(row.map(Float.init), shape: [1, 4], to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["run", path, "--input", "\(directory)/x.npy", "--output", "\(directory)/y.npy",
                            "--backend", "gpu"]) == 0, "\(runner.error)")
        #expect(runner.error.contains("on the CPU: its input 'x' does not fit fp16 storage: 3 of 4 elements "
                                      + "beyond ±2048"), "\(runner.error)")
        #expect(runner.error.contains("(values 10000..10003)"), "\(runner.error)")
        let output = try Tensor(npyFile: "\(directory)/y.npy")
        for (value, expected) in zip(output.values, Self.softmax(row, log: opType == "LogSoftmax")) {
            #expect(abs(Double(value) - expected) <= 1e-5 * max(1, abs(expected)), "\(output.values)")
        }
    }

    @Test func parityOfLogitsFP16LosesFailsOnTheNMSEAndNamesTheValue() throws {
        // x in [0, 1) times 1e-4 twice: the CPU's logits are below 1e-8, each GPU one is 0 in fp16. Every
        // element is within the absolute tolerance, so only the NMSE (1: nothing of the values is left) tells.
        let path = try model([TinyONNX.Node(opType: "Mul", constants: ["a": [1e-4]]),
                              TinyONNX.Node(opType: "Mul", constants: ["b": [1e-4]])], shape: [1, 8])
        let runner = CommandRunner()
        #expect(runner.run(["parity", path]) == 1, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("warning: fp16 range: value 'y': 8 of 8 elements changed by fp16, all below 6.1e-5"), "\(runner.out)")
        #expect(runner.out.contains("FAIL: NMSE 1.000e+00 > 0.01: the GPU lost the values"), "\(runner.out)")
        #expect(runner.out.contains("FAIL: 1 of 1 outputs outside the parity rule (y)"), "\(runner.out)")
    }

    @Test func aTinyConstantKeepsItsNodeOnTheCPUAndParitySaysSo() throws {
        // Logits of 1e-9 from a constant: known at prepare, so the node runs in fp32 and the answer is right.
        let path = try model([TinyONNX.Node(opType: "Mul", constants: ["scale": [1e-9]])], shape: [1, 8])
        let runner = CommandRunner()
        #expect(runner.run(["parity", path]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("warning: fp16 range: constant 'scale': 1 of 1 element changed by fp16, all below 6.1e-5"), "\(runner.out)")
        #expect(runner.out.contains("(values 1e-09..1e-09); nodes reading it run on the CPU in fp32"), "\(runner.out)")
        #expect(runner.error.contains("on the CPU: its input 'scale' does not fit fp16 storage"), "\(runner.error)")
        let inspect = CommandRunner()
        #expect(inspect.run(["inspect", path, "--backend", "gpu"]) == 0, "\(inspect.error)")
        #expect(inspect.out.contains("warning: fp16 range: constant 'scale'"), "\(inspect.out)")
        #expect(inspect.out.contains("its input 'scale' does not fit fp16 storage"), "\(inspect.out)")
    }

    @Test func parityOfAnInputBeyond65504KeepsItAsGiven() throws {
        // Rounded to fp16, 70000 would be an infinity on both sides: parity would compare infinities.
        let path = try model([TinyONNX.Node(opType: "Mul", constants: ["half": [0.5]])], shape: [1, 4])
        try writeNPY([70000, -1, 2, 3], shape: [1, 4], to: "\(directory)/x.npy")
        let runner = CommandRunner()
        #expect(runner.run(["parity", path, "--input", "\(directory)/x.npy"]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("as given (fp16 cannot keep it)"), "\(runner.out)")
        #expect(runner.out.contains("warning: fp16 range: input 'x': 1 of 4 elements beyond ±65504"), "\(runner.out)")
    }

    @Test func aNormalModelPassesParityWithNoWarning() throws {
        let runner = CommandRunner()
        #expect(runner.run(["parity", ModelParityCommandTests.article]) == 0, "\(runner.out)\(runner.error)")
        #expect(runner.out.contains("PASS: all 1 output within the parity rule"), "\(runner.out)")
        #expect(!runner.out.contains("warning"), "\(runner.out)")
        #expect(!runner.error.contains("fp16"), "\(runner.error)")
        let inspect = CommandRunner()
        #expect(inspect.run(["inspect", ModelParityCommandTests.article, "--backend", "gpu"]) == 0, "\(inspect.error)")
        #expect(!inspect.out.contains("fp16 range"), "\(inspect.out)")
    }
}

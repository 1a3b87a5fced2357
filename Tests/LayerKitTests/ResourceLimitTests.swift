import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// Sizes read from a file are checked against what the file holds, and
/// allocations sized from input are capped, before anything is allocated
/// (issue 14, classes 2, 3 and 5). The inputs of the issue are kept here.
struct ResourceLimitTests {
    typealias G = ModelGraphTests

    /// This process's peak resident set, in bytes.
    static func peakRSS() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }

    /// `body`'s error text, with the seconds it took and how much it raised the peak RSS.
    static func measure(_ body: () throws -> Void) -> (String?, Double, Int) {
        let before = peakRSS(), start = Date()
        var text: String?
        do { try body() } catch { text = "\(error)" }
        return (text, Date().timeIntervalSince(start), peakRSS() - before)
    }

    @Test func declaredDimsWithoutDataAreRefusedAtDecoding() throws {
        // Flatten of an initializer declared [2^32, 2^32, 1] with no data trapped on overflow.
        let flatten = G.model(nodes: [ONNXBytes.node("Flatten", inputs: ["c"], name: "flat")], inputs: [],
                              outputs: [G.value("y", nil)],
                              initializers: [ONNXBytes.tensor("c", dims: [1 << 32, 1 << 32, 1], type: 1, [])])
        let (text, _, _) = Self.measure { _ = try Model(data: flatten, computeUnits: .cpuOnly) }
        #expect(text?.contains("tensor 'c' has dims [4294967296, 4294967296, 1] but holds data for 0 elements") == true,
                "\(text ?? "loaded")")
        // [1000000] floats with 4 bytes of data: refused; control: [1] with the same bytes decodes.
        #expect(throws: LayerKitError.self) {
            _ = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [1_000_000], type: 1, PB.bytes(9, [0, 0, 128, 63])))
        }
        let one = try ONNXBytes.decodeInitializer(ONNXBytes.tensor(dims: [1], type: 1, PB.bytes(9, [0, 0, 128, 63])))
        #expect(try one.floats() == [1])
    }

    @Test func hugeDeclaredInputsFailFastWithoutAllocating() throws {
        let slope = ONNXBytes.tensor("s", dims: [], type: 1, PB.bytes(9, PB.littleEndian([Float(0.5).bitPattern])))
        func prelu(_ channels: Int) -> Data {
            G.model(nodes: [ONNXBytes.node("PRelu", inputs: ["x", "s"], name: "prelu")],
                    inputs: [G.value("x", [1, channels, 1, 1])], outputs: [G.value("y", nil)], initializers: [slope])
        }
        // [1, 2^40, 1, 1] tried to allocate 4 TB; [1, 2^28, 1, 1] used 2.2 GB for 32 s before an error.
        // A scalar slope now broadcasts as it is (no per-channel copy), so 2^28 channels load, fast and small.
        for (channels, expected) in [(1 << 40, "would hold more than 256M elements"), (1 << 28, nil)] {
            let (text, seconds, grown) = Self.measure { _ = try Model(data: prelu(channels), computeUnits: .cpuOnly) }
            #expect(expected.map { text?.contains($0) == true } ?? (text == nil), "\(text ?? "loaded")")
            #expect(seconds < 5 && grown < 256 << 20, "\(channels) channels: \(seconds) s, \(grown >> 20) MiB more")
        }
        // Control: PRelu over 3 channels runs, y = x >= 0 ? x : 0.5 x.
        let model = try Model(data: prelu(3), computeUnits: .cpuOnly)
        #expect(try model.predict(inputs: ["x": Tensor(shape: [1, 3, 1, 1], values: [-2, 0, 3])])["y"]?.values == [-1, 0, 3])
    }

    @Test func aModelsValuesTogetherAreCapped() throws {
        // 40 Relu nodes of 2^24 elements each, each value under the per-tensor cap: x and r0...r30 make 32 x 16M =
        // 512M elements (2 GiB), the cap; r31's output is past it.
        var nodes: [[UInt8]] = []
        for i in 0..<40 { nodes.append(ONNXBytes.node("Relu", inputs: [i == 0 ? "x" : "v\(i - 1)"], outputs: ["v\(i)"], name: "r\(i)")) }
        let data = G.model(nodes: nodes, inputs: [G.value("x", [1, 16, 1024, 1024])], outputs: [G.value("v39", nil)])
        let (text, seconds, _) = Self.measure { _ = try Model(data: data, computeUnits: .cpuOnly) }
        #expect(text?.contains("node 'r31' (Relu): the model's values up to this node would hold more than 512M elements") == true,
                "\(text ?? "loaded")")
        #expect(seconds < 5)
        // Control: 8 such nodes (144M elements) are under the cap and load.
        let small = G.model(nodes: Array(nodes.prefix(8)), inputs: [G.value("x", [1, 16, 1024, 1024])], outputs: [G.value("v7", nil)])
        #expect(throws: Never.self) { _ = try Model(data: small, computeUnits: .cpuOnly) }
    }

    /// Found by the grammar fuzzer (onnx-grammar, seed 1): inputs [0, 2^40, 1]
    /// and [0, 1, 2^40], each valid (no element), broadcast to
    /// [0, 2^40, 2^40], whose non-zero extents overflowed in BroadcastPlan's
    /// arithmetic (a trap).
    @Test func aBroadcastPastIntIsAnError() throws {
        let data = G.model(nodes: [ONNXBytes.node("Add", inputs: ["a", "b"], name: "add")],
                           inputs: [G.value("a", [0, 1 << 40, 1]), G.value("b", [0, 1, 1 << 40])], outputs: [G.value("y", nil)])
        let (text, _, _) = Self.measure { _ = try Model(data: data, computeUnits: .cpuOnly) }
        #expect(text?.contains("broadcast to 0x1099511627776x1099511627776, too many elements") == true, "\(text ?? "loaded")")
        // The fuzzer's second finding: a zero extent hid the overflow of the
        // others ([0, 2^40, 2^40] has 0 elements), and sub-products trapped.
        #expect(throws: LayerKitError.self) { _ = try Tensor.elementCount(of: [0, 1 << 40, 1 << 40]) }
        #expect(try Tensor.elementCount(of: [0, 1 << 20, 1 << 20]) == 0)
        // Control: [2, 1] + [1, 3] broadcasts to [2, 3] and adds.
        let small = G.model(nodes: [ONNXBytes.node("Add", inputs: ["a", "b"], name: "add")],
                            inputs: [G.value("a", [2, 1]), G.value("b", [1, 3])], outputs: [G.value("y", nil)])
        let y = try Model(data: small, computeUnits: .cpuOnly).predict(inputs: [
            "a": Tensor(shape: [2, 1], values: [1, 2]), "b": Tensor(shape: [1, 3], values: [10, 20, 30])])["y"]
        #expect(y?.values == [11, 21, 31, 12, 22, 32])
    }

    /// The same class in Concat: zero-size inputs [0, 2^59] concatenated 16
    /// times along axis 1 add to 2^63, which trapped; now a shape error.
    @Test func concatExtentsAddWithoutOverflow() throws {
        let axis = PB.string(1, "axis") + PB.int(3, 1) + PB.int(20, 2)
        func concat(_ copies: Int, _ dims: [Int]) -> Data {
            G.model(nodes: [ONNXBytes.node("Concat", inputs: Array(repeating: "x", count: copies), name: "cat", attributes: [axis])],
                    inputs: [G.value("x", dims)], outputs: [G.value("y", nil)])
        }
        let (text, _, _) = Self.measure { _ = try Model(data: concat(16, [0, 1 << 59]), computeUnits: .cpuOnly) }
        #expect(text?.contains("node 'cat' (Concat)") == true && text?.contains("Int.max") == true, "\(text ?? "loaded")")
        // Control: [1, 2] twice along axis 1 is [1, 4].
        let y = try Model(data: concat(2, [1, 2]), computeUnits: .cpuOnly).predict(inputs: ["x": Tensor(shape: [1, 2], values: [5, 6])])["y"]
        #expect(y?.shape == [1, 4] && y?.values == [5, 6, 5, 6])
    }

    /// A 51-byte PNG whose tEXt chunk claims 0x7fffffff bytes made libpng allocate 2.1 GB.
    @Test func aPNGChunkLengthIsCapped() throws {
        let valid = TestPNGEncoder.encode(width: 1, height: 1, bitDepth: 8, colorType: .gray, rows: [[7]])
        let head = Array(valid.prefix(33))  // signature and IHDR
        // A tEXt chunk that claims 0x7fffffff bytes, then ends: 51 bytes in all.
        let lying = head + [0x7F, 0xFF, 0xFF, 0xFF] + Array("tEXt".utf8) + Array("Comment\0hi".utf8)
        #expect(lying.count == 51)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/lying.png"
        try Data(lying).write(to: URL(fileURLWithPath: path))
        let (text, seconds, grown) = Self.measure { _ = try Tensor(pngFile: path) }
        #expect(text != nil, "a truncated PNG loaded")
        #expect(seconds < 5 && grown < 256 << 20, "\(seconds) s, \(grown >> 20) MiB more")
        // Control: the file with an honest tEXt chunk before its pixels loads.
        let honest = head + TestPNGEncoder.chunk("tEXt", Array("Comment\0hi".utf8)) + valid.dropFirst(33)
        try Data(honest).write(to: URL(fileURLWithPath: path))
        let pixel = try Tensor(pngFile: path)
        #expect(pixel.count == 1 && abs(Double(pixel[0]) - 7.0 / 255) < 1e-6, "\(pixel.values)")
    }
}

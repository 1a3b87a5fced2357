import Foundation
import Testing
@testable import LayerKit
import LayerKitONNX

/// The checkpoint file: a round trip is bit-exact, and every kind of
/// damage is refused with an error that names it.
@Suite struct TrainingCheckpointTests {
    static func sample() throws -> TrainingCheckpoint {
        // Values whose bits a lossy path would change: a subnormal, -0, NaN, the extremes.
        let weights = try Tensor(shape: [2, 3], values: [0.1, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                                                          Float(bitPattern: 0x7FC0_1234), -1e-30])
        let average = try Tensor(shape: [3], values: [1e-8, 2.5, -7])
        let scalar = try Tensor(shape: [], values: [42])
        let empty = try Tensor(shape: [0, 4])
        return TrainingCheckpoint(
            step: 123, epoch: 4, batchInEpoch: 7, seed: .max,
            optimizer: .init(name: "adam", hyperParameters: ["lr": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                                                             "weight_decay": 0]),
            schedule: .init(name: "cosine", state: ["base": 0.01, "rate": 0.003_141_592_653_589_793, "steps": 1000]),
            model: .init(name: "net.onnx", contents: Data("model bytes".utf8)),
            tensors: ["conv.weight": weights, "exp_avg/conv.weight": average, "step/scalar": scalar, "empty": empty],
            counters: ["step": 123, "conv.weight.step": .max], epochLossSum: 0.1 + 0.2)
    }

    static func error(_ data: Data) -> String {
        do { _ = try TrainingCheckpoint(data: data, source: "run.ckpt"); return "read" } catch { return "\(error)" }
    }

    @Test func aRoundTripIsBitExact() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let checkpoint = try Self.sample()
        try checkpoint.write(to: folder.file("run.ckpt"))
        let read = try TrainingCheckpoint(contentsOf: folder.file("run.ckpt"))
        #expect(read.step == 123 && read.epoch == 4 && read.batchInEpoch == 7)
        #expect(read.seed == .max && read.counters == checkpoint.counters && read.epochLossSum == checkpoint.epochLossSum)
        #expect(read.optimizer == checkpoint.optimizer && read.schedule == checkpoint.schedule)
        #expect(read.optimizer.hyperParameters["eps"]?.bitPattern == (1e-8 as Double).bitPattern)
        #expect(read.model == checkpoint.model)
        #expect(read.tensors.keys.sorted() == checkpoint.tensors.keys.sorted())
        for (name, tensor) in checkpoint.tensors {
            let back = try #require(read.tensors[name])
            #expect(back.shape == tensor.shape, "\(name)")
            #expect(back.values.map(\.bitPattern) == tensor.values.map(\.bitPattern), "\(name)")
        }
        // Written twice, the same bytes: the header's keys and the tensors are in a fixed order.
        #expect(try read.data() == checkpoint.data())
    }

    @Test func theLayoutIsTheDocumentedOne() throws {
        let bytes = [UInt8](try Self.sample().data())
        #expect(Array(bytes[0..<8]) == [0x89, 0x4C, 0x4B, 0x43, 0x4B, 0x50, 0x54, 0x0A])
        #expect(Array(bytes[8..<12]) == [1, 0, 0, 0])
        let headerLength = (0..<4).reduce(0) { $0 | Int(bytes[12 + $1]) << (8 * $1) }
        let header = try #require(try JSONSerialization.jsonObject(with: Data(bytes[16..<16 + headerLength])) as? [String: Any])
        let tensors = try #require(header["tensors"] as? [[String: Any]])
        #expect(tensors.compactMap { $0["name"] as? String } == ["conv.weight", "empty", "exp_avg/conv.weight", "step/scalar"])
        #expect(header["step"] as? Int == 123)
        // The tensors follow the header: 6 + 0 + 3 + 1 floats, then the CRC-32.
        #expect(bytes.count == 16 + headerLength + 10 * 4 + 4)
        let first = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[16 + headerLength + $1]) << (8 * UInt32($1)) }
        #expect(first == Float(0.1).bitPattern)
        // The CRC-32 is zlib's: the standard check value of "123456789" is 0xCBF43926.
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) } == 0xCBF4_3926)
        let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[bytes.count - 4 + $1]) << (8 * UInt32($1)) }
        #expect(stored == bytes.dropLast(4).withUnsafeBytes { CRC32.checksum($0) })
    }

    @Test func everyKindOfDamageIsRefused() throws {
        let good = [UInt8](try Self.sample().data())
        #expect(Self.error(Data(good)) == "read")
        #expect(Self.error(Data()).contains("not a LayerKit training checkpoint"))
        #expect(Self.error(Data("PK\u{3}\u{4} a zip file".utf8)).contains("not a LayerKit training checkpoint"))
        #expect(Self.error(Data(good.prefix(5))).contains("truncated"))
        // Cut anywhere: in the frame, in the header, in the tensors, in the checksum.
        for length in [12, 17, 200, good.count - 30, good.count - 1] {
            let text = Self.error(Data(good.prefix(length)))
            #expect(text.contains("truncated"), "\(length) bytes: \(text)")
        }
        var extra = good
        extra += [0, 0, 0, 0]
        #expect(Self.error(Data(extra)).contains("4 bytes after the end its header describes"))

        var version = good
        version[8] = 2
        #expect(Self.error(Data(version)).contains("format version 2; this LayerKit reads version 1"))
        var huge = good
        huge[15] = 0x7F
        #expect(Self.error(Data(huge)).contains("declares a header of"))

        // One flipped bit in a tensor or in the checksum.
        for offset in [good.count - 20, good.count - 2] {
            var flipped = good
            flipped[offset] ^= 0x10
            let text = Self.error(Data(flipped))
            #expect(text.contains("checksum mismatch") && text.contains("run.ckpt"), "\(text)")
        }
    }

    /// A frame around `header` with `payload` and a correct checksum: the
    /// checks behind the checksum see exactly this header.
    static func framed(_ header: String, payload: [UInt8] = []) -> Data {
        let json = Array(header.utf8)
        var bytes = TrainingCheckpoint.magic + [1, 0, 0, 0] + (0..<4).map { UInt8(truncatingIfNeeded: json.count >> (8 * $0)) }
        bytes += json + payload
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) }
        return Data(bytes + (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) })
    }

    static func header(tensors: String, step: Int = 1) -> String {
        """
        {"batchInEpoch":0,"epoch":0,"model":{"byteCount":1,"crc32":2,"name":"m.onnx"},\
        "optimizer":{"hyperParameters":{},"name":"sgd"},"schedule":{"name":"constant","state":{}},\
        "seed":3,"counters":{},"epochLossSum":0,"step":\(step),"tensors":\(tensors)}
        """
    }

    @Test func absurdHeadersAreRefusedBeforeAnyAllocation() throws {
        #expect(Self.error(Self.framed(Self.header(tensors: "[]"))) == "read")
        let absurd = Self.error(Self.framed(Self.header(tensors: #"[{"name":"w","shape":[4611686018427387904, 8]}]"#)))
        #expect(absurd.contains("tensor 'w' has shape") && absurd.contains("gives no element count"), "\(absurd)")
        let large = Self.error(Self.framed(Self.header(tensors: #"[{"name":"w","shape":[1000000, 1000000]}]"#)))
        #expect(large.contains("truncated") && large.contains("where its header describes"), "\(large)")
        let negative = Self.error(Self.framed(Self.header(tensors: #"[{"name":"w","shape":[-1]}]"#)))
        #expect(negative.contains("gives no element count"), "\(negative)")
        let twice = Self.error(Self.framed(Self.header(tensors: #"[{"name":"w","shape":[1]},{"name":"w","shape":[1]}]"#),
                                           payload: [0, 0, 0, 0, 0, 0, 0, 0]))
        #expect(twice.contains("tensor 'w' is given twice"), "\(twice)")
        let missing = Self.error(Self.framed(#"{"step":1}"#))
        #expect(missing.contains("the header is not a checkpoint header: no 'epoch'"), "\(missing)")
        let notJSON = Self.error(Self.framed("{not json"))
        #expect(notJSON.contains("the header is not a checkpoint header"), "\(notJSON)")
        let backwards = Self.error(Self.framed(Self.header(tensors: "[]", step: -1)))
        #expect(backwards.contains("step is -1; expected a count from 0 to 9007199254740992 (2^53)"), "\(backwards)")
        // Issue 27: a count the run goes on counting from would trap at 2^63 - 1.
        let huge = Self.error(Self.framed(Self.header(tensors: "[]", step: .max)))
        #expect(huge.contains("step is 9223372036854775807; expected a count from 0 to 9007199254740992 (2^53)"), "\(huge)")
    }

    @Test func aCheckpointForAnotherModelIsRefused() throws {
        let checkpoint = try Self.sample()
        try checkpoint.check(model: .init(name: "renamed.onnx", contents: Data("model bytes".utf8)))
        let other = TrainingCheckpoint.ModelIdentity(name: "other.onnx", contents: Data("model bytez".utf8))
        do {
            try checkpoint.check(model: other)
            Issue.record("a checkpoint of another model was accepted")
        } catch {
            #expect("\(error)".contains("written for model 'net.onnx'") && "\(error)".contains("not 'other.onnx'"), "\(error)")
        }
    }

    @Test func aCheckpointWrittenByPythonFromTheDocumentedLayoutIsRead() throws {
        let checkpoint = try TrainingCheckpoint(contentsOf: TrainingFixtures.path("checkpoint_v1.lkckpt"))
        #expect(checkpoint.step == 7 && checkpoint.epoch == 1 && checkpoint.batchInEpoch == 3)
        #expect(checkpoint.seed == 12_345_678_901_234_567_890 && checkpoint.epochLossSum == 4.25)
        #expect(checkpoint.counters == ["step": 7, "conv.weight.step": .max])
        #expect(checkpoint.optimizer == .init(name: "adam", hyperParameters: ["lr": 0.01, "beta1": 0.9, "beta2": 0.999,
                                                                              "eps": 1e-8]))
        #expect(checkpoint.schedule == .init(name: "cosine", state: ["base": 0.01, "steps": 100]))
        // zlib's CRC-32 of the model file, as Python computed it.
        let model = try Data(contentsOf: URL(fileURLWithPath: TrainingFixtures.path("swish_net.onnx")))
        try checkpoint.check(model: .init(name: "swish_net.onnx", contents: model))
        #expect(checkpoint.model == .init(name: "swish_net.onnx", contents: model))
        let weights = try #require(ONNXModel(data: model).graph.initializers["conv.weight"]).floats()
        #expect(checkpoint.tensors["conv.weight"]?.shape == [4, 3, 3, 3])
        #expect(checkpoint.tensors["conv.weight"]?.values == weights)
        #expect(checkpoint.tensors["exp_avg/conv.weight"]?.values == weights.map { $0 * 0.5 })
        #expect(checkpoint.tensors["scalar"]?.shape == [] && checkpoint.tensors["scalar"]?.values == [2.5])
    }

    @Test func aHyperParameterThatIsNotFiniteIsAnError() throws {
        var checkpoint = try Self.sample()
        checkpoint.optimizer.hyperParameters["lr"] = .nan
        #expect(throws: LayerKitError.self) { _ = try checkpoint.data() }
    }
}

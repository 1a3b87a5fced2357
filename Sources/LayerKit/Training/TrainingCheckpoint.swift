import Foundation

/// Where a training run stands, saved so that a resumed run continues it
/// exactly: the position (step, epoch, batch), the shuffling seed (each
/// epoch's order is drawn from it and the epoch), the epoch's loss so far,
/// the optimizer's counters,
/// the optimizer and learning-rate schedule, the model it trains, and named
/// Float32 tensors (parameters, optimizer state such as `exp_avg/<param>`,
/// BatchNormalization running statistics).
///
/// The file (version 1), all integers little-endian:
///
///     bytes 0-7    magic 0x89 "LKCKPT" 0x0A
///     bytes 8-11   UInt32 format version (1)
///     bytes 12-15  UInt32 header length H (1 to 16 MiB)
///     H bytes      the header: UTF-8 JSON, keys sorted (below)
///     data         each tensor of the header's "tensors" list in its order:
///                  its elements as Float32, row-major, no padding
///     last 4 bytes UInt32 CRC-32 (zlib's) of every byte before it
///
/// The header: `{"batchInEpoch", "epoch", "model": {"byteCount", "crc32",
/// "name"}, "optimizer": {"hyperParameters": {NAME: number}, "name"},
/// "schedule": {"name", "state": {NAME: number}}, "seed", "counters":
/// {NAME: Int}, "epochLossSum", "step", "tensors": [{"name", "shape": [Int]}]}`. Numbers
/// are written so they read back bit for bit (Double's shortest exact text).
///
/// Reading checks the frame, the sizes the header gives against the file's
/// (before any tensor is allocated), the position's counts (0 to
/// `TrainingCount.maximum`) and the checksum, so a truncated, damaged or
/// foreign file is refused with a `LayerKitError.file` naming the file and
/// the fault. `counters` may hold any Int64 here; restoring them
/// (`Optimizer.importState`) checks them.
public struct TrainingCheckpoint: Sendable {
    /// Which model a checkpoint belongs to: its file's name (for messages),
    /// size and CRC-32. A checkpoint is refused for a model whose size or
    /// CRC-32 differs (`check(model:)`); the name may change.
    public struct ModelIdentity: Codable, Sendable, Equatable {
        /// The model file's name ("mobilenet.onnx").
        public var name: String
        /// The model file's size in bytes.
        public var byteCount: Int
        /// The CRC-32 (zlib's) of the model file's bytes.
        public var crc32: UInt32

        /// The identity of the model file named `name` holding `contents`.
        public init(name: String, contents: Data) {
            self.name = name
            byteCount = contents.count
            crc32 = contents.withUnsafeBytes { CRC32.checksum($0) }
        }
    }

    /// An optimizer's name ("adam") and hyper-parameters by name ("lr",
    /// "beta1", "beta2", "eps", "weight_decay", "momentum"...).
    public struct Optimizer: Codable, Sendable, Equatable {
        /// The optimizer's name.
        public var name: String
        /// Its hyper-parameters.
        public var hyperParameters: [String: Double]

        /// An optimizer record.
        public init(name: String, hyperParameters: [String: Double]) {
            self.name = name
            self.hyperParameters = hyperParameters
        }
    }

    /// A learning-rate schedule's name ("constant", "step", "cosine") and
    /// state by name (base rate, step size, the rate now...).
    public struct Schedule: Codable, Sendable, Equatable {
        /// The schedule's name.
        public var name: String
        /// Its state.
        public var state: [String: Double]

        /// A schedule record.
        public init(name: String, state: [String: Double]) {
            self.name = name
            self.state = state
        }
    }

    /// Optimizer steps taken so far.
    public var step: Int
    /// The epoch in progress (0-based).
    public var epoch: Int
    /// The next mini-batch's index within `epoch`.
    public var batchInEpoch: Int
    /// The seed the run's shuffling started from.
    public var seed: UInt64
    /// Integer state by name: the optimizer's step counts (`step`, `epoch`,
    /// `NAME.step`, `OptimizerState.integers`).
    public var counters: [String: Int]
    /// The sum of the current epoch's mini-batch losses so far (its mean is
    /// reported when the epoch ends).
    public var epochLossSum: Double
    /// The optimizer and its hyper-parameters.
    public var optimizer: Optimizer
    /// The learning-rate schedule and its state.
    public var schedule: Schedule
    /// The model the run trains.
    public var model: ModelIdentity
    /// The saved tensors by name; written in the order of their names.
    public var tensors: [String: Tensor]

    /// A checkpoint holding these values.
    public init(step: Int, epoch: Int, batchInEpoch: Int, seed: UInt64, optimizer: Optimizer, schedule: Schedule,
                model: ModelIdentity, tensors: [String: Tensor], counters: [String: Int] = [:], epochLossSum: Double = 0) {
        self.step = step
        self.epoch = epoch
        self.batchInEpoch = batchInEpoch
        self.seed = seed
        self.counters = counters
        self.epochLossSum = epochLossSum
        self.optimizer = optimizer
        self.schedule = schedule
        self.model = model
        self.tensors = tensors
    }

    /// The format version this LayerKit writes and reads.
    public static let version: UInt32 = 1
    /// The first eight bytes of every checkpoint file.
    static let magic: [UInt8] = [0x89] + Array("LKCKPT".utf8) + [0x0A]
    /// The most header bytes a file may declare: far more than any real
    /// header, small enough that a damaged length cannot cost much.
    static let maxHeaderBytes = 16 << 20
    /// Magic, version and header length.
    private static let prefixBytes = 16

    /// Throws unless the checkpoint was written for `model` (same size and
    /// CRC-32), naming both models.
    public func check(model other: ModelIdentity) throws {
        guard model.byteCount == other.byteCount, model.crc32 == other.crc32 else {
            throw LayerKitError.invalidParameter(
                "the checkpoint was written for model '\(model.name)' (\(model.byteCount) bytes, CRC-32 "
                + "\(Self.hex(model.crc32))), not '\(other.name)' (\(other.byteCount) bytes, CRC-32 \(Self.hex(other.crc32))); "
                + "resume with the model the checkpoint was made for")
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}

// MARK: Writing

extension TrainingCheckpoint {
    /// The checkpoint file's bytes. Throws `LayerKitError.invalidParameter`
    /// for a tensor with an empty name or a hyper-parameter or state value
    /// that is not finite (JSON has no NaN).
    public func data() throws -> Data {
        let names = tensors.keys.sorted()
        if names.contains("") { throw LayerKitError.invalidParameter("a checkpoint tensor has an empty name") }
        let header = Header(step: step, epoch: epoch, batchInEpoch: batchInEpoch, seed: seed, counters: counters,
                            epochLossSum: epochLossSum, optimizer: optimizer, schedule: schedule, model: model,
                            tensors: names.map { Header.Entry(name: $0, shape: tensors[$0]!.shape) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json: Data
        do { json = try encoder.encode(header) } catch {
            throw LayerKitError.invalidParameter("the checkpoint header cannot be written (a value that is not finite?): \(error)")
        }
        var bytes = Self.magic
        Self.append(Self.version, to: &bytes)
        Self.append(UInt32(json.count), to: &bytes)
        bytes += json
        for name in names {
            let tensor = tensors[name]!
            bytes += UnsafeRawBufferPointer(start: tensor.dataPointer, count: tensor.count * 4)
        }
        // Floats are stored in the machine's order above; LayerKit runs on little-endian machines only.
        let checksum = bytes.withUnsafeBytes { CRC32.checksum($0) }
        Self.append(checksum, to: &bytes)
        return Data(bytes)
    }

    /// Writes the checkpoint to `path` atomically (`AtomicFile`): `path`
    /// holds the previous checkpoint or all of this one, never a part.
    public func write(to path: String) throws {
        try writeAtomically(try data(), to: path)
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}

// MARK: Reading

extension TrainingCheckpoint {
    /// Reads the checkpoint file at `path`.
    public init(contentsOf path: String) throws {
        try self.init(data: try RegularFile.contents(path), source: path)
    }

    /// Reads a checkpoint from a file's bytes; `source` names it in errors.
    /// Throws `LayerKitError.file` for a file that is not a checkpoint
    /// (wrong magic), of another format version, truncated or with bytes
    /// after its end, with a damaged checksum, or with a header that does
    /// not describe a checkpoint.
    public init(data: Data, source: String) throws {
        let bytes = [UInt8](data)
        func failure(_ text: String) -> LayerKitError { .file("checkpoint '\(source)': \(text)") }
        func word(at offset: Int) -> UInt32 {
            (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
        }
        let magic = Self.magic
        guard bytes.starts(with: magic.prefix(min(bytes.count, magic.count))), !bytes.isEmpty else {
            throw failure("not a LayerKit training checkpoint (it does not start with the checkpoint magic)")
        }
        guard bytes.count >= Self.prefixBytes + 4 else {
            throw failure("truncated: \(bytes.count) bytes, fewer than the \(Self.prefixBytes + 4) of an empty checkpoint")
        }
        let version = word(at: 8)
        guard version == Self.version else {
            throw failure("format version \(version); this LayerKit reads version \(Self.version)")
        }
        let headerBytes = Int(word(at: 12))
        guard (1...Self.maxHeaderBytes).contains(headerBytes) else {
            throw failure("declares a header of \(headerBytes) bytes (at most \(Self.maxHeaderBytes)); the file is damaged")
        }
        guard Self.prefixBytes + headerBytes + 4 <= bytes.count else {
            throw failure("truncated: its \(headerBytes)-byte header runs past the end of its \(bytes.count) bytes")
        }
        let headerRange = Self.prefixBytes..<Self.prefixBytes + headerBytes
        let header = Result { try JSONDecoder().decode(Header.self, from: Data(bytes[headerRange])) }
        // The sizes first: truncation is named as such, not as a bad checksum.
        var tensorBytes: [Int] = []
        if case .success(let header) = header {
            tensorBytes = try header.tensors.map { entry in
                guard let count = try? Tensor.elementCount(of: entry.shape), count <= Int.max / 4 else {
                    throw failure("tensor '\(entry.name)' has shape \(entry.shape), which gives no element count")
                }
                return count * 4
            }
            // The frame's bytes plus every tensor's, checked for overflow at each step.
            let (expected, overflow) = tensorBytes.reduce((headerRange.upperBound + 4, false)) { sum, size in
                let (total, over) = sum.0.addingReportingOverflow(size)
                return (total, sum.1 || over)
            }
            guard !overflow else { throw failure("its tensor shapes describe more bytes than any file holds") }
            // The position goes on being counted from here: a count near Int.max would trap (`TrainingCount`).
            for (field, value) in [("step", header.step), ("epoch", header.epoch), ("batchInEpoch", header.batchInEpoch)] {
                try TrainingCount.check(value, field, failure)
            }
            guard bytes.count >= expected else {
                throw failure("truncated: \(bytes.count) bytes where its header describes \(expected)")
            }
            guard bytes.count == expected else {
                throw failure("\(bytes.count - expected) bytes after the end its header describes (\(expected) bytes)")
            }
        }
        let stored = word(at: bytes.count - 4)
        let computed = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0.dropLast(4))) }
        guard stored == computed else {
            throw failure("checksum mismatch (stored \(Self.hex(stored)), computed \(Self.hex(computed))): the file is damaged")
        }
        let decoded: Header
        switch header {
        case .success(let value): decoded = value
        case .failure(let error): throw failure("the header is not a checkpoint header: \(Self.describe(error))")
        }
        var tensors: [String: Tensor] = [:]
        var offset = headerRange.upperBound
        for (entry, size) in zip(decoded.tensors, tensorBytes) {
            guard !entry.name.isEmpty, tensors[entry.name] == nil else {
                throw failure(entry.name.isEmpty ? "a tensor has an empty name" : "tensor '\(entry.name)' is given twice")
            }
            let tensor = try Tensor(shape: entry.shape)
            bytes.withUnsafeBytes { source in
                UnsafeMutableRawPointer(tensor.dataPointer).copyMemory(from: source.baseAddress! + offset, byteCount: size)
            }
            offset += size
            tensors[entry.name] = tensor
        }
        self.init(step: decoded.step, epoch: decoded.epoch, batchInEpoch: decoded.batchInEpoch, seed: decoded.seed,
                  optimizer: decoded.optimizer, schedule: decoded.schedule, model: decoded.model, tensors: tensors,
                  counters: decoded.counters, epochLossSum: decoded.epochLossSum)
    }

    /// A decoding error in one line: what was wrong and at which key.
    private static func describe(_ error: Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _): return "no '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not valid JSON" : "'\(path)' has the wrong type or value"
        default: return "\(error)"
        }
    }

    /// The JSON header's layout.
    private struct Header: Codable {
        struct Entry: Codable {
            var name: String
            var shape: [Int]
        }
        var step: Int
        var epoch: Int
        var batchInEpoch: Int
        var seed: UInt64
        var counters: [String: Int]
        var epochLossSum: Double
        var optimizer: Optimizer
        var schedule: Schedule
        var model: ModelIdentity
        var tensors: [Entry]
    }
}

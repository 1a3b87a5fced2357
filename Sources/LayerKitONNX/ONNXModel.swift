import LayerKitCore
import Foundation

/// An ONNX model file, decoded: the model's header and its main graph.
///
/// Decoding checks the structure (protobuf framing, field types, IR version
/// 3 to 14, a default-domain opset of at most 28, a graph) but converts
/// nothing: nodes keep their ONNX op types and attributes, initializers
/// their raw data until `ONNXTensor.floats()` or `int64s()` is called.
/// Every error is a `LayerKitError.invalidModel` with one line naming the
/// source, the byte offset and what was being read.
public struct ONNXModel: Sendable {
    /// The IR version of the file format (3 to 14).
    public var irVersion: Int
    /// The operator sets the model imports: domain ("" is the default ONNX
    /// domain) and version.
    public var opsetImports: [(domain: String, version: Int)]
    /// The tool that wrote the model ("pytorch", "onnx.helper"); may be empty.
    public var producerName: String
    /// The producing tool's version; may be empty.
    public var producerVersion: String
    /// The main graph.
    public var graph: ONNXGraph
    /// A classifier's class labels, in the order of its probability output
    /// (a translated Core ML classifier's); nil for other models.
    public var classLabels: [String]? = nil

    /// The IR versions LayerKit reads: 3 to onnx 1.23's (14). A newer IR
    /// may add fields this decoder would skip, so it is refused.
    public static let supportedIRVersions = 3...14
    /// The newest default-domain opset LayerKit reads, onnx 1.23's. Which
    /// ops a model may use is decided per op (`ONNXOpVersions`), not here.
    public static let maxOpset = 28

    /// The version of the default ONNX domain ("" or "ai.onnx") the model imports.
    public var defaultOpset: Int? {
        opsetImports.first { ONNXNode.isDefaultDomain($0.domain) }?.version
    }
}

extension ONNXModel {
    /// Decodes an ONNX model from the bytes of a `.onnx` file; `source` names
    /// it in error messages.
    public init(data: Data, source: String = "ONNX model") throws {
        try self.init(bytes: [UInt8](data), source: source)
    }

    /// Decodes a serialized ONNX `ModelProto` from its bytes, which the
    /// decoder reads in place (`init(data:)` copies a `Data` into them first).
    public init(bytes: [UInt8], source: String = "ONNX model") throws {
        var reader = ProtobufReader(bytes: bytes, message: "ModelProto", source: source)
        self = try ONNXModel(decoding: &reader)
    }

    /// Reads and decodes the `.onnx` file at `url`, with the external data
    /// files its tensors name (as torch writes models over 2 GiB: a data
    /// file beside the model). Throws `LayerKitError.file` when a file
    /// cannot be read.
    public init(contentsOf url: URL) throws {
        try self.init(bytes: try RegularFile.bytes(url.path), source: url.lastPathComponent)
        try loadExternalData(from: url.deletingLastPathComponent())
    }

    /// The first initializer whose data is still in an external file, if
    /// any: a model decoded from bytes alone has no folder to read it from.
    public var unreadExternalTensor: ONNXTensor? {
        graph.initializerNames.lazy.compactMap { graph.initializers[$0] }.first { $0.hasExternalData }
    }

    /// Reads every initializer's external data from files in `folder`.
    /// A location must be a relative path inside the folder (no absolute
    /// path, no `..`, no symbolic link out of it): a model file must not
    /// make LayerKit read anything else on the machine.
    ///
    /// Each distinct range (file, offset, length) is read once and shared
    /// by every tensor naming it (tied weights; Swift's arrays share the
    /// bytes until one is changed): a small model whose hundreds of
    /// initializers name one range must not cost hundreds of copies. The
    /// distinct ranges may hold no more bytes than the files they are in
    /// (ranges that overlap without being equal could otherwise still
    /// multiply the files' size), so memory stays bounded by the data files.
    mutating func loadExternalData(from folder: URL) throws {
        var files: [String: (descriptor: Int32, size: Int)] = [:]
        defer { files.values.forEach { close($0.descriptor) } }
        var ranges: [ONNXTensor.ExternalRange: [UInt8]] = [:]
        var (readBytes, fileBytes) = (0, 0)
        for name in graph.initializerNames {
            guard var tensor = graph.initializers[name], let location = tensor.externalDataLocation else { continue }
            let file: (descriptor: Int32, size: Int)
            if let open = files[location] {
                file = open
            } else {
                file = try ONNXModel.openExternal(location, in: folder, tensor: name)
                files[location] = file
                fileBytes += file.size
            }
            guard let range = try tensor.externalRange(fileSize: file.size) else { continue }
            if let bytes = ranges[range] {
                tensor.setExternalBytes(bytes)
            } else {
                readBytes += range.length  // cannot overflow: each length is at most its file's size
                guard readBytes <= fileBytes else {
                    throw LayerKitError.invalidModel(
                        "tensor '\(name)': the model's external data ranges overlap: they hold \(readBytes) bytes, more "
                        + "than the \(fileBytes) bytes of the data files they are in")
                }
                let bytes = try ONNXTensor.read(range, from: file.descriptor, tensor: name)
                ranges[range] = bytes
                tensor.setExternalBytes(bytes)
            }
            graph.initializers[name] = tensor
        }
    }

    /// Opens the data file at `location` in `folder`: its descriptor and size.
    private static func openExternal(_ location: String, in folder: URL,
                                     tensor: String) throws -> (descriptor: Int32, size: Int) {
        let parts = location.split(separator: "/", omittingEmptySubsequences: false)
        guard !location.hasPrefix("/"), !parts.contains(where: { $0 == ".." || $0.isEmpty }) else {
            throw LayerKitError.invalidModel("tensor '\(tensor)': external data location '\(location)' must be a "
                                             + "relative path inside the model's folder")
        }
        let path = folder.appendingPathComponent(location).path
        let descriptor = try RegularFile.open(path)
        // The folder's and the file's real paths: a symbolic link may not lead out.
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let base = realpath(folder.path, &buffer).map { String(cString: $0) }
        let real = realpath(path, &buffer).map { String(cString: $0) }
        guard let base, let real, real.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            close(descriptor)
            throw LayerKitError.invalidModel("tensor '\(tensor)': external data '\(location)' is outside the model's folder")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            close(descriptor)
            throw LayerKitError.file("cannot read external data '\(location)' of tensor '\(tensor)'")
        }
        return (descriptor, Int(status.st_size))
    }
}

/// A computation graph: nodes in topological order, the constant tensors
/// they use, and the graph's inputs and outputs.
public struct ONNXGraph: Sendable, Equatable {
    /// The graph's name; may be empty.
    public var name: String
    /// The nodes, in the order of the file (ONNX requires a topological order).
    public var nodes: [ONNXNode]
    /// The constant tensors (weights), by name.
    public var initializers: [String: ONNXTensor]
    /// The initializers' names in the order of the file.
    public var initializerNames: [String]
    /// The graph inputs. Before IR version 4 this list may also name initializers.
    public var inputs: [ONNXValueInfo]
    /// The graph outputs.
    public var outputs: [ONNXValueInfo]
    /// Types and shapes of intermediate values, where the file gives them.
    public var valueInfo: [ONNXValueInfo]

    /// The inputs that must be fed: those that are not initializers.
    public var feedInputs: [ONNXValueInfo] {
        inputs.filter { initializers[$0.name] == nil }
    }
}

/// One operator application.
public struct ONNXNode: Sendable, Equatable {
    /// The node's name; may be empty (names are optional in ONNX).
    public var name: String
    /// The operator ("Conv", "Swish").
    public var opType: String
    /// The operator's domain: "" (or "ai.onnx") for standard ONNX ops, or a
    /// custom domain such as "layerkit".
    public var domain: String
    /// The names of the values the node reads; an empty string marks an
    /// omitted optional input.
    public var inputs: [String]
    /// The names of the values the node writes; an empty string marks an
    /// omitted optional output.
    public var outputs: [String]
    /// The node's attributes, by name.
    public var attributes: [String: ONNXAttribute]

    /// Whether the node belongs to the default ONNX domain.
    public var isStandard: Bool { Self.isDefaultDomain(domain) }

    /// How error messages name the node: "node 'conv1' (Conv)", or the
    /// first output when the node has no name.
    public var label: String {
        let name = name.isEmpty ? (outputs.first.map { "producing '\($0)'" } ?? "#?") : "'\(name)'"
        return "node \(name) (\(domain.isEmpty ? "" : domain + ".")\(opType))"
    }

    /// Whether `domain` names the default ONNX operator set.
    static func isDefaultDomain(_ domain: String) -> Bool { domain.isEmpty || domain == "ai.onnx" }
}

/// A node attribute's value. Sparse tensors, tensor lists and types are
/// refused at decoding.
public enum ONNXAttribute: Sendable, Equatable {
    /// A float (`f`).
    case float(Float)
    /// An int64 (`i`).
    case int(Int)
    /// A UTF-8 string (`s`; bytes that are not UTF-8 become U+FFFD).
    case string(String)
    /// A constant tensor (`t`).
    case tensor(ONNXTensor)
    /// A list of floats (`floats`).
    case floats([Float])
    /// A list of int64s (`ints`).
    case ints([Int])
    /// A list of strings (`strings`).
    case strings([String])
    /// A graph (`g`): the body of If, Loop or Scan. It may read values of
    /// the graphs around it by name (ONNX's lexical scoping).
    case graph(ONNXGraph)
    /// A list of graphs (`graphs`).
    case graphs([ONNXGraph])
    /// A value's type (`tp`): Optional's element type.
    case type(ValueForm)

    /// The kind of value, as error messages name it ("ints").
    public var kind: String {
        switch self {
        case .float: return "float"
        case .int: return "int"
        case .string: return "string"
        case .tensor: return "tensor"
        case .floats: return "floats"
        case .ints: return "ints"
        case .strings: return "strings"
        case .graph: return "graph"
        case .graphs: return "graphs"
        case .type: return "type"
        }
    }
}

/// A graph input's, output's or intermediate value's type and shape.
public struct ONNXValueInfo: Sendable, Equatable {
    /// The value's name.
    public var name: String
    /// The tensor's element type, or nil when the file does not give a type.
    public var elementType: ONNXDataType?
    /// The tensor's dimensions, or nil when the file gives no shape (rank unknown).
    public var dims: [ONNXDimension]?
    /// The value's form when it is a sequence, optional or map (then
    /// `elementType` and `dims` are nil); nil for a tensor.
    public var form: ValueForm? = nil
}

/// One dimension of a value's shape.
public enum ONNXDimension: Sendable, Equatable, CustomStringConvertible {
    /// A fixed size.
    case value(Int)
    /// A named size fixed only at run time ("batch", "N").
    case symbol(String)
    /// A size the file does not give.
    case unknown

    /// The size, the symbol, or "?".
    public var description: String {
        switch self {
        case .value(let v): return String(v)
        case .symbol(let s): return s
        case .unknown: return "?"
        }
    }
}

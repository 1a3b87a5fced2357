/// The header of a `.npy` file (format versions 1.0 to 3.0): the element type,
/// the shape, and where the elements start.
///
/// The header is a Python dict literal such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, parsed here
/// by a small literal parser rather than by pattern matching, so spacing,
/// quoting and trailing commas vary freely, as they do between numpy versions.
struct NPYHeader {
    /// The `descr` of each element type a `.npy` file can hold and LayerKit
    /// reads: little-endian IEEE floats, integers and booleans (one-byte
    /// types under either byte-order mark).
    static let descriptors: [String: ElementType] = [
        "<f2": .float16, "<f4": .float32, "<f8": .float64,
        "|i1": .int8, "<i1": .int8, "<i2": .int16, "<i4": .int32, "<i8": .int64,
        "|u1": .uint8, "<u1": .uint8, "<u2": .uint16, "<u4": .uint32, "<u8": .uint64,
        "|b1": .bool, "<b1": .bool,
    ]

    /// The `descr` numpy writes for `type`, nil for types numpy has no dtype for.
    static func descriptor(of type: ElementType) -> String? {
        switch type {
        case .float16: "<f2"
        case .float32: "<f4"
        case .float64: "<f8"
        case .int8: "|i1"
        case .uint8: "|u1"
        case .bool: "|b1"
        case .int16: "<i2"
        case .int32: "<i4"
        case .int64: "<i8"
        case .uint16: "<u2"
        case .uint32: "<u4"
        case .uint64: "<u8"
        default: nil
        }
    }

    /// The element type, and its `descr` as the file wrote it.
    let elementType: ElementType
    let descr: String
    /// The bytes of one element: the type's width, or for numpy's
    /// fixed-width unicode strings (`<U`n, `.string`) 4 per character.
    let itemSize: Int
    /// The array's shape, C (row-major) order.
    let shape: [Int]
    /// The number of elements, the product of `shape`.
    let count: Int
    /// The byte offset of the first element.
    let dataOffset: Int

    /// The six bytes every `.npy` file starts with.
    static let magic: [UInt8] = [0x93] + Array("NUMPY".utf8)

    /// Parses the header at the start of `bytes` and checks that the elements
    /// it announces are all there: `bytes` is the whole input, or its first
    /// bytes when `totalLength` gives the whole input's length (a file read
    /// in pieces). `source` names the input in error messages.
    init(parsing bytes: UnsafeRawBufferPointer, totalLength: Int? = nil, source: String) throws {
        let total = totalLength ?? bytes.count
        func malformed(_ message: String) -> LayerKitError { .file("\(source): \(message)") }
        func unsupported(_ message: String) -> LayerKitError { .unsupported("\(source): \(message)") }

        guard bytes.count >= 8, bytes.prefix(6).elementsEqual(Self.magic) else {
            throw malformed("not a .npy file (bad magic bytes)")
        }
        let (major, minor) = (bytes[6], bytes[7])
        // Version 1.0 stores the header length in 2 bytes; 2.0 and 3.0 in 4.
        let lengthSize: Int
        switch major {
        case 1: lengthSize = 2
        case 2, 3: lengthSize = 4
        default: throw unsupported(".npy format version \(major).\(minor) is not supported (1.0, 2.0 and 3.0 are)")
        }
        let start = 8 + lengthSize
        guard bytes.count >= start else { throw malformed("file ends inside the header length") }
        let headerLength = (0..<lengthSize).reduce(0) { $0 | Int(bytes[8 + $1]) << (8 * $1) }
        guard headerLength <= total - start else {
            throw malformed("header length \(headerLength) runs past the end of the data (\(total) bytes)")
        }
        guard headerLength <= bytes.count - start else {
            throw malformed("header length \(headerLength) is more than the \(bytes.count - start) bytes LayerKit reads")
        }
        // 1.0 and 2.0 headers are Latin-1 and 3.0 is UTF-8, but every byte the
        // parser needs to recognise is ASCII, which both decode alike.
        let text = String(decoding: bytes[start..<start + headerLength], as: UTF8.self)
        var parser = LiteralParser(text, source: source)
        let fields = try parser.dict()

        func field(_ key: String) throws -> Literal {
            guard let value = fields[key] else { throw malformed("header has no '\(key)' entry") }
            return value
        }
        for key in fields.keys where !["descr", "fortran_order", "shape"].contains(key) {
            throw malformed("unexpected key '\(key)' in header")
        }
        switch try field("descr") {
        case .string(let descr):
            if let type = Self.descriptors[descr] {
                (elementType, self.descr, itemSize) = (type, descr, type.byteWidth ?? 1)
            } else if let characters = Self.unicodeLength(descr) {
                // UTF-32 code units, `characters` of them per element.
                let (size, overflow) = characters.multipliedReportingOverflow(by: 4)
                guard !overflow else { throw malformed("dtype '\(descr)' is too wide") }
                (elementType, self.descr, itemSize) = (.string, descr, size)
            } else if descr == "|O" {
                throw unsupported("object arrays (dtype '|O') are Python pickles, which LayerKit does not read; save "
                                  + "strings as fixed-width unicode: a.astype(str)")
            } else {
                throw unsupported("dtype '\(descr)' is not supported; save little-endian numbers, booleans or "
                                  + "unicode strings, e.g. a.astype('<f4'), a.astype('<i8') or a.astype(str)")
            }
        default:
            throw unsupported("structured dtypes are not supported; save a plain array")
        }
        switch try field("fortran_order") {
        case .bool(false): break
        case .bool(true):
            throw unsupported("Fortran-order arrays are not supported; save np.ascontiguousarray(a)")
        default:
            throw malformed("'fortran_order' must be True or False")
        }
        guard case .tuple(let items) = try field("shape") else {
            throw malformed("'shape' must be a tuple of integers")
        }
        shape = try items.map { item in
            guard case .integer(let extent) = item else { throw malformed("'shape' must be a tuple of integers") }
            return extent
        }
        guard shape.allSatisfy({ $0 >= 0 }) else {
            throw malformed("shape \(Self.pythonTuple(shape)) has a negative dimension")
        }
        do {
            count = try Tensor.elementCount(of: shape)
        } catch {
            throw malformed("shape \(Self.pythonTuple(shape)) has too many elements")
        }
        dataOffset = start + headerLength
        // Checked before anything is allocated, so a lying header cannot ask
        // for more memory than the input itself occupies.
        let (needed, overflow) = count.multipliedReportingOverflow(by: itemSize)
        guard !overflow, total - dataOffset >= needed else {
            throw malformed("data is truncated: shape \(Self.pythonTuple(shape)) of \(descr) needs \(needed) bytes, found \(total - dataOffset)")
        }
    }

    /// The characters per element of a little-endian numpy unicode
    /// `descr` (`<U5`: 5), nil for other descrs.
    static func unicodeLength(_ descr: String) -> Int? {
        guard descr.hasPrefix("<U"), let length = Int(descr.dropFirst(2)), length >= 0 else { return nil }
        return length
    }

    /// A version 1.0 header for `<f4` data of `shape` in C order, padded with
    /// spaces and ended with a newline so the data starts at a multiple of 64
    /// bytes, as numpy writes it. Headers too long for 1.0 get version 2.0.
    static func encoded(shape: [Int], descr: String = "<f4") -> [UInt8] {
        let dict = Array("{'descr': '\(descr)', 'fortran_order': False, 'shape': \(pythonTuple(shape)), }".utf8)
        let lengthSize = dict.count + 64 > 0xFFFF ? 4 : 2
        let prefixSize = 8 + lengthSize
        let total = (prefixSize + dict.count + 1 + 63) / 64 * 64
        let headerLength = total - prefixSize
        let lengthBytes = (0..<lengthSize).map { UInt8(truncatingIfNeeded: headerLength >> (8 * $0)) }
        return magic + [lengthSize == 2 ? 1 : 2, 0] + lengthBytes + dict
            + Array(repeating: UInt8(ascii: " "), count: headerLength - dict.count - 1) + [UInt8(ascii: "\n")]
    }

    /// `shape` as a Python tuple: `()`, `(5,)`, `(2, 3)`.
    static func pythonTuple(_ shape: [Int]) -> String {
        shape.count == 1 ? "(\(shape[0]),)" : "(" + shape.map(String.init).joined(separator: ", ") + ")"
    }
}

/// The Python literals a `.npy` header can hold.
private enum Literal {
    case string(String)
    case integer(Int)
    case bool(Bool)
    case pythonNone
    case tuple([Literal])
    case list([Literal])
}

/// A recursive-descent parser for the dict literal of a `.npy` header.
private struct LiteralParser {
    private let scalars: [Unicode.Scalar]
    private let source: String
    private var index = 0
    /// Open tuples and lists around the current value. numpy nests at most
    /// three deep (structured dtypes); the limit keeps the recursion, and so
    /// the stack, bounded whatever the header says.
    private var depth = 0
    private static let maxDepth = 32

    init(_ text: String, source: String) {
        scalars = Array(text.unicodeScalars)
        self.source = source
    }

    /// Parses the whole text as one dict with string keys.
    mutating func dict() throws -> [String: Literal] {
        guard peek() == "{" else { throw error("header is not a Python dict") }
        index += 1
        var fields: [String: Literal] = [:]
        try items(closing: "}") { parser in
            guard parser.peek() == "'" || parser.peek() == "\"" else { throw parser.error("header dict keys must be strings") }
            let key = try parser.string()
            try parser.expect(":")
            fields[key] = try parser.value()
        }
        guard peek() == nil else { throw error("unexpected text after the header dict") }
        return fields
    }

    private mutating func value() throws -> Literal {
        guard let next = peek() else { throw error("header ends in the middle of a value") }
        switch next {
        case "'", "\"":
            return .string(try string())
        case "(", "[":
            guard depth < Self.maxDepth else { throw error("header nests deeper than \(Self.maxDepth) levels") }
            depth += 1
            defer { depth -= 1 }
            index += 1
            var elements: [Literal] = []
            try items(closing: next == "(" ? ")" : "]") { elements.append(try $0.value()) }
            return next == "(" ? .tuple(elements) : .list(elements)
        case "0"..."9", "-", "+":
            return .integer(try integer())
        case "a"..."z", "A"..."Z", "_":
            let word = String(String.UnicodeScalarView(take { $0.properties.isAlphabetic || $0 == "_" }))
            switch word {
            case "True": return .bool(true)
            case "False": return .bool(false)
            case "None": return .pythonNone
            default: throw error("unexpected name '\(word)' in header")
            }
        default:
            throw error("unexpected '\(next)' in header")
        }
    }

    /// Comma-separated items up to `closing`; a trailing comma is allowed.
    private mutating func items(closing: Unicode.Scalar, _ item: (inout LiteralParser) throws -> Void) throws {
        while true {
            if peek() == closing {
                index += 1
                return
            }
            try item(&self)
            if peek() == "," {
                index += 1
            } else if peek() != closing {
                throw error("expected ',' or '\(closing)' in header")
            }
        }
    }

    private mutating func string() throws -> String {
        let quote = scalars[index]
        index += 1
        var result = String.UnicodeScalarView()
        while index < scalars.count, scalars[index] != quote {
            // A backslash escapes the next character; numpy never needs more.
            if scalars[index] == "\\" { index += 1 }
            if index < scalars.count { result.append(scalars[index]) }
            index += 1
        }
        guard index < scalars.count else { throw error("unterminated string in header") }
        index += 1
        return String(result)
    }

    private mutating func integer() throws -> Int {
        let negative = scalars[index] == "-"
        if scalars[index] == "-" || scalars[index] == "+" { index += 1 }
        let digits = take { ("0"..."9").contains($0) }
        guard !digits.isEmpty else { throw error("expected digits in header") }
        var magnitude = 0
        for digit in digits {
            let (shifted, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int(digit.value - 48))
            guard !overflow1, !overflow2 else { throw error("integer too large in header") }
            magnitude = sum
        }
        // Python 2 wrote long integers with an L suffix: (3L, 4L).
        if index < scalars.count, scalars[index] == "L" || scalars[index] == "l" { index += 1 }
        return negative ? -magnitude : magnitude
    }

    /// Consumes and returns the longest run of scalars matching `predicate`.
    private mutating func take(while predicate: (Unicode.Scalar) -> Bool) -> [Unicode.Scalar] {
        let begin = index
        while index < scalars.count, predicate(scalars[index]) { index += 1 }
        return Array(scalars[begin..<index])
    }

    private mutating func expect(_ scalar: Unicode.Scalar) throws {
        guard peek() == scalar else { throw error("expected '\(scalar)' in header") }
        index += 1
    }

    /// The next non-space scalar, or nil at the end; skips the spaces.
    private mutating func peek() -> Unicode.Scalar? {
        while index < scalars.count, scalars[index].properties.isWhitespace { index += 1 }
        return index < scalars.count ? scalars[index] : nil
    }

    private func error(_ message: String) -> LayerKitError {
        .file("\(source): \(message)")
    }
}

/// What a compute shader's SPIR-V says about its interface: the workgroup
/// size (`local_size_x/y/z`) and the size of its push-constant block, read
/// from the module so that neither has to be repeated beside the GLSL.
public struct SPIRVReflection: Sendable {
    /// `local_size_x/y/z` of the entry point.
    public let workgroupSize: (UInt32, UInt32, UInt32)
    /// Bytes of the push-constant block (the end of its last member), 0 without one.
    public let pushConstantSize: Int
    /// The bindings the shader never writes: images and buffer blocks
    /// declared `readonly` (SPIR-V `NonWritable` on the variable, or on every
    /// member of the block). A command buffer orders work by what it writes.
    public let readOnlyBindings: Set<Int>

    private enum Op {
        static let executionMode: UInt32 = 16, typeInt: UInt32 = 21, typeFloat: UInt32 = 22
        static let typeVector: UInt32 = 23, typeMatrix: UInt32 = 24, typeArray: UInt32 = 28
        static let typeStruct: UInt32 = 30, typePointer: UInt32 = 32, constant: UInt32 = 43
        static let variable: UInt32 = 59, decorate: UInt32 = 71, memberDecorate: UInt32 = 72
    }
    private static let localSizeMode: UInt32 = 17, pushConstantClass: UInt32 = 9
    private static let offsetDecoration: UInt32 = 35, arrayStrideDecoration: UInt32 = 6
    private static let matrixStrideDecoration: UInt32 = 7
    private static let bindingDecoration: UInt32 = 33, nonWritableDecoration: UInt32 = 24

    /// Reads `spirv`; throws for a module that is not SPIR-V, has no
    /// literal `local_size`, or a push-constant member of a type it cannot size.
    public init(spirv: [UInt32]) throws {
        guard spirv.count > 5, spirv[0] == 0x0723_0203 else {
            throw VulkanError.shaderCompilation("not a SPIR-V module")
        }
        var localSize: (UInt32, UInt32, UInt32)?
        var types: [UInt32: [UInt32]] = [:]  // result id -> (opcode, operands after the result)
        var constants: [UInt32: UInt32] = [:]
        var pointers: [UInt32: (storage: UInt32, type: UInt32)] = [:]
        var pushBlockPointer: UInt32?
        var offsets: [UInt32: [UInt32: Int]] = [:]
        var arrayStrides: [UInt32: Int] = [:]
        var matrixStrides: [UInt32: [UInt32: Int]] = [:]
        var variables: [UInt32: UInt32] = [:]  // variable id -> its pointer type
        var bindings: [UInt32: Int] = [:]  // variable id -> binding
        var nonWritableVariables = Set<UInt32>()
        var nonWritableMembers: [UInt32: Set<UInt32>] = [:]  // struct id -> members
        var at = 5
        while at < spirv.count {
            let count = Int(spirv[at] >> 16), opcode = spirv[at] & 0xFFFF
            guard count > 0, at + count <= spirv.count else {
                throw VulkanError.shaderCompilation("truncated SPIR-V instruction at word \(at)")
            }
            let w = Array(spirv[(at + 1)..<(at + count)])
            switch opcode {
            case Op.variable where w.count >= 3: variables[w[1]] = w[0]
            case Op.decorate where w.count >= 3 && w[1] == Self.bindingDecoration: bindings[w[0]] = Int(w[2])
            case Op.decorate where w.count >= 2 && w[1] == Self.nonWritableDecoration: nonWritableVariables.insert(w[0])
            case Op.memberDecorate where w.count >= 3 && w[2] == Self.nonWritableDecoration:
                nonWritableMembers[w[0], default: []].insert(w[1])
            default: break
            }
            switch opcode {
            case Op.executionMode where w.count >= 5 && w[1] == Self.localSizeMode:
                localSize = (w[2], w[3], w[4])
            case Op.typeInt, Op.typeFloat, Op.typeVector, Op.typeMatrix, Op.typeArray, Op.typeStruct:
                types[w[0]] = [opcode] + w.dropFirst()
            case Op.typePointer where w.count >= 3: pointers[w[0]] = (w[1], w[2])
            case Op.constant where w.count >= 3: constants[w[1]] = w[2]
            case Op.variable where w.count >= 3 && w[2] == Self.pushConstantClass: pushBlockPointer = w[0]
            case Op.decorate where w.count >= 3 && w[1] == Self.arrayStrideDecoration: arrayStrides[w[0]] = Int(w[2])
            case Op.memberDecorate where w.count >= 4 && w[2] == Self.offsetDecoration:
                offsets[w[0], default: [:]][w[1]] = Int(w[3])
            case Op.memberDecorate where w.count >= 4 && w[2] == Self.matrixStrideDecoration:
                matrixStrides[w[0], default: [:]][w[1]] = Int(w[3])
            default: break
            }
            at += count
        }
        guard let localSize else {
            throw VulkanError.shaderCompilation("the shader declares no literal local_size_x/y/z")
        }
        workgroupSize = localSize

        /// Bytes type `id` occupies; `matrixStride` for a matrix member.
        func size(of id: UInt32, matrixStride: Int? = nil) throws -> Int {
            guard let t = types[id], let opcode = t.first else {
                throw VulkanError.shaderCompilation("push constants: unknown type %\(id)")
            }
            switch opcode {
            case Op.typeInt, Op.typeFloat: return Int(t[1]) / 8
            case Op.typeVector: return try Int(t[2]) * size(of: t[1])
            case Op.typeMatrix: return try Int(t[2]) * (matrixStride ?? size(of: t[1]))
            case Op.typeArray:
                guard let length = constants[t[2]], let stride = arrayStrides[id] else {
                    throw VulkanError.shaderCompilation("push constants: array %\(id) has no literal length or stride")
                }
                return Int(length) * stride
            default:
                var end = 0
                for (member, memberType) in t.dropFirst().enumerated() {
                    let m = UInt32(member)
                    guard let offset = offsets[id]?[m] else {
                        throw VulkanError.shaderCompilation("push constants: member \(member) of %\(id) has no offset")
                    }
                    end = try max(end, offset + size(of: memberType, matrixStride: matrixStrides[id]?[m]))
                }
                return end
            }
        }
        var readOnly = Set<Int>()
        for (variable, binding) in bindings {
            if nonWritableVariables.contains(variable) {
                readOnly.insert(binding)
            } else if let pointer = variables[variable], let block = pointers[pointer]?.type,
                      let members = types[block], members.first == Op.typeStruct,
                      nonWritableMembers[block]?.count == members.count - 1 {
                readOnly.insert(binding)
            }
        }
        readOnlyBindings = readOnly
        if let pushBlockPointer, let block = pointers[pushBlockPointer] {
            pushConstantSize = try size(of: block.type)
        } else {
            pushConstantSize = 0
        }
    }
}

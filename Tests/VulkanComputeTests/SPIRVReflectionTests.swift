import Testing
@testable import VulkanCompute

/// The reflection reads what the GLSL declares; expected sizes are the
/// std430 rules worked by hand.
struct SPIRVReflectionTests {
    @Test func readsWorkgroupSizeAndPushConstantBlockSize() throws {
        let source = """
            #version 450
            layout(local_size_x = 8, local_size_y = 4, local_size_z = 2) in;
            layout(std430, binding = 0) buffer Out { float v[]; };
            layout(push_constant) uniform P { uint a; int b; float c[3]; uvec4 d; mat4 e; } p;
            void main() { v[0] = float(p.a) + float(p.b) + p.c[2] + float(p.d.w) + p.e[3][3]; }
            """
        let reflection = try SPIRVReflection(spirv: ShaderCompiler.shared.compile(source: source, name: "reflect.comp"))
        #expect([reflection.workgroupSize.0, reflection.workgroupSize.1, reflection.workgroupSize.2] == [8, 4, 2])
        // a 0, b 4, c 8..<20, d aligned to 16 at 32..<48, e at 48..<112.
        #expect(reflection.pushConstantSize == 112)
    }

    @Test func aShaderWithoutPushConstantsHasSizeZero() throws {
        let source = """
            #version 450
            layout(local_size_x = 1) in;
            layout(std430, binding = 0) buffer Out { float v[]; };
            void main() { v[0] = 1.0; }
            """
        let reflection = try SPIRVReflection(spirv: ShaderCompiler.shared.compile(source: source, name: "plain.comp"))
        #expect(reflection.pushConstantSize == 0)
    }

    @Test func refusesWordsThatAreNotSPIRV() {
        #expect(throws: VulkanError.self) { try SPIRVReflection(spirv: [1, 2, 3, 4, 5, 6]) }
    }
}

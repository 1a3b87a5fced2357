import Foundation
import Testing
@testable import VulkanCompute

struct ShaderCompilerTests {
    static let broken = """
        #version 450
        layout(local_size_x = 1) in;
        void main() {
            float x = 1.0;
            x = y + 1.0;
        }
        """

    @Test func compileErrorsNameTheShaderAndLine() throws {
        #expect(throws: VulkanError.self) {
            try ShaderCompiler.shared.compile(source: Self.broken, name: "broken.comp")
        }
        do {
            _ = try ShaderCompiler.shared.compile(source: Self.broken, name: "broken.comp")
        } catch {
            let message = "\(error)"
            #expect(message.contains("broken.comp:5:"), "\(message)")
            #expect(message.contains("'y'"), "\(message)")
        }
    }

    @Test func definesAndIncludesKeepLineNumbers() throws {
        let source = """
            #version 450
            #extension GL_GOOGLE_include_directive : require
            #include "helpers.glsl"
            layout(local_size_x = 1) in;
            void main() {
                float v = HELPER(1.0) + nope;
            }
            """
        do {
            _ = try ShaderCompiler.shared.compile(source: source, name: "lines.comp",
                                                  includes: ["helpers.glsl": "float twice(float v) { return 2.0 * v; }"],
                                                  defines: [("HELPER(v)", "twice(v)")])
            Issue.record("compiled a shader that uses an undeclared name")
        } catch {
            #expect("\(error)".contains("lines.comp:6:"), "\(error)")
        }
        #expect(throws: VulkanError.self) {
            try ShaderCompiler.shared.compile(source: source, name: "missing.comp")
        }
    }

    @Test func aSecondCompileOfTheSameSourceIsACacheHit() throws {
        let source = "#version 450\nlayout(local_size_x = 2) in;\nvoid main() {}\n"
        // Counted by name: other tests compile other shaders meanwhile, in parallel.
        let name = "cache-hit-\(UUID().uuidString).comp"
        let first = try ShaderCompiler.shared.compile(source: source, name: name)
        #expect(ShaderCompiler.shared.compileCount(name: name) == 1)
        let second = try ShaderCompiler.shared.compile(source: source, name: name)
        #expect(first == second)
        #expect(first.first == 0x0723_0203)  // the SPIR-V magic number
        #expect(ShaderCompiler.shared.compileCount(name: name) == 1)
    }
}

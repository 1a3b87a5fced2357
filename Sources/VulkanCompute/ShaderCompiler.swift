import CGlslang
import Foundation

/// Compiles GLSL compute shaders to SPIR-V with glslang, once per distinct
/// source: a first compile costs ~175 ms on lavapipe machines, a cache hit
/// nothing.
public final class ShaderCompiler: @unchecked Sendable {
    /// The process-wide compiler (glslang itself is initialized once per process).
    public static let shared = ShaderCompiler()

    private let lock = NSLock()
    private var cache: [String: [UInt32]] = [:]

    private var compilesByName: [String: Int] = [:]

    /// How many sources named `name` were compiled: a count that work on
    /// other threads, under other names, does not move.
    public func compileCount(name: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return compilesByName[name, default: 0]
    }

    /// SPIR-V for `source`. `#include "file"` lines are replaced by
    /// `includes[file]`, and `defines` (`NAME` or `NAME(args)` → body) are
    /// inserted after `#version`, with `#line` directives so errors keep the
    /// source's line numbers. Errors name the shader: `elementwise.comp:12: ...`.
    public func compile(source: String, name: String, includes: [String: String] = [:],
                        defines: [(name: String, value: String)] = []) throws -> [UInt32] {
        var text = try ShaderCompiler.resolveIncludes(source, name: name, includes: includes)
        if !defines.isEmpty {
            text = ShaderCompiler.insert(defines: defines, into: text)
        }
        lock.lock(); defer { lock.unlock() }
        if let words = cache[text] { return words }
        var result = lk_glsl_compile_compute(text)
        defer { lk_glsl_result_free(&result) }
        let log = result.log.map { String(cString: $0) } ?? ""
        guard let words = result.words, result.word_count > 0 else {
            throw VulkanError.shaderCompilation(ShaderCompiler.describe(log: log, name: name))
        }
        let spirv = Array(UnsafeBufferPointer(start: words, count: result.word_count))
        cache[text] = spirv
        compilesByName[name, default: 0] += 1
        return spirv
    }

    /// Inlines `#include "file"` lines and drops the
    /// `GL_GOOGLE_include_directive` extension line that offline compilers
    /// (glslangValidator in CMake) need for the same sources. An included
    /// file's own includes are inlined too (a fused epilogue's file includes
    /// the ops it calls); each file once per shader, as `#pragma once`.
    static func resolveIncludes(_ source: String, name: String,
                                includes: [String: String]) throws -> String {
        var included = Set<String>()
        return try resolveIncludes(source, name: name, includes: includes, included: &included, depth: 0)
    }

    private static func resolveIncludes(_ source: String, name: String, includes: [String: String],
                                        included: inout Set<String>, depth: Int) throws -> String {
        guard source.contains("#include") else { return source }
        var lines: [String] = []
        for (number, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#extension GL_GOOGLE_include_directive") {
                lines.append("")
            } else if trimmed.hasPrefix("#include") {
                let file = trimmed.dropFirst("#include".count)
                    .trimmingCharacters(in: CharacterSet(charactersIn: " \t\"<>"))
                guard let body = includes[file], depth < 8 else {
                    throw VulkanError.shaderCompilation(
                        "\(name):\(number + 1): cannot include \"\(file)\"\(depth < 8 ? "" : " (includes nested too deep)")")
                }
                if included.insert(file).inserted {
                    lines.append(try resolveIncludes(body, name: "\(name) (\(file))", includes: includes,
                                                     included: &included, depth: depth + 1))
                }
                lines.append("#line \(number + 2)")
            } else {
                lines.append(String(line))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Puts `#define` lines right after the `#version` line (GLSL allows
    /// nothing before it), then restores the line numbering.
    static func insert(defines: [(name: String, value: String)], into source: String) -> String {
        var lines = source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let versionLine = lines.firstIndex { $0.trimmingCharacters(in: .whitespaces).hasPrefix("#version") }
        let at = versionLine.map { $0 + 1 } ?? 0
        let inserted = defines.map { "#define \($0.name) \($0.value)" } + ["#line \(at + 1)"]
        lines.insert(contentsOf: inserted, at: at)
        return lines.joined(separator: "\n")
    }

    /// Turns glslang's `ERROR: 0:12: 'x' : message` lines into `name:12: 'x' : message`.
    static func describe(log: String, name: String) -> String {
        let errors = log.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("ERROR: ") else { return nil }
            let rest = line.dropFirst("ERROR: ".count)
            let parts = rest.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if parts.count == 3, let lineNumber = Int(parts[1]) {
                return "\(name):\(lineNumber):\(parts[2])"
            }
            return "\(name): \(rest)"
        }.filter { !$0.contains("compilation terminated") }
        let detail = errors.isEmpty ? log.trimmingCharacters(in: .whitespacesAndNewlines) : errors.joined(separator: "; ")
        return "GLSL compile error in \(detail.isEmpty ? name : detail)"
    }
}

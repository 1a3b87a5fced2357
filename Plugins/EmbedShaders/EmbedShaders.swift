import Foundation
import PackagePlugin

/// Turns every `Shaders/*.comp` and `*.glsl` file of the package into a Swift string
/// constant (`EmbeddedShaders.source(named:)`), and every `Models/*.onnx` into
/// bytes (`EmbeddedShaders.models`), compiled into the target. Shaders and the
/// demo's model then travel inside the binary: nothing is looked up next to it.
@main
struct EmbedShaders: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let shaderDirectory = context.package.directoryURL.appending(path: "Shaders")
        let shaders = try FileManager.default
            .contentsOfDirectory(at: shaderDirectory, includingPropertiesForKeys: nil)
            .filter { ["comp", "glsl"].contains($0.pathExtension) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let modelDirectory = context.package.directoryURL.appending(path: "Models")
        let models = ((try? FileManager.default.contentsOfDirectory(at: modelDirectory, includingPropertiesForKeys: nil)) ?? [])
            .filter { $0.pathExtension == "onnx" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedShaders.swift")
        return [.buildCommand(
            displayName: "Embedding \(shaders.count) shaders and \(models.count) models",
            executable: try context.tool(named: "shader-embedder").url,
            arguments: [output.path] + (shaders + models).map(\.path),
            inputFiles: shaders + models,
            outputFiles: [output]
        )]
    }
}

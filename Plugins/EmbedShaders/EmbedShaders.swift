import Foundation
import PackagePlugin

/// Turns every `Shaders/*.comp` and `*.glsl` file of the package into a Swift string
/// constant (`EmbeddedShaders.source(named:)`), compiled into the target.
/// Shaders then travel inside the binary: nothing is looked up next to it.
@main
struct EmbedShaders: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let shaderDirectory = context.package.directoryURL.appending(path: "Shaders")
        let shaders = try FileManager.default
            .contentsOfDirectory(at: shaderDirectory, includingPropertiesForKeys: nil)
            .filter { ["comp", "glsl"].contains($0.pathExtension) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedShaders.swift")
        return [.buildCommand(
            displayName: "Embedding \(shaders.count) shaders",
            executable: try context.tool(named: "shader-embedder").url,
            arguments: [output.path] + shaders.map(\.path),
            inputFiles: shaders,
            outputFiles: [output]
        )]
    }
}

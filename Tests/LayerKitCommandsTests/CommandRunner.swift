import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// Runs `layerkit` commands in-process and keeps what they print.
final class CommandRunner: @unchecked Sendable {
    private let lock = NSLock()
    private var outText = ""
    private var errorText = ""

    var out: String { lock.lock(); defer { lock.unlock() }; return outText }
    var error: String { lock.lock(); defer { lock.unlock() }; return errorText }

    /// Appends `text` to what standard error received (for consoles made in a test).
    func recordError(_ text: String) { lock.lock(); errorText += text; lock.unlock() }

    /// Appends `text` to what standard output received (for consoles made in a test).
    func recordOut(_ text: String) { lock.lock(); outText += text; lock.unlock() }

    /// Runs `arguments` and returns the exit status.
    func run(_ arguments: [String]) -> Int32 {
        let console = Console(out: { [self] text in lock.lock(); outText += text; lock.unlock() },
                              error: { [self] text in lock.lock(); errorText += text; lock.unlock() })
        return LayerKitCommands.main(arguments, console: console)
    }

    /// A new empty directory for one test's files, inside `scratchRoot`.
    static func scratchDirectory() throws -> String {
        let path = scratchRoot + "/\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs `layerkit run` on `folder/model.onnx` with each input from
    /// `folder/<input>.npy`, writing each output to `<scratch>/<output>.npy`;
    /// returns the scratch directory. Requires exit status 0.
    static func runFixture(_ folder: URL, inputs: [String], outputs: [String], backend: String) throws -> String {
        let directory = try scratchDirectory()
        var words = ["run", folder.appendingPathComponent("model.onnx").path, "--backend", backend]
        for input in inputs { words += ["--input", "\(input)=\(folder.appendingPathComponent("\(input).npy").path)"] }
        for output in outputs { words += ["--output", "\(output)=\(directory)/\(output).npy"] }
        let runner = CommandRunner()
        let status = runner.run(words)
        try #require(status == 0, "\(folder.lastPathComponent) on \(backend): \(runner.error)")
        return directory
    }

    /// One folder for every scratch directory of this test process, removed
    /// when the process exits: tests hand their paths to the CLI and to
    /// each other, so no single test can know when its files are done with.
    static let scratchRoot: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("layerkit-cli-\(UUID().uuidString)").path
        atexit { try? FileManager.default.removeItem(atPath: CommandRunner.scratchRoot) }
        return path
    }()

    /// Runs the built `layerkit` executable (beside the test bundle) with
    /// `environment` added, for behaviour that depends on the process
    /// environment such as a missing Vulkan driver, or (`virtualMemoryKiB`)
    /// under `ulimit -v`, through /bin/sh.
    static func runExecutable(_ arguments: [String], environment: [String: String], virtualMemoryKiB: Int? = nil) throws
        -> (status: Int32, out: String, error: String) {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let process = Process()
        let layerkit = directory.appendingPathComponent("layerkit")
        if let limit = virtualMemoryKiB {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -v \(limit) && exec \"$0\" \"$@\"", layerkit.path] + arguments
        } else {
            process.executableURL = layerkit
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        // stderr goes to a file, not a second pipe: reading one pipe to its
        // end while the child fills the other (64 KiB, e.g. a sanitizer
        // report) would deadlock both processes.
        let errorPath = try scratchDirectory() + "/stderr"
        guard FileManager.default.createFile(atPath: errorPath, contents: nil),
              let errorFile = FileHandle(forWritingAtPath: errorPath) else {
            throw CocoaError(.fileWriteUnknown)
        }
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = errorFile
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try errorFile.close()
        let errorData = FileManager.default.contents(atPath: errorPath) ?? Data()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self),
                String(decoding: errorData, as: UTF8.self))
    }
}

/// The elements of a `.npy` file written by a test.
func writeNPY(_ values: [Float], shape: [Int], to path: String) throws {
    try Tensor(shape: shape, values: values).writeNPY(to: path)
}

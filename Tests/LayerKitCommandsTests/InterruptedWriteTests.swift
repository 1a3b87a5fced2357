import Foundation
import Testing
import LayerKit

/// Issue 14 class 4: a real `layerkit` process killed while it writes a
/// large output leaves no temporary file and the old output intact. The
/// kill is sent only once the new file is seen half-written (the child's
/// unnamed `O_TMPFILE` descriptor, or the fallback's temporary file, holds
/// bytes), so the test cannot pass by killing too early or too late.
@Suite(.serialized) struct InterruptedWriteTests {
    /// 3000x3000 values: a 36 MB `.npy` whose PNG takes long enough to encode to be caught mid-write.
    static let side = 3000

    /// The scratch directory with the input `x.npy` and an old `y.png`.
    func prepare() throws -> (directory: String, old: Data) {
        let directory = try CommandRunner.scratchDirectory()
        try Tensor.uniform(shape: [1, 1, Self.side, Self.side], in: -1...1, seed: 3).writeNPY(to: "\(directory)/x.npy")
        try Tensor(shape: [1, 1, 2, 2], values: [0, 1, 2, 3]).writeActivationPNG(to: "\(directory)/y.png")
        return (directory, try Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.png")))
    }

    /// Starts `apply` writing `y.png`, waits until its new file holds bytes,
    /// sends `signal` and waits for the end. Returns whether the new file
    /// was seen unnamed (`O_TMPFILE`) and how the process ended.
    func interrupt(_ directory: String, signal: Int32, fallback: Bool) throws
        -> (unnamed: Bool, reason: Process.TerminationReason, status: Int32) {
        // posix_spawn with every signal at its default and none blocked: a child of Process inherits the
        // test runner's mask and dispositions, and a blocked SIGINT would end nothing.
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("layerkit").path
        let arguments = [executable, "apply", "--op", "Relu", "--input", "\(directory)/x.npy",
                         "--output", "\(directory)/y.png", "--backend", "cpu"]
        var environment = ProcessInfo.processInfo.environment
        environment["LAYERKIT_ATOMIC_FALLBACK"] = fallback ? "1" : "0"
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        try #require(posix_spawn(&pid, executable, &actions, &attributes, argv, envp) == 0)
        var unnamed: Bool?
        var status: Int32 = 0
        var ended = false
        let deadline = Date().addingTimeInterval(120)
        while unnamed == nil, !ended, Date() < deadline {
            unnamed = writingFile(pid: pid, directory: directory)
            if unnamed == nil {
                ended = waitpid(pid, &status, WNOHANG) == pid
                usleep(500)
            }
        }
        if !ended {
            if unnamed != nil { kill(pid, signal) } else { kill(pid, SIGKILL) }
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        try #require(unnamed != nil, "the write was never seen in progress")
        // The wait status: the low 7 bits are the signal that ended the process, 0 for an exit.
        let killedBy = status & 0x7F
        return (unnamed!, killedBy != 0 ? .uncaughtSignal : .exit, killedBy != 0 ? killedBy : (status >> 8) & 0xFF)
    }

    /// Whether process `pid` has a new file in `directory` with bytes in
    /// it: true for an unnamed one (`/proc/<pid>/fd` shows `#inode
    /// (deleted)`), false for a named temporary file, nil for neither yet.
    func writingFile(pid: Int32, directory: String) -> Bool? {
        let fds = "/proc/\(pid)/fd"
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\(fd)"),
                  target.hasPrefix(directory + "/"), !target.hasSuffix("/x.npy") else { continue }
            var status = stat()
            guard stat("\(fds)/\(fd)", &status) == 0, status.st_size > 0 else { continue }
            return target.hasSuffix("(deleted)") && target.contains("/#")
        }
        return nil
    }

    func expectUntouched(_ directory: String, old: Data) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["x.npy", "y.png"], "left behind: \(names)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.png")) == old)
    }

    @Test(arguments: [SIGKILL, SIGINT, SIGTERM])
    func anUnnamedOutputLeavesNothingWhateverTheSignal(signal: Int32) throws {
        let (directory, old) = try prepare()
        let end = try interrupt(directory, signal: signal, fallback: false)
        #expect(end.unnamed, "expected an O_TMPFILE file on this file system")
        #expect(end.reason == .uncaughtSignal && end.status == signal)
        try expectUntouched(directory, old: old)
    }

    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func theFallbacksTemporaryFileIsRemovedBySignals(signal: Int32) throws {
        let (directory, old) = try prepare()
        let end = try interrupt(directory, signal: signal, fallback: true)
        #expect(!end.unnamed)
        // It dies of the signal itself, as a shell sees it (exit 130, 143, 129).
        #expect(end.reason == .uncaughtSignal && end.status == signal)
        try expectUntouched(directory, old: old)
    }

    @Test func withoutASignalTheWriteReplacesTheOldFile() throws {
        // Control: the same command left alone does write, so the checks above see a real interruption.
        let (directory, old) = try prepare()
        let result = try CommandRunner.runExecutable(
            ["apply", "--op", "Relu", "--input", "\(directory)/x.npy", "--output", "\(directory)/y.png", "--backend", "cpu"],
            environment: ["LAYERKIT_ATOMIC_FALLBACK": "1"])
        #expect(result.status == 0, "\(result.error)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["x.npy", "y.png"])
        let new = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/y.png"))
        #expect(new != old)
        #expect(try Tensor(pngFile: "\(directory)/y.png").shape == [1, 1, Self.side, Self.side])
    }
}

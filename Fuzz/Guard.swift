import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The input being run, kept where a crash handler and the watchdog thread
/// can reach it: a crash or a hang then still leaves the input behind.
enum Current {
    nonisolated(unsafe) static let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: Mutator.maxSize)
    nonisolated(unsafe) static var count = 0
    /// Where a crash handler saves the input (a C string, set per target).
    nonisolated(unsafe) static var crashPath: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var target = ""
    /// When the input started, in DispatchTime nanoseconds; 0 between inputs.
    nonisolated(unsafe) static var started: UInt64 = 0
    /// The fuzzing thread's CPU time when the input started, in nanoseconds.
    nonisolated(unsafe) static var startedCPU: UInt64 = 0
    /// The fuzzing thread's CPU-time clock, readable from the watchdog.
    nonisolated(unsafe) static var fuzzingThreadClock = CLOCK_THREAD_CPUTIME_ID
    static let lock = NSLock()

    static func begin(_ input: [UInt8]) {
        let cpu = nanoseconds(CLOCK_THREAD_CPUTIME_ID)
        lock.lock()
        input.withUnsafeBufferPointer { Current.bytes.update(from: $0.baseAddress!, count: $0.count) }
        count = input.count
        started = DispatchTime.now().uptimeNanoseconds
        startedCPU = cpu
        lock.unlock()
    }

    static func end() {
        lock.lock()
        started = 0
        lock.unlock()
    }
}

/// Previous handlers (Swift's backtracer, or the default), restored after ours ran.
nonisolated(unsafe) private var previousActions: [sigaction] = Array(repeating: .init(), count: 65)
private let crashSignals = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP]

/// Saves the input that killed the process, says so, then hands the signal
/// to the previous handler so the process still dies of it (and CI sees it).
/// Only async-signal-safe calls here.
private func onCrash(_ signal: Int32) {
    func say(_ text: UnsafePointer<CChar>) { _ = write(2, text, strlen(text)) }
    if let path = Current.crashPath {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if fd >= 0 {
            _ = write(fd, Current.bytes, Current.count)
            close(fd)
        }
        say("\nfuzz: CRASH (the process died of a signal); input saved to ")
        say(path)
        say("\n")
    }
    sigaction(signal, &previousActions[Int(signal)], nil)
    raise(signal)
}

/// Installs the crash handlers, on their own stack so a stack overflow is caught too.
func installCrashHandlers() {
    var stack = stack_t()
    stack.ss_size = 1 << 16
    stack.ss_sp = UnsafeMutableRawPointer.allocate(byteCount: stack.ss_size, alignment: 16)
    sigaltstack(&stack, nil)
    for signal in crashSignals {
        var action: sigaction = .init()
        action.__sigaction_handler.sa_handler = onCrash
        action.sa_flags = SA_ONSTACK
        sigaction(signal, &action, &previousActions[Int(signal)])
    }
}

private func nanoseconds(_ clock: clockid_t) -> UInt64 {
    var time = timespec()
    clock_gettime(clock, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// A thread that fails the run when one input takes more than `limit`
/// seconds of the fuzzing thread's CPU time, or 10 x `limit` of wall time
/// (a blocked or multi-threaded hang). CPU time, because on a loaded CI
/// machine wall time alone flags inputs that merely waited for a core.
/// Call from the fuzzing thread.
func startWatchdog(limit: Double, findings: String) {
    pthread_getcpuclockid(pthread_self(), &Current.fuzzingThreadClock)
    Thread.detachNewThread {
        while true {
            usleep(100_000)
            Current.lock.lock()
            // Read under the lock: an input that begins after this reading
            // would otherwise seem to have started in the future.
            let cpuNow = nanoseconds(Current.fuzzingThreadClock)
            let (started, startedCPU) = (Current.started, Current.startedCPU)
            let input = started == 0 ? [] : Array(UnsafeBufferPointer(start: Current.bytes, count: Current.count))
            Current.lock.unlock()
            guard started != 0 else { continue }
            let wall = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let cpu = Double(cpuNow > startedCPU ? cpuNow - startedCPU : 0) / 1e9
            if cpu > limit || wall > 10 * limit {
                report("HANG", detail: "one input ran \(String(format: "%.2f", cpu)) s of CPU, \(String(format: "%.2f", wall)) s of wall time (limits \(limit) s, \(10 * limit) s)",
                       target: Current.target, input: input, findings: findings)
                _exit(1)
            }
        }
    }
}

/// The resident set size in MiB, from /proc/self/statm.
func residentMiB() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return (pages * Int(sysconf(Int32(_SC_PAGESIZE)))) >> 20  // >> binds tighter than * in Swift
}

/// Prints a finding with its input (escaped text or hex, the first 512
/// bytes) and saves the input under `findings`, named by kind, target and hash.
func report(_ kind: String, detail: String, target: String, input: [UInt8], findings: String) {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a: one file per distinct input
    for byte in input { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    let path = "\(findings)/\(kind.lowercased())-\(target)-\(String(hash, radix: 16)).bin"
    try? FileManager.default.createDirectory(atPath: findings, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: path, contents: Data(input))
    print("fuzz: \(kind) in \(target): \(detail)")
    print("  input (\(input.count) bytes\(input.count > 512 ? ", first 512" : "")): \(show(input.prefix(512)))")
    print("  saved to \(path); replay: swift run -c release Fuzz \(target) --replay \(path)")
    fflush(nil)  // all streams: the watchdog _exits right after
}

/// Bytes as a Swift string literal when they are mostly printable, else as hex.
func show(_ bytes: ArraySlice<UInt8>) -> String {
    let printable = bytes.filter { $0 >= 0x20 && $0 < 0x7F }.count
    if printable * 10 >= bytes.count * 9 {
        return "\"" + bytes.map { byte -> String in
            switch byte {
            case 0x22: return "\\\""
            case 0x5C: return "\\\\"
            case 0x20..<0x7F: return String(UnicodeScalar(byte))
            default: return "\\u{\(String(byte, radix: 16))}"
            }
        }.joined() + "\""
    }
    return bytes.map { String(format: "%02x", $0) }.joined()
}

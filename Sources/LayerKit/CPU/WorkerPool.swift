#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CKernels
import Foundation
import Synchronization

/// Long-lived helper threads for `forEachChunk`: one job at a time, split
/// into chunks that the caller and the helpers pull from a shared counter.
///
/// `DispatchQueue.concurrentPerform` parks its worker threads between calls,
/// so every call pays a wake-up (a futex wake and a context switch, tens of
/// microseconds) before the second thread starts. Here an idle helper first
/// polls for the next job for `spinNanoseconds` (with a CPU pause hint), and
/// only then blocks on a condition variable, so back-to-back calls (the
/// layers of a network) find their helpers awake, and an idle process uses
/// no CPU. Measured on 2 vCPUs: 2-thread Swish medians 8–13% faster at low
/// load; when other processes hold the cores (load 3–5), 8–10% slower than
/// parking at once, since a polling helper shares its core instead of being
/// woken ahead of the competing process. An adaptive poll time is the next step.
///
/// - One job at a time: ``run(count:chunkSize:chunkCount:threadCount:_:)``
///   returns false, without running anything, while another thread's job is
///   in progress; the caller then uses another way (forEachChunk falls back
///   to `concurrentPerform`).
/// - The calling thread works on its own job and returns once every chunk
///   is done; a helper that joins late finds no chunk left and never calls
///   `body`, so `body` can stay non-escaping.
/// - Code that runs inside a job (on a helper or on the caller) is marked by
///   ``isInsideJob``; forEachChunk runs nested calls inline there.
final class WorkerPool: @unchecked Sendable {
    /// The pool forEachChunk uses: one helper per active processor beyond the
    /// calling thread's. Created on first use.
    static let shared = WorkerPool(threadCount: activeProcessorCount)

    /// The number of helper threads (threadCount - 1).
    let helperCount: Int
    /// How long an idle helper, and a caller waiting for helpers to finish,
    /// poll before they block.
    let spinNanoseconds: UInt64

    // `mutex` guards `current`, `stopping`, `sleepers`, each job's `helpers`
    // and `callerSleeping`, and every write of `generation`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Helpers block here for a new generation.
    private let wakeHelpers: UnsafeMutablePointer<pthread_cond_t>
    /// A caller blocks here for its job's last chunk.
    private let jobFinished: UnsafeMutablePointer<pthread_cond_t>
    /// Bumped for every job and at stop; helpers poll it without the lock.
    private let generation = Atomic<Int>(0)
    private var current: PoolJob?
    private var stopping = false
    private var sleepers = 0
    /// Helpers blocked on `wakeHelpers` (for tests: idle helpers must park).
    private let parked = Atomic<Int>(0)
    private var threads: [pthread_t] = []

    /// Starts `threadCount - 1` helper threads (none for 1 or less).
    init(threadCount: Int, spinMicroseconds: Int = 50) {
        helperCount = max(0, threadCount - 1)
        spinNanoseconds = UInt64(max(0, spinMicroseconds)) * 1000
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        wakeHelpers = .allocate(capacity: 1)
        pthread_cond_init(wakeHelpers, nil)
        jobFinished = .allocate(capacity: 1)
        pthread_cond_init(jobFinished, nil)
        for _ in 0..<helperCount {
            var thread = pthread_t()
            // The thread owns one reference to the pool until it exits.
            let context = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&thread, nil, { context in
                let pool = Unmanaged<WorkerPool>.fromOpaque(context!).takeRetainedValue()
                pool.helperMain()
                return nil
            }, context)
            guard rc == 0 else {
                // Out of threads: run with the helpers that did start.
                Unmanaged<WorkerPool>.fromOpaque(context).release()
                break
            }
            threads.append(thread)
        }
    }

    /// Runs once every helper has exited (each holds a reference until
    /// then), so nothing can be waiting on the mutex or the conditions.
    deinit {
        pthread_cond_destroy(jobFinished)
        jobFinished.deallocate()
        pthread_cond_destroy(wakeHelpers)
        wakeHelpers.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Helpers currently blocked waiting for work.
    var parkedHelperCount: Int { parked.load(ordering: .relaxed) }

    /// Whether the current thread is running a chunk of a pool job.
    static var isInsideJob: Bool { pthread_getspecific(insideJobKey) != nil }

    /// Runs `body` for chunks `0..<chunkCount` (chunk `i` is
    /// `i * chunkSize ..< min(count, (i + 1) * chunkSize)`) on the calling
    /// thread and up to `threadCount - 1` helpers, and returns true when all
    /// are done; returns false at once, running nothing, if the pool is busy
    /// with another job or stopped.
    func run(count: Int, chunkSize: Int, chunkCount: Int, threadCount: Int,
             _ body: @Sendable (Range<Int>) -> Void) -> Bool {
        withoutActuallyEscaping(body) { body in
            let job = PoolJob(body: body, count: count, chunkSize: chunkSize, chunkCount: chunkCount,
                              maxHelpers: min(helperCount, threadCount - 1))
            pthread_mutex_lock(mutex)
            guard current == nil, !stopping else {
                pthread_mutex_unlock(mutex)
                job.body = nil
                return false
            }
            current = job
            generation.wrappingAdd(1, ordering: .releasing)
            let wake = min(sleepers, job.maxHelpers)
            pthread_mutex_unlock(mutex)
            for _ in 0..<wake { pthread_cond_signal(wakeHelpers) }

            let wasInside = Self.isInsideJob
            pthread_setspecific(insideJobKey, insideJobMark)
            _ = job.work()
            if !wasInside { pthread_setspecific(insideJobKey, nil) }

            waitUntilFinished(job)
            pthread_mutex_lock(mutex)
            current = nil
            pthread_mutex_unlock(mutex)
            // Every chunk is done, so no helper reads `body` again (a late one
            // finds the counter past the end); drop it before
            // withoutActuallyEscaping checks that it did not escape.
            job.body = nil
            return true
        }
    }

    /// Stops the helper threads and waits for them to exit; later `run`
    /// calls return false. For pools other than `shared` (tests).
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        generation.wrappingAdd(1, ordering: .releasing)
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(wakeHelpers)
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }

    /// Returns once every chunk of `job` is done: polls for a while, then
    /// blocks until the helper that finishes the last chunk signals.
    private func waitUntilFinished(_ job: PoolJob) {
        if job.isFinished { return }
        let deadline = monotonicNanoseconds() &+ spinNanoseconds
        var polls = 0
        while !job.isFinished {
            lk_cpu_relax()
            polls &+= 1
            if polls & 31 == 0 && monotonicNanoseconds() >= deadline { break }
        }
        if job.isFinished { return }
        pthread_mutex_lock(mutex)
        job.callerSleeping = true
        while !job.isFinished { pthread_cond_wait(jobFinished, mutex) }
        pthread_mutex_unlock(mutex)
    }

    /// A helper thread: wait for a job (poll, then block), join it if it
    /// wants another helper, pull chunks until none are left, repeat.
    private func helperMain() {
        pthread_setspecific(insideJobKey, insideJobMark)
        var seen = 0
        while true {
            var latest = generation.load(ordering: .acquiring)
            if latest == seen {
                let deadline = monotonicNanoseconds() &+ spinNanoseconds
                var polls = 0
                while latest == seen {
                    lk_cpu_relax()
                    polls &+= 1
                    if polls & 31 == 0 && monotonicNanoseconds() >= deadline { break }
                    latest = generation.load(ordering: .acquiring)
                }
            }
            pthread_mutex_lock(mutex)
            while generation.load(ordering: .relaxed) == seen && !stopping {
                sleepers += 1
                parked.wrappingAdd(1, ordering: .relaxed)
                pthread_cond_wait(wakeHelpers, mutex)
                parked.wrappingSubtract(1, ordering: .relaxed)
                sleepers -= 1
            }
            if stopping {
                pthread_mutex_unlock(mutex)
                return
            }
            seen = generation.load(ordering: .relaxed)
            var job: PoolJob?
            if let candidate = current, candidate.helpers < candidate.maxHelpers {
                candidate.helpers += 1
                job = candidate
            }
            pthread_mutex_unlock(mutex)
            if let job, job.work() {
                // This helper finished the last chunk: wake the caller if it
                // stopped polling.
                pthread_mutex_lock(mutex)
                if job.callerSleeping { pthread_cond_signal(jobFinished) }
                pthread_mutex_unlock(mutex)
            }
        }
    }
}

/// One `WorkerPool.run` call.
private final class PoolJob: @unchecked Sendable {
    /// Set until the job is finished; read only by a thread that holds an
    /// unfinished chunk.
    var body: (@Sendable (Range<Int>) -> Void)?
    let count: Int
    let chunkSize: Int
    let chunkCount: Int
    let maxHelpers: Int
    /// Helpers that joined (guarded by the pool's mutex).
    var helpers = 0
    /// Whether the caller blocks on `jobFinished` (guarded by the pool's mutex).
    var callerSleeping = false
    /// The next chunk to take.
    let next = Atomic<Int>(0)
    /// Chunks finished.
    let done = Atomic<Int>(0)

    init(body: @escaping @Sendable (Range<Int>) -> Void, count: Int, chunkSize: Int, chunkCount: Int,
         maxHelpers: Int) {
        self.body = body
        self.count = count
        self.chunkSize = chunkSize
        self.chunkCount = chunkCount
        self.maxHelpers = maxHelpers
    }

    /// True once every chunk's `body` has returned; its writes are then
    /// visible to the thread that saw this.
    var isFinished: Bool { done.load(ordering: .acquiring) == chunkCount }

    /// Pulls and runs chunks until none are left; returns true if this
    /// thread finished the last one.
    func work() -> Bool {
        var finishedLast = false
        while true {
            let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard i < chunkCount else { return finishedLast }
            runChunk(i)
            if done.wrappingAdd(1, ordering: .releasing).newValue == chunkCount { finishedLast = true }
        }
    }

    /// Not inlined so that any retain of `body` for the call is balanced
    /// before the chunk counts as done.
    @inline(never)
    private func runChunk(_ i: Int) {
        body.unsafelyUnwrapped(i * chunkSize..<min(count, (i + 1) * chunkSize))
    }
}

/// Thread-specific flag: non-nil while the thread runs pool work.
private let insideJobKey: pthread_key_t = {
    var key = pthread_key_t()
    let rc = pthread_key_create(&key, nil)
    precondition(rc == 0, "pthread_key_create failed: \(rc)")
    return key
}()

/// The value `insideJobKey` holds on a thread inside a job.
@inline(__always)
private var insideJobMark: UnsafeRawPointer? { UnsafeRawPointer(bitPattern: 1) }

@inline(__always)
private func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

import CLayerKitAPI
import Foundation
import LayerKit

// `lk_profiler` handles are LayerKit `Profiler`s: runs record into them, and
// the trace is `ChromeTrace`'s JSON, written as `layerkit profile --trace` writes it.

@c @implementation
public func lk_profiler_create(_ context: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { _ in try Handle.store(Profiler(), in: out) }
}

@c @implementation
public func lk_profiler_destroy(_ profiler: OpaquePointer?) { Handle.release(profiler) }

@c @implementation
public func lk_profiler_write_trace(_ context: OpaquePointer?, _ profiler: OpaquePointer?,
                                    _ path: UnsafePointer<CChar>?) -> lk_status {
    withContext(context) { context in
        let profiler = try Handle.object(profiler, as: Profiler.self, "the profiler")
        let path = try requireString(path, "the path")
        guard !path.isEmpty else { throw CAPIError.invalidArgument("the path is empty") }
        let device = context.backend.gpu.map { "GPU: \($0.deviceInfo.name)" } ?? "CPU evaluator"
        let trace = try ChromeTrace.json(profiler.spans, title: "LayerKit C API — \(device)",
                                         metadata: ["device": device])
        // Atomic: `path` keeps its old contents unless the whole trace is written.
        try AtomicFile.write(trace, to: path)
    }
}

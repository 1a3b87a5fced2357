import Foundation

/// A profile as Chrome trace-event JSON, which Perfetto
/// (ui.perfetto.dev) and chrome://tracing open: one process, one track
/// (thread) per `ProfileSpan.Track` — GPU kernels, CPU work, transfers —
/// with every span a complete (`X`) event in microseconds, its details
/// (op, shape, workgroup size, bytes, which clock timed it) as `args`.
public enum ChromeTrace {
    /// The thread id of each track in the trace.
    public static func threadID(of track: ProfileSpan.Track) -> Int {
        (ProfileSpan.Track.allCases.firstIndex(of: track) ?? 0) + 1
    }

    /// The trace of `spans`; `title` names the process (say what ran and on
    /// which device) and `metadata` goes into `otherData`.
    public static func json(_ spans: [ProfileSpan], title: String, metadata: [String: String] = [:]) throws -> Data {
        var events: [[String: Any]] = [
            ["name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": ["name": title]],
        ]
        for track in ProfileSpan.Track.allCases {
            let tid = threadID(of: track)
            events.append(["name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": ["name": track.rawValue]])
            events.append(["name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": ["sort_index": tid]])
        }
        for span in spans {
            var args: [String: Any] = ["clock": span.timedOnGPU ? "GPU timestamps" : "host"]
            if let op = span.op { args["op"] = op }
            if let shape = span.shape { args["shape"] = shape.map(String.init).joined(separator: "x") }
            if let size = span.workgroupSize { args["workgroup size"] = size.map(String.init).joined(separator: "x") }
            if let bytes = span.bytes { args["bytes"] = bytes }
            events.append(["name": span.name, "cat": span.kind.rawValue, "ph": "X", "pid": 1,
                           "tid": threadID(of: span.track), "ts": span.start / 1e3, "dur": span.duration / 1e3,
                           "args": args])
        }
        let root: [String: Any] = ["traceEvents": events, "displayTimeUnit": "ns", "otherData": metadata]
        return try JSONSerialization.data(withJSONObject: root, options: [.sortedKeys])
    }
}

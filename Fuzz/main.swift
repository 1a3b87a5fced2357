// A deterministic, seeded mutation fuzzer for every parser a user can feed
// LayerKit: .npy data, PNG and JPEG files, formulas, ONNX models, the CLI's value syntaxes and
// training checkpoints.
//
//   swift run -c release Fuzz <npy|png|jpeg|formula|cli|onnx|onnx-grammar|checkpoint|coreml|mlprogram|tflite|all> [--seconds 30] [--seed 1]
//       [--runs N] [--timeout 1] [--max-rss-mib 1024] [--corpus Fuzz/corpus] [--findings Fuzz/findings]
//   swift run -c release Fuzz <parser> --replay FILE...
//
// Each parser starts from its seed corpus (Fuzz/corpus/<parser>/) and runs
// mutated inputs (see Mutator) until its time is up. It fails, printing the
// input and saving it under Fuzz/findings/, on a crash (the process dies of
// the signal after saving), an input running over --timeout seconds of CPU
// time (or 10 x that of wall time), an
// error of a type the API does not promise, a result breaking an invariant,
// or a resident set over --max-rss-mib. The input sequence depends only on
// --seed; with --runs it is exactly reproducible.
import Foundation
import LayerKit

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}
let targets = arguments.first == "all" ? Target.all : Target.all.filter { $0.name == arguments.first }
guard !targets.isEmpty else {
    let names = Target.all.map(\.name).joined(separator: "|")
    print("usage: Fuzz <\(names)|all> [--seconds N] [--seed S] [--runs N] [--timeout S] [--max-rss-mib M] "
          + "[--corpus DIR] [--findings DIR] | <parser> --replay FILE...")
    exit(2)
}
let settings = Settings(
    seconds: option("--seconds").flatMap(Double.init) ?? 30, seed: option("--seed").flatMap(UInt64.init) ?? 1,
    runs: option("--runs").flatMap(Int.init) ?? .max, maxResidentMiB: option("--max-rss-mib").flatMap(Int.init) ?? 1024,
    corpus: option("--corpus") ?? "Fuzz/corpus", findings: option("--findings") ?? "Fuzz/findings")
installCrashHandlers()
startWatchdog(limit: option("--timeout").flatMap(Double.init) ?? 1, findings: settings.findings)

if let replayIndex = arguments.firstIndex(of: "--replay") {
    let files = arguments[(replayIndex + 1)...].prefix { !$0.hasPrefix("--") }
    exit(replay(targets[0], files: Array(files), settings: settings) ? 0 : 1)
}
var failed = false
for target in targets {
    let (executions, findings) = fuzz(target, settings: settings)
    print("fuzz: \(target.name): \(executions) executions in \(settings.seconds) s (seed \(settings.seed)), "
          + "\(findings) finding\(findings == 1 ? "" : "s")")
    failed = failed || findings > 0
}
exit(failed ? 1 : 0)

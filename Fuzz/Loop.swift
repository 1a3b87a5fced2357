import Foundation
import LayerKit

struct Settings {
    let seconds: Double
    let seed: UInt64
    let runs: Int
    let maxResidentMiB: Int
    let corpus: String
    let findings: String
}

/// Runs one input under the crash handler and watchdog.
private func execute(_ target: Target, _ input: [UInt8]) -> Outcome {
    Current.begin(input)
    defer { Current.end() }
    return target.run(input)
}

private func prepare(_ target: Target, settings: Settings) {
    Current.target = target.name
    free(Current.crashPath)
    Current.crashPath = strdup("\(settings.findings)/crash-\(target.name).bin")
    try? FileManager.default.createDirectory(atPath: settings.findings, withIntermediateDirectories: true)
}

/// The files of `Fuzz/corpus/<target>/`, in name order (so runs are reproducible).
private func seeds(of target: Target, settings: Settings) -> [[UInt8]] {
    let directory = "\(settings.corpus)/\(target.name)"
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    return names.compactMap { FileManager.default.contents(atPath: "\(directory)/\($0)").map { Array($0) } }
}

/// Fuzzes `target` for `settings.seconds` (or `settings.runs` inputs);
/// returns the executions and the findings (each already reported).
func fuzz(_ target: Target, settings: Settings) -> (executions: Int, findings: Int) {
    prepare(target, settings: settings)
    let corpus = seeds(of: target, settings: settings)
    guard !corpus.isEmpty else {
        print("fuzz: \(target.name): no seeds in \(settings.corpus)/\(target.name)")
        return (0, 1)
    }
    // Inputs the parser accepted join the pool, a cheap stand-in for coverage
    // feedback; bounded in number and size (small inputs run fastest).
    var pool = corpus
    var mutator = Mutator(random: SeededGenerator(seed: settings.seed ^ UInt64(target.name.utf8.count) << 32),
                          dictionary: target.dictionary.map { word in
                              target.bytes ? word.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } : Array(word.utf8)
                          }, hotOffsets: target.hotOffsets)
    let deadline = Date().addingTimeInterval(settings.seconds)
    var executions = 0, findings = 0
    while executions < settings.runs, findings < 10, executions < corpus.count || Date() < deadline {
        var input = corpus.indices.contains(executions) ? corpus[executions]
            : mutator.mutate(pool[mutator.below(pool.count)], other: pool[mutator.below(pool.count)])
        if executions >= corpus.count, let fixup = target.fixup, mutator.below(10) != 0 { fixup(&input) }
        switch execute(target, input) {
        case .accepted where executions >= corpus.count && input.count <= 4096:
            if pool.count < 512 { pool.append(input) } else { pool[corpus.count + mutator.below(512 - corpus.count)] = input }
        case .unexpected(let detail):
            findings += 1
            report("FINDING", detail: detail, target: target.name, input: input, findings: settings.findings)
        default: break
        }
        executions += 1
        if executions % 64 == 0, residentMiB() > settings.maxResidentMiB {
            report("MEMORY", detail: "resident set \(residentMiB()) MiB over \(settings.maxResidentMiB) MiB (last input shown)",
                   target: target.name, input: input, findings: settings.findings)
            return (executions, findings + 1)
        }
    }
    return (executions, findings)
}

/// Runs saved inputs through `target`; true when none is a finding.
func replay(_ target: Target, files: [String], settings: Settings) -> Bool {
    prepare(target, settings: settings)
    var clean = true
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else {
            print("fuzz: cannot read \(file)")
            clean = false
            continue
        }
        let outcome = execute(target, Array(data))
        print("\(file): \(outcome)")
        if case .unexpected = outcome { clean = false }
    }
    return clean
}

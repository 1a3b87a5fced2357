import Foundation
import LayerKit

/// `layerkit conformance FOLDER ...`: every test of the onnx package's
/// backend-test layout under each folder, on the CPU and the GPU, with pass
/// counts per folder and the reason for each failure; an `--expect` list
/// turns it into a regression test (a listed case that fails exits 1).
enum ConformanceCommand {
    static func run(_ words: [String], console: Console) throws -> Int32 {
        let arguments = try Arguments(words, command: .conformance)
        guard !arguments.positional.isEmpty else {
            throw UsageError("conformance takes one or more folders of test cases (layerkit help conformance)")
        }
        let which = arguments.value("--backend") ?? "both"
        guard ["cpu", "gpu", "both"].contains(which) else {
            throw UsageError("--backend takes cpu, gpu or both, got '\(which)'")
        }
        let expected = try arguments.value("--expect").map(readExpectations) ?? []
        let threads = try arguments.threads()
        let cpu = try Backend(computeUnits: .cpuOnly, threads: threads, notice: { _ in })
        let gpu = which == "cpu" ? nil : try Backend(computeUnits: .gpu, threads: threads, notice: { _ in })
        let markdown = arguments.has("--markdown")
        var passes = Set<String>()
        var sections: [(folder: String, rows: [[String]], cpu: Int, gpu: Int, total: Int)] = []
        for path in arguments.positional {
            let folder = URL(fileURLWithPath: path)
            let cases = try ONNXTestCase.cases(in: folder)
            let label = folder.lastPathComponent
            var rows: [[String]] = []
            var counts = (cpu: 0, gpu: 0)
            for (k, testCase) in cases.enumerated() {
                var row = [testCase.name]
                var why = ""
                if which != "gpu" {
                    let outcome = testCase.run(on: cpu)
                    row.append(outcome.passed ? "pass" : "FAIL")
                    if outcome.passed { counts.cpu += 1; passes.insert("\(label)/\(testCase.name) cpu") }
                    else { why = outcome.message }
                }
                if let gpu {
                    let outcome = testCase.run(on: gpu, gpuParityAgainst: cpu)
                    row.append((outcome.passed ? "pass" : "FAIL") + " (\(outcome.gpuNodes)/\(outcome.nodes) on GPU)")
                    if outcome.passed { counts.gpu += 1; passes.insert("\(label)/\(testCase.name) gpu") }
                    else if why.isEmpty { why = outcome.message }
                }
                row.append(String(why.prefix(160)))
                rows.append(row)
                if !markdown { console.print("[\(k + 1)/\(cases.count)] \(label)/" + row.joined(separator: "  ")) }
            }
            sections.append((label, rows, counts.cpu, counts.gpu, cases.count))
        }
        let header = ["case"] + (which != "gpu" ? ["CPU"] : []) + (gpu != nil ? ["GPU"] : []) + ["first failure"]
        for section in sections {
            if markdown {
                console.print("### \(section.folder)")
                console.print("")
                console.print("| " + header.joined(separator: " | ") + " |")
                console.print("|" + header.map { _ in "---" }.joined(separator: "|") + "|")
                for row in section.rows {
                    console.print("| " + row.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
                }
                console.print("")
            }
        }
        let totals = sections.map { s in
            "\(s.folder): " + (which != "gpu" ? "CPU \(s.cpu)/\(s.total)" : "") + (which == "both" ? ", " : "")
                + (gpu != nil ? "GPU \(s.gpu)/\(s.total)" : "")
        }
        let all = sections.reduce(into: (cpu: 0, gpu: 0, total: 0)) { $0.cpu += $1.cpu; $0.gpu += $1.gpu; $0.total += $1.total }
        console.print((markdown ? "**Passed**: " : "passed: ") + totals.joined(separator: "; ")
                      + "; all: " + (which != "gpu" ? "CPU \(all.cpu)/\(all.total)" : "")
                      + (which == "both" ? ", " : "") + (gpu != nil ? "GPU \(all.gpu)/\(all.total)" : ""))
        if let path = arguments.value("--passes") {
            let text = "# Cases that passed: layerkit conformance " + arguments.positional.joined(separator: " ")
                + " --backend \(which)\n" + passes.sorted().joined(separator: "\n") + "\n"
            try ReportFile.write(Data(text.utf8), to: path)
        }
        let broken = expected.filter { !passes.contains($0) }
        let new = passes.subtracting(expected).sorted()
        if arguments.value("--expect") != nil, !new.isEmpty {
            console.print("passing but not in the expected list (\(new.count)): " + new.joined(separator: ", "))
        }
        guard broken.isEmpty else {
            console.note("error: \(broken.count) expected case(s) failed: " + broken.joined(separator: ", "))
            return 1
        }
        return 0
    }

    /// The lines `FOLDER/CASE cpu|gpu` of an expectations file (`#` comments and blank lines skipped).
    static func readExpectations(_ path: String) throws -> [String] {
        let text = String(decoding: try RegularFile.contents(path), as: UTF8.self)
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
}

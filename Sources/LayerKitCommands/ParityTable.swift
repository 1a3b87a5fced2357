import Foundation
import LayerKit

/// `layerkit parity --all`: every catalog op with its defaults, its example
/// parameters and, where it takes them, per-channel weights; one table.
enum ParityTable {
    struct Case {
        let definition: OpDefinition
        let parameters: [String: String]
        let perChannel: Bool
        var label: String {
            var parts = parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            if perChannel { parts.append(definition.weightNames.joined(separator: ",") + " per channel") }
            return parts.isEmpty ? "defaults" : parts.joined(separator: " ")
        }
    }

    /// The cases for `definition`: defaults, the example set, and a
    /// per-channel run for ops that accept weights (ops that need weights
    /// get them in every run).
    static func cases(for definition: OpDefinition) -> [Case] {
        let needsWeights = definition.values.contains { $0.defaultValue == nil }
        var cases = [Case(definition: definition, parameters: [:], perChannel: needsWeights)]
        if !definition.example.isEmpty {
            cases.append(Case(definition: definition, parameters: definition.example, perChannel: needsWeights))
        }
        if !needsWeights && !definition.weightNames.isEmpty {
            cases.append(Case(definition: definition, parameters: [:], perChannel: true))
        }
        return cases
    }

    static func run(shape: [Int], seed: UInt64, context: GPUContext, console: Console) throws -> Int32 {
        let channels = shape.count >= 3 ? shape[shape.count - 3] : 1
        console.print("parity of every catalog op, shape \(Tensor.describe(shape)), seed \(seed), "
                      + "device \(context.deviceInfo.name) (\(context.deviceInfo.kind.rawValue))")
        let header = ["op", "parameters", "max abs", "max rel", "ulps", "NMSE", "non-finite", "result"]
        var rows: [[String]] = []
        var failed = 0
        let allCases = OpDefinition.catalog.flatMap { cases(for: $0) }
        let progress = ProgressBar("parity --all", total: allCases.count, console: console)
        defer { progress.finish() }
        for definition in OpDefinition.catalog {
            for testCase in cases(for: definition) {
                defer { progress.advance() }
                let layer = try ElementwiseLayer(definition: definition, parameters: testCase.parameters)
                if testCase.perChannel {
                    // Seeded per-channel values in [0.25, 2]: positive, so every op stays in range.
                    let blob = try Tensor.uniform(shape: [channels], in: 0.25...2, seed: seed &+ 7).values
                    try layer.setWeightData(definition.weightNames.map { _ in
                        blob.withUnsafeBufferPointer { Data(buffer: $0) }
                    })
                }
                let input = try Tensor.uniform(shape: shape, in: definition.inputRange, seed: seed).roundedToHalf()
                let (report, _, _) = try ParityReport.compare(layer, input: input, context: context)
                if !report.passed { failed += 1 }
                rows.append([definition.name, testCase.label, ParityCommand.scientific(report.maxAbsError),
                             ParityCommand.scientific(report.maxRelError), "\(report.maxULPs)",
                             ParityCommand.scientific(report.nmse), "\(report.nonFiniteMismatches)",
                             report.passed ? "PASS" : "FAIL"])
            }
        }
        progress.finish()
        for line in TextTable.lines(header: header, rows: rows) { console.print(line) }
        console.print(failed == 0 ? "PASS: all \(rows.count) cases within |gpu-cpu| <= 0.001 * max(1,|cpu|)"
                                  : "FAIL: \(failed) of \(rows.count) cases")
        return failed == 0 ? 0 : 1
    }
}

/// Left-aligned text columns with a rule under the header.
enum TextTable {
    static func lines(header: [String], rows: [[String]]) -> [String] {
        let widths = header.indices.map { c in ([header] + rows).map { $0[c].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return [line(header), line(widths.map { String(repeating: "-", count: $0) })] + rows.map(line)
    }
}

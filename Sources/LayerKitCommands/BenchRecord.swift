import Foundation
import LayerKit

/// What `layerkit bench --json` prints: one JSON object (fields in Docs/JSON.md).
struct BenchRecord: Encodable {
    /// The format's name and version.
    let schema = "layerkit-bench/1"
    let op: String
    let parameters: String
    let shape: [Int]
    let elements: Int
    let repeats: Int
    let warmup: Int
    let cpu: CPU
    let device: Device?
    let results: [BenchMeasurement]
    /// (end to end with timestamps − without) / without, as a percentage; nil without a GPU.
    let timestampOverheadPercent: Double?

    struct CPU: Encodable {
        let instructionSet: String
        let threads: Int

        /// The CPU evaluator of the current run (`--threads`).
        static var current: CPU { CPU(instructionSet: CPUEvaluator.instructionSet, threads: CPUEvaluator().threadCount) }
    }

    struct Device: Encodable {
        let name: String
        let kind: String
        /// True on a CPU-type device (lavapipe): its GPU figures are emulated.
        let emulated: Bool

        init(name: String, kind: String, emulated: Bool) { (self.name, self.kind, self.emulated) = (name, kind, emulated) }

        /// `context`'s device; nil without one.
        init?(_ context: GPUContext?) {
            guard let context else { return nil }
            self.init(name: context.deviceInfo.name, kind: context.deviceInfo.kind.rawValue,
                      emulated: DeviceNote.isEmulated(context))
        }
    }

    init(op: String, parameters: String, shape: [Int], elements: Int, repeats: Int, warmup: Int,
         context: GPUContext?, results: [BenchMeasurement], timestampOverhead: Double?) {
        (self.op, self.parameters, self.shape, self.elements) = (op, parameters, shape, elements)
        (self.repeats, self.warmup, self.results) = (repeats, warmup, results)
        cpu = .current
        device = Device(context)
        timestampOverheadPercent = timestampOverhead.map { $0 * 100 }
    }

    private enum CodingKeys: String, CodingKey {
        case schema, op, parameters, shape, elements, repeats = "repeat", warmup, cpu, device, results,
             timestampOverheadPercent
    }

    /// One line of JSON with sorted keys.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}

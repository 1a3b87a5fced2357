import Foundation
import LayerKit

/// What `parity MODEL.onnx` and `demo` share: one model's outputs from the
/// GPU and from the CPU evaluator, compared output by output with the
/// parity rule, which for a whole model `parity` widens to what fp16
/// storage alone explains (`twinTolerance`).
enum ModelParity {
    /// One output of the model, both sides and how far apart they are.
    struct Output {
        let name: String
        let report: ParityReport
        let gpu: Tensor
        let cpu: Tensor
        /// `|twin - cpu| / max(1, |cpu|)` at worst, where the twin is the CPU
        /// storing every value in fp16 (`Model.predictStoringHalf`); nil
        /// when the comparison had no twin.
        let twinError: Double?
    }

    /// The bound on a whole model's GPU output: twice the error its fp16
    /// twin shows, and never below the per-layer 1e-3. Model-zoo cases use
    /// the same rule with onnxruntime's twin (Scripts/model_zoo_common.py).
    static func twinTolerance(_ twinError: Double) -> Double { max(1e-3, 2 * twinError) }

    /// `inputs` rounded to fp16: the GPU stores them so, and the CPU reads
    /// the same values (parity, as defined). An input fp16 storage cannot
    /// keep (`HalfRange`) stays as given: rounding it would destroy the
    /// very values parity should be about, and the GPU model's placement
    /// runs its readers on the CPU in fp32.
    static func rounded(_ inputs: [String: Tensor]) throws -> [String: Tensor] {
        try inputs.mapValues { HalfRange(checking: $0) == nil ? try $0.roundedToHalf() : $0 }
    }

    /// The warning line of a value fp16 storage cannot keep, with what
    /// LayerKit does about it.
    static func warning(_ finding: HalfRange.Finding) -> String {
        let consequence = switch finding.origin {
        case .input: "kept as given (not rounded to fp16); nodes reading it run on the CPU in fp32"
        case .constant: "nodes reading it run on the CPU in fp32"
        case .computed: "a GPU node writing it stores it in fp16 and loses it"
        }
        return "warning: fp16 range: \(finding); \(consequence)"
    }

    /// The outputs `names` (in that order) of a GPU run against a CPU run;
    /// with the CPU's fp16 `twin`, each within `twinTolerance` of its error.
    static func compare(gpu: [String: Tensor], cpu: [String: Tensor], twin: [String: Tensor]? = nil,
                        outputs names: [String]) throws -> [Output] {
        try names.map { name in
            let (g, c) = (try value(gpu, name), try value(cpu, name))
            let twinError = try twin.map { try ParityReport(gpu: try value($0, name), cpu: c).maxRelError }
            let report = try ParityReport(gpu: g, cpu: c, tolerance: twinError.map(twinTolerance) ?? 1e-3)
            return Output(name: name, report: report, gpu: g, cpu: c, twinError: twinError)
        }
    }

    /// The output `name` of a run.
    static func value(_ outputs: [String: Tensor], _ name: String) throws -> Tensor {
        guard let tensor = outputs[name] else { throw LayerKitError.invalidModel("no output '\(name)'") }
        return tensor
    }
}

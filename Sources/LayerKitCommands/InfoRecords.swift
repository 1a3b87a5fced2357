import Foundation
import LayerKit

/// What `inspect --json`, `ops --json` and `devices --json` print: one
/// JSON object each, with a versioned `schema` (fields in Docs/JSON.md).
enum InfoRecords {
    struct Inspect: Encodable {
        let schema = "layerkit-inspect/1"
        let model: String
        let irVersion: Int
        let producer: String
        let opsets: [Opset]
        let device: BenchRecord.Device?
        let parameterCount: Int
        let weightBytes: Int
        let inputs: [Value]
        let outputs: [Value]
        let nodes: [Node]
        /// Each reason nodes are refused, with its count; empty when the model runs.
        let unsupported: [Unsupported]

        struct Unsupported: Encodable { let reason: String; let count: Int }

        struct Opset: Encodable { let domain: String; let version: Int }
        /// A model input or output; the type by ONNX's name ("FLOAT") and each
        /// dimension as text ("1", "N").
        struct Value: Encodable {
            let name: String
            let dataType: String
            let dimensions: [String]

            init(_ value: Model.ValueDescription) {
                name = value.name
                dataType = value.dataType?.onnxName ?? "untyped"
                dimensions = value.dimensions.map(\.description)
            }
        }
        struct Node: Encodable {
            let name: String
            let opType: String
            let domain: String
            let outputShapes: [[Int]]
            /// `cpu`, `gpu`, or absent for a node without work (or one that cannot run).
            let placement: String?
            let cpuReason: String?
            /// For a model that cannot run, or whose plan waits for input values: `runs`, `folded at load`,
            /// `REFUSED: why`, `not reached (...)`, `runs, planned per value of 'ids'`.
            let status: String?
        }

        /// The survey, with `model`'s placements when it loaded (it runs).
        init(_ survey: ModelSurvey, model: Model?, path: String) {
            (self.model, irVersion, producer) = (path, survey.irVersion, survey.producer)
            opsets = survey.opsets.map { Opset(domain: $0.domain.isEmpty ? "ai.onnx" : $0.domain, version: $0.version) }
            device = model.flatMap { BenchRecord.Device($0.backend.gpu) }
            (parameterCount, weightBytes) = (survey.parameterCount, survey.weightBytes)
            inputs = survey.inputs.map { Value($0) }
            outputs = (model?.outputs ?? survey.outputs).map { Value($0) }
            unsupported = survey.unsupported.map { Unsupported(reason: $0.reason, count: $0.count) }
            if let model, !model.nodes.isEmpty {
                nodes = model.nodes.map {
                    Node(name: $0.name, opType: $0.opType, domain: $0.domain, outputShapes: $0.outputShapes,
                         placement: $0.placement.map { $0.isGPU ? "gpu" : "cpu" }, cpuReason: $0.cpuReason, status: nil)
                }
            } else {
                nodes = survey.nodes.map {
                    Node(name: $0.name, opType: $0.opType, domain: $0.domain, outputShapes: [], placement: nil,
                         cpuReason: nil, status: InspectCommand.describe($0.status))
                }
            }
        }
    }

    struct Ops: Encodable {
        let schema = "layerkit-ops/1"
        let ops: [Op]

        struct Op: Encodable {
            let name: String
            /// `name=default` each, and a choice as `name=a|b`; empty for none.
            let parameters: [String]
            let weights: [String]
            /// The formula, absent for a custom layer.
            let formula: String?
            let cpu: Bool
            let gpu: Bool
        }
    }

    struct Devices: Encodable {
        let schema = "layerkit-devices/1"
        let cpu: BenchRecord.CPU
        let devices: [Device]
        /// The index of the chosen device, absent when none is.
        let chosen: Int?
        let reason: String?

        struct Device: Encodable {
            let index: Int
            let name: String
            let kind: String
            let apiVersion: String
            let shaderFloat16: Bool
            let rgba16fStorageImages: Bool
            let timestamps: Bool
            let timestampValidBits: UInt32
            let timestampPeriodNs: Float
            let maxImageDimension2D: UInt32
            let maxImageArrayLayers: UInt32
        }

        init(_ survey: GPUDeviceSurvey?, reason: String?) {
            cpu = .current
            devices = (survey?.devices ?? []).map {
                Device(index: $0.index, name: $0.name, kind: $0.kind.rawValue, apiVersion: $0.apiVersion,
                       shaderFloat16: $0.supportsFloat16, rgba16fStorageImages: $0.supportsRGBA16FStorage,
                       timestamps: $0.supportsTimestamps, timestampValidBits: $0.timestampValidBits,
                       timestampPeriodNs: $0.timestampPeriod, maxImageDimension2D: $0.maxImageDimension2D,
                       maxImageArrayLayers: $0.maxImageArrayLayers)
            }
            chosen = survey?.chosen?.index
            self.reason = reason
        }
    }
}

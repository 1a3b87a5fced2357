import Foundation
import Testing
@testable import LayerKit

/// The built-in style-transfer network (`Models/style.onnx`, by
/// `Scripts/generate_style_model.py`) on the demo's image, against
/// onnxruntime's output on the same fp16-rounded image: within 1e-3 on the
/// CPU, within the parity rule on the GPU, every node of it on the GPU.
@Suite struct StyleModelTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/style")

    /// The demo image as the demo draws it (the commands module's
    /// `DemoImage`), fp16-rounded: the script's copy.
    static func input() throws -> Tensor {
        try Tensor(npyFile: fixtures.appendingPathComponent("demo_input.npy").path)
    }

    static func run(_ units: ComputeUnits) throws -> (model: Model, output: Tensor) {
        let data = try #require(BuiltInModels.data(named: BuiltInModels.styleName))
        let model = try Model(data: data, computeUnits: units)
        let outputs = try model.predict(inputs: [model.inputs[0].name: try input()])
        return (model, try #require(outputs[model.outputs[0].name]))
    }

    static func worst(_ output: Tensor, relativeTo scale: (Float) -> Float) throws -> Float {
        let reference = try Tensor(npyFile: fixtures.appendingPathComponent("demo_output.npy").path)
        #expect(output.shape == reference.shape)
        var worst: Float = 0
        for i in 0..<reference.count { worst = max(worst, abs(output[i] - reference[i]) / scale(reference[i])) }
        return worst
    }

    @Test func theCPUMatchesOnnxruntime() throws {
        let (_, output) = try Self.run(.cpuOnly)
        let worst = try Self.worst(output) { _ in 1 }
        print("style CPU: max |error| \(worst)")
        #expect(worst <= 1e-3)
    }

    @Test func theGPUMatchesOnnxruntimeWithinTheParityRule() throws {
        let (model, output) = try Self.run(.gpu)
        #expect(model.nodes.filter { $0.placement != nil }.allSatisfy { $0.placement?.isGPU == true },
                "\(model.nodes.filter { $0.placement?.isGPU != true }.map { "\($0.name) \(String(describing: $0.placement))" })")
        let worst = try Self.worst(output) { max(1, abs($0)) }
        print("style GPU: max |error| / max(1, |ref|) \(worst)")
        #expect(worst <= 1e-3)
    }
}

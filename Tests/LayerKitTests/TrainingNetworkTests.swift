import Foundation
import LayerKitONNX
import Testing
@testable import LayerKit

/// Whole small networks trained by LayerKit against PyTorch float64 autograd
/// (Tests/LayerKitTests/Fixtures/Training, written by
/// Scripts/generate_training_references.py): gradients of every parameter,
/// BatchNormalization's running statistics, 20 Adam steps, and the GPU
/// against the CPU.
@Suite struct TrainingNetworkTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Training")

    static func fixture(_ name: String) throws -> Tensor { try Tensor(npyFile: directory.appendingPathComponent(name).path) }
    static func model(_ name: String) throws -> ONNXModel { try ONNXModel(contentsOf: directory.appendingPathComponent(name)) }

    /// max |a - b| / max(1, max |b|): the measure for gradients.
    static func relativeError(_ a: Tensor, _ b: Tensor) -> Double {
        var worst = 0.0, scale = 1.0
        for i in 0..<b.count {
            worst = max(worst, abs(Double(a[i]) - Double(b[i])))
            scale = max(scale, abs(Double(b[i])))
        }
        return worst / scale
    }

    static func pass(_ net: String, backend: Backend, selection: TrainableSelection = .all) throws -> TrainingPass {
        try TrainingPass(model: model("\(net).onnx"), registry: .shared, backend: backend, loss: .crossEntropy,
                         selection: selection, batchSize: 4)
    }

    static let cpu: Backend = try! Backend(computeUnits: .cpuOnly)

    @Test(arguments: ["swish_net", "bn_net"])
    func gradientsMatchPyTorchFloat64(net: String) throws {
        let pass = try Self.pass(net, backend: Self.cpu)
        let (loss, gradients) = try pass.lossAndGradients(input: Self.fixture("x.npy"), target: Self.fixture("labels.npy"))
        let reference = try Self.fixture("\(net).loss.npy")[0]
        #expect(abs(loss - Double(reference)) <= 1e-5 * max(1, abs(Double(reference))), "loss \(loss) vs \(reference)")
        #expect(Set(gradients.keys) == Set(pass.trainable))
        for name in pass.trainable {
            let expected = try Self.fixture("\(net).grad.\(name).npy")
            let error = Self.relativeError(try #require(gradients[name]), expected)
            #expect(error <= 1e-5, "\(net) d(loss)/d(\(name)): error \(error)")
        }
    }
}

import Foundation
import LayerKitONNX

/// The optimizers of ai.onnx.preview.training (Adagrad, Momentum, Adam):
/// one step on any number of tensors, as ONNX's reference computes it,
/// in Double and rounded to each tensor's float type.
extension TypedKernels {
    /// The update of one optimizer: given R, T and per tensor its X, G and
    /// state values (one list per state input), the new X and states.
    typealias OptimizerStep = (_ rate: Double, _ count: Int64, _ x: [Double], _ g: [Double], _ states: [[Double]]) -> [[Double]]

    /// R, T, then X1...Xn, G1...Gn and `states` lists of n each; outputs the
    /// new X1...Xn then each state's n new values.
    static func optimizer(_ node: ONNXNodeContext, _ inputs: [TypedTensor?], states: Int, attributes: [String],
                          _ step: OptimizerStep) throws -> [TypedTensor]? {
        try node.requireAttributes(attributes)
        let rate = try input(0, inputs, node), count = try scalarInteger(input(1, inputs, node), "T", node)
        guard rate.count == 1, rate.elementType.isFloatingPoint else { throw node.error("R must be a float scalar, got \(rate)") }
        let tensors = try (2..<inputs.count).map { try input($0, inputs, node) }
        guard tensors.count % (2 + states) == 0, !tensors.isEmpty else {
            throw node.error("takes R, T and \(2 + states) lists of equal length (X, G and the states), got \(inputs.count) inputs")
        }
        let n = tensors.count / (2 + states)
        var outputs = [[TypedTensor]](repeating: [], count: 1 + states)
        for i in 0..<n {
            let group = (0..<(2 + states)).map { tensors[$0 * n + i] }
            guard group.allSatisfy({ $0.shape == group[0].shape && $0.elementType.isFloatingPoint }) else {
                throw node.error("X, G and state \(i) must be float tensors of one shape, got \(group)")
            }
            let values = step(rate.double(at: 0), count, group[0].doubles(), group[1].doubles(), group.dropFirst(2).map { $0.doubles() })
            for (k, value) in values.enumerated() {
                outputs[k].append(try TypedTensor(group[k == 0 ? 0 : k + 1].elementType, shape: group[0].shape,
                                                  doubles: value))
            }
        }
        return outputs.flatMap { $0 }
    }

    /// Adagrad-1: h += g², x -= r g / (√h + epsilon), r = R / (1 + T decay_factor),
    /// g = G + norm_coefficient X.
    static func adagrad(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let (decay, epsilon, norm) = (Double(try node.float("decay_factor", default: 0)), Double(try node.float("epsilon", default: 0)),
                                      Double(try node.float("norm_coefficient", default: 0)))
        return try optimizer(node, inputs, states: 1, attributes: ["decay_factor", "epsilon", "norm_coefficient"]) { rate, t, x, g, states in
            let r = rate / (1 + Double(t) * decay)
            let grads = zip(x, g).map { norm * $0 + $1 }
            let h = zip(states[0], grads).map { $0 + $1 * $1 }
            return [(0..<x.count).map { x[$0] - r * grads[$0] / (h[$0].squareRoot() + epsilon) }, h]
        }
    }

    /// Momentum-1: v = alpha v + beta' g (beta' = beta, 1 at T = 0); x -= R v,
    /// or with mode "nesterov" x -= R (g + alpha v); g = G + norm_coefficient X.
    static func momentum(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let (alpha, beta, norm) = (Double(try node.float("alpha", default: 0)), Double(try node.float("beta", default: 0)),
                                   Double(try node.float("norm_coefficient", default: 0)))
        let mode = try node.string("mode", default: "standard")
        guard mode == "standard" || mode == "nesterov" else { throw node.error("mode '\(mode)' is not standard or nesterov") }
        return try optimizer(node, inputs, states: 1, attributes: ["alpha", "beta", "mode", "norm_coefficient"]) { rate, t, x, g, states in
            let grads = zip(x, g).map { norm * $0 + $1 }
            let v = zip(states[0], grads).map { alpha * $0 + (t > 0 ? beta : 1) * $1 }
            let moved = mode == "nesterov" ? (0..<x.count).map { grads[$0] + alpha * v[$0] } : v
            return [zip(x, moved).map { $0 - rate * $1 }, v]
        }
    }

    /// Adam-1: v = alpha v + (1 - alpha) g, h = beta h + (1 - beta) g²,
    /// x = (1 - norm_coefficient_post) (x - R' v / (√h + epsilon)), R' the
    /// bias-corrected rate for T > 0; g = G + norm_coefficient X.
    static func adam(_ node: ONNXNodeContext, _ inputs: [TypedTensor?]) throws -> [TypedTensor]? {
        let (alpha, beta) = (Double(try node.float("alpha", default: 0.9)), Double(try node.float("beta", default: 0.999)))
        let epsilon = Double(try node.float("epsilon", default: 1e-6))
        let (norm, post) = (Double(try node.float("norm_coefficient", default: 0)), Double(try node.float("norm_coefficient_post", default: 0)))
        let attributes = ["alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"]
        return try optimizer(node, inputs, states: 2, attributes: attributes) { rate, t, x, g, states in
            let grads = zip(x, g).map { norm * $0 + $1 }
            let v = zip(states[0], grads).map { alpha * $0 + (1 - alpha) * $1 }
            let h = zip(states[1], grads).map { beta * $0 + (1 - beta) * $1 * $1 }
            let r = t > 0 ? rate * (1 - Foundation.pow(beta, Double(t))).squareRoot() / (1 - Foundation.pow(alpha, Double(t))) : rate
            return [(0..<x.count).map { (1 - post) * (x[$0] - r * v[$0] / (h[$0].squareRoot() + epsilon)) }, v, h]
        }
    }
}

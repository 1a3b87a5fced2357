/// A layer the trainer can backpropagate through: from the gradient of the
/// loss with respect to its outputs, the gradients with respect to its inputs
/// and to its trainable parameters. A layer that is not one stops training
/// with an error naming its node when it lies between a trainable parameter
/// and the loss.
///
/// Backward work runs through a `GradientRunner`: what can be written as
/// other layers (a derivative formula, a product, a reduction, a transposed
/// convolution) runs on the runner's backend, the GPU included, and CPU-only
/// work says so (`GradientRunner.cpu`), so the placement report names where
/// every backward op ran.
protocol DifferentiableLayer: Layer {
    /// The parameters the layer holds (weights packed at creation, not graph
    /// inputs), by role, with the index of the ONNX node input each comes
    /// from: Conv `weights` 1 and `bias` 2, Gemm `B` 1 and `C` 2, a formula's
    /// per-channel value names 1, 2, ... in `weightNames` order. Empty for
    /// layers whose every operand is a graph input (Add, Mul, Concat).
    var trainableParameters: [TrainableParameter] { get }

    /// The same layer with `values` (by role) in place of its parameters'
    /// current values; roles not named keep theirs. Each value has its
    /// parameter's shape.
    func replacingParameters(_ values: [String: Tensor]) throws -> Layer

    /// The gradients of one step: `step.inputs` and `step.outputs` are the
    /// forward pass's tensors; gradients are returned for the inputs marked in
    /// `step.needsInputGradients` (nil elsewhere) and for the roles in
    /// `step.parameterRoles`.
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients
}

/// A differentiable layer that holds no parameters (every operand is a
/// graph input: Add, Concat, the pools): it has no roles, and its
/// replacement is itself (naming any role is an error).
protocol ParameterFreeGradients: DifferentiableLayer {}

extension ParameterFreeGradients {
    var trainableParameters: [TrainableParameter] { [] }

    func replacingParameters(_ values: [String: Tensor]) throws -> Layer {
        _ = try checkedReplacements(values)
        return self
    }
}

/// A parameter a layer holds: its role in the layer (`weights`), the ONNX
/// node input it was made from, and its current value.
struct TrainableParameter {
    let role: String
    let nodeInput: Int
    let value: Tensor
}

/// What a layer's backward pass reads.
struct GradientStep {
    /// The forward inputs and outputs, as the forward pass computed them.
    let inputs: [Tensor]
    let outputs: [Tensor]
    /// dLoss/dOutput per output, of the output's shape; nil where the loss
    /// does not depend on that output (its gradient is zero).
    let outputGradients: [Tensor?]
    /// Which inputs need a gradient (those on a path from a trainable parameter).
    let needsInputGradients: [Bool]
    /// The parameter roles that need a gradient.
    let parameterRoles: Set<String>
}

/// What a layer's backward pass returns: dLoss/dInput per input (nil where
/// not asked for) and dLoss/dParameter by role, each of the shape of what it
/// is the gradient of.
struct LayerGradients {
    var inputs: [Tensor?]
    var parameters: [String: Tensor] = [:]
}

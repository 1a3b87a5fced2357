import Foundation

/// `optimizer.comp`'s push constants: one parameter's update, its place in
/// the packed buffers and every scalar of the step, computed on the host in
/// Double and rounded to Float32 once, so the GPU kernel and its CPU twin
/// read the same values.
struct OptimizerConstants: BitwiseCopyable {
    var offset: UInt32, count: UInt32, rowLength: UInt32
    /// 0 SGD, 1 Adam, 2 AdamW.
    var algorithm: UInt32
    var flags: UInt32
    var negativeLearningRate: Float
    var weightDecay: Float
    var momentum: Float
    var dampeningComplement: Float
    var firstMomentWeight: Float
    var beta2: Float
    var secondMomentWeight: Float
    var biasCorrection2Sqrt: Float
    var epsilon: Float
    var negativeStepSize: Float
    var decayFactor: Float

    /// The bits of `flags`.
    enum Flags {
        static let weightDecay: UInt32 = 1
        static let momentum: UInt32 = 2
        static let firstStep: UInt32 = 4
        static let nesterov: UInt32 = 8
    }

    /// The constants of step `step` (1 for a parameter's first) of
    /// `configuration` at learning rate `lr` on `count` elements at
    /// `offset`; `firstStep`: SGD's momentum buffer is made from this
    /// step's gradient.
    init(_ configuration: OptimizerConfiguration, learningRate lr: Double, step: Int, offset: Int, count: Int,
         firstStep: Bool) {
        self.offset = UInt32(offset)
        self.count = UInt32(count)
        rowLength = Self.rowLength(count: count)
        let c = configuration
        algorithm = switch c.algorithm { case .sgd: 0; case .adam: 1; case .adamw: 2 }
        flags = (c.weightDecay != 0 ? Flags.weightDecay : 0) | (c.momentum != 0 ? Flags.momentum : 0)
            | (firstStep ? Flags.firstStep : 0) | (c.nesterov ? Flags.nesterov : 0)
        negativeLearningRate = Float(-lr)
        weightDecay = Float(c.weightDecay)
        momentum = Float(c.momentum)
        dampeningComplement = Float(1 - c.dampening)
        firstMomentWeight = Float(1 - c.beta1)
        beta2 = Float(c.beta2)
        secondMomentWeight = Float(1 - c.beta2)
        let t = Double(step)
        biasCorrection2Sqrt = Float((1 - pow(c.beta2, t)).squareRoot())
        epsilon = Float(c.epsilon)
        negativeStepSize = Float(-(lr / (1 - pow(c.beta1, t))))
        decayFactor = Float(1 - lr * c.weightDecay)
    }
}

/// Push constants of a kernel over `count` elements laid out in rows of
/// `rowLength` invocations (`optimizer.comp`, `weight_gather.comp`):
/// invocation (x, y) handles element y * rowLength + x.
protocol ElementRows {
    var count: UInt32 { get }
    var rowLength: UInt32 { get }
}

extension ElementRows {
    /// The widest row of a dispatch: 4096 workgroups of 8 (at most 65535
    /// allowed), rows of 8 going in y.
    static var maxRowLength: Int { 8 * 4096 }

    /// The row length for `count` elements: whole workgroups of 8, at most `maxRowLength`.
    static func rowLength(count: Int) -> UInt32 { UInt32(min((count + 7) / 8 * 8, maxRowLength)) }

    /// The dispatch's invocations: `rowLength` wide, one row per `rowLength` elements.
    var threads: (x: Int, y: Int, z: Int) {
        (Int(rowLength), (Int(count) + Int(rowLength) - 1) / Int(rowLength), 1)
    }
}

extension OptimizerConstants: ElementRows {}

/// The optimizer kernel's CPU twin: `optimizer.comp`'s update, element by
/// element in Float32, with the same operations in the same order.
enum OptimizerUpdate {
    static func run(_ c: OptimizerConstants, parameters: UnsafeMutableBufferPointer<Float>,
                    gradients: UnsafeBufferPointer<Float>, first: UnsafeMutableBufferPointer<Float>,
                    second: UnsafeMutableBufferPointer<Float>) {
        let has = { (flag: UInt32) in c.flags & flag != 0 }
        for i in Int(c.offset)..<Int(c.offset + c.count) {
            var p = parameters[i]
            var g = gradients[i]
            if c.algorithm == 0 {
                if has(OptimizerConstants.Flags.weightDecay) { g = g + c.weightDecay * p }
                if has(OptimizerConstants.Flags.momentum) {
                    var b = g
                    if !has(OptimizerConstants.Flags.firstStep) { b = first[i] * c.momentum + c.dampeningComplement * g }
                    first[i] = b
                    g = has(OptimizerConstants.Flags.nesterov) ? g + c.momentum * b : b
                }
                p = p + c.negativeLearningRate * g
            } else {
                if has(OptimizerConstants.Flags.weightDecay) {
                    if c.algorithm == 2 { p = p * c.decayFactor } else { g = g + c.weightDecay * p }
                }
                var m = first[i]
                let w = c.firstMomentWeight
                m = w < 0.5 ? m + w * (g - m) : g - (g - m) * (1 - w)
                let v = second[i] * c.beta2 + c.secondMomentWeight * g * g
                let denominator = v.squareRoot() / c.biasCorrection2Sqrt + c.epsilon
                p = p + c.negativeStepSize * (m / denominator)
                first[i] = m
                second[i] = v
            }
            parameters[i] = p
        }
    }
}

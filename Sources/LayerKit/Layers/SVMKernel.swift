import Foundation

/// The kernel of an ai.onnx.ml SVM (`kernel_type` with `kernel_params`
/// [gamma, coef0, degree]) between an input row and a support vector:
/// LINEAR `x·v`, POLY `(γ x·v + c)^d`, RBF `exp(-γ |x - v|²)`, SIGMOID
/// `tanh(γ x·v + c)`. Computed in Double, as libsvm (scikit-learn) does,
/// so decision values keep their sign where they are close to zero.
struct SVMKernel: Sendable {
    enum Kind: String, Sendable {
        case linear = "LINEAR", poly = "POLY", rbf = "RBF", sigmoid = "SIGMOID"
    }

    let kind: Kind
    let gamma: Double
    let coef0: Double
    let degree: Double

    /// Throws `invalidParameter` for an unknown kernel type or parameters
    /// that are neither none nor three.
    init(type: String, parameters: [Double]) throws {
        guard let kind = Kind(rawValue: type) else {
            throw LayerKitError.invalidParameter("kernel_type '\(type)' is not one of LINEAR, POLY, RBF, SIGMOID")
        }
        guard parameters.isEmpty || parameters.count == 3 else {
            throw LayerKitError.invalidParameter("kernel_params has \(parameters.count) values; expected [gamma, coef0, degree]")
        }
        self.kind = kind
        (gamma, coef0, degree) = parameters.isEmpty ? (0, 0, 0) : (parameters[0], parameters[1], parameters[2])
    }

    /// The kernel of the `count` features at `x` and at `v` (float32 or
    /// float64 each: the row's type, the parameters' as the layer keeps them).
    func callAsFunction<X: BinaryFloatingPoint, V: BinaryFloatingPoint>(_ x: UnsafePointer<X>, _ v: UnsafePointer<V>,
                                                                      count: Int) -> Double {
        var sum = 0.0
        if kind == .rbf {
            for k in 0..<count {
                let d = Double(x[k]) - Double(v[k])
                sum += d * d
            }
            return exp(-gamma * sum)
        }
        for k in 0..<count { sum += Double(x[k]) * Double(v[k]) }
        switch kind {
        case .linear, .rbf: return sum
        case .poly: return pow(gamma * sum + coef0, degree)
        case .sigmoid: return tanh(gamma * sum + coef0)
        }
    }
}

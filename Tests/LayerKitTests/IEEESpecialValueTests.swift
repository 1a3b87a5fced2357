import Foundation
import Testing
@testable import LayerKit

/// A formula evaluated in float64 with Foundation's libm and IEEE 754 rules
/// written out here, independently of LayerKit's programs: the reference
/// for ±0, ±inf and NaN inputs.
enum Float64Formula {
    static func evaluate(_ e: Expr, _ x: Double, values: [String: Double]) -> Double {
        switch e {
        case .input: return x
        case .constant(let c): return Double(c)
        case .value(let name): return values[name]!
        case .unary(let f, let a):
            let a = evaluate(a, x, values: values)
            switch f {
            case .neg: return -a
            case .abs: return Swift.abs(a)
            case .exp: return Foundation.exp(a)
            case .log: return Foundation.log(a)
            case .log1p: return Foundation.log1p(a)
            case .expm1: return Foundation.expm1(a)
            case .sqrt: return a.squareRoot()
            case .reciprocal: return 1 / a
            case .tanh: return Foundation.tanh(a)
            case .sigmoid: return 1 / (1 + Foundation.exp(-a))
            case .softplus: return a > 0 ? a + Foundation.log1p(Foundation.exp(-a)) : Foundation.log1p(Foundation.exp(a))
            case .erf: return Foundation.erf(a)
            case .sin: return Foundation.sin(a)
            case .cos: return Foundation.cos(a)
            case .floor: return a.rounded(.down)
            case .ceil: return a.rounded(.up)
            case .round: return a.rounded(.toNearestOrEven)
            case .isnan: return a.isNaN ? 1 : 0
            case .isinf: return a.isInfinite ? 1 : 0
            case .tan: return Foundation.tan(a)
            case .asin: return Foundation.asin(a)
            case .acos: return Foundation.acos(a)
            case .atan: return Foundation.atan(a)
            case .sinh: return Foundation.sinh(a)
            case .cosh: return Foundation.cosh(a)
            case .asinh: return Foundation.asinh(a)
            case .acosh: return Foundation.acosh(a)
            case .atanh: return Foundation.atanh(a)
            }
        case .binary(let f, let a, let b):
            let (a, b) = (evaluate(a, x, values: values), evaluate(b, x, values: values))
            switch f {
            case .add: return a + b
            case .sub: return a - b
            case .mul: return a * b
            case .div: return a / b
            case .pow: return Foundation.pow(a, b)
            // NaN-propagating, unlike IEEE minNum (Double.minimum ignores a NaN).
            case .min: return a.isNaN || b.isNaN ? .nan : Swift.min(a, b)
            case .max: return a.isNaN || b.isNaN ? .nan : Swift.max(a, b)
            case .greater: return a > b ? 1 : 0
            case .greaterEqual: return a >= b ? 1 : 0
            case .less: return a < b ? 1 : 0
            case .lessEqual: return a <= b ? 1 : 0
            case .equal: return a == b ? 1 : 0
            case .notEqual: return a != b ? 1 : 0
            }
        case .select(let c, let a, let b):
            // Non-zero is true; NaN is non-zero.
            return evaluate(c, x, values: values) != 0 ? evaluate(a, x, values: values) : evaluate(b, x, values: values)
        }
    }
}

/// The parity rule for special values (RELIABILITY.md, "IEEE special
/// values"): NaN matches any NaN (sign and payload are not compared);
/// an infinity matches only the same infinity; with `signedZeros`, a zero
/// matches only the zero of the same sign (exact arithmetic), without it
/// -0 and +0 are equal (approximated functions); other finite values agree
/// within `tolerance * max(1, |reference|)`.
func ieeeMatches(_ value: Float, _ reference: Float, tolerance: Double, signedZeros: Bool) -> Bool {
    if value.isNaN || reference.isNaN { return value.isNaN && reference.isNaN }
    if value.isInfinite || reference.isInfinite { return value == reference }
    if signedZeros && value == 0 && reference == 0 { return value.sign == reference.sign }
    return Swift.abs(Double(value) - Double(reference)) <= tolerance * Swift.max(1, Swift.abs(Double(reference)))
}

@Suite(.enabled(if: TestGPU.isEnabled))
struct IEEESpecialValueTests {
    /// ±0, ±inf, NaN and some ordinary and extreme fp16 values (all exact in fp16).
    static let specials: [Float] = [0, -0.0, .infinity, -.infinity, .nan, 1, -1, 2.5, 65504, -65504, 6.103515625e-05]

    /// The formulas of the issue and their relatives: each folds to a wrong
    /// result for some special input when the compiler simplifies it.
    static let foldable = [
        "x / 0", "x / (x - x)", "x - x", "x * 0", "0 * x", "0 / x", "x + 0", "0 + x", "0 - x", "x - 0",
        "x + -0", "x * -0", "x + (-x)", "x * (x - x)", "-(0 - x)", "x == x", "x != x", "x >= x", "x <= x",
        "where(x - x, 1, 2)", "max(x - x, 0)", "x / x", "x * 0 + 1", "pow(x, 0)", "pow(1, x)",
    ]

    func run(_ layer: Layer, _ input: Tensor) throws -> (gpu: Tensor, cpu: Tensor) {
        let gpu = try Backend(computeUnits: .gpu, context: try TestGPU.get()).run(layer, inputs: [input]).outputs[0]
        let cpu = try Backend(computeUnits: .cpuOnly).run(layer, inputs: [input]).outputs[0]
        return (gpu, cpu)
    }

    /// Exact arithmetic: GPU and CPU both give the float64 result (rounded to
    /// fp16 for the GPU's stores), signed zeros and infinities included.
    @Test(arguments: foldable)
    func foldableFormulasKeepIEEEResults(formula: String) throws {
        let layer = try FormulaLayer(formula: formula)
        let input = try Tensor(shape: [1, 1, 1, Self.specials.count], values: Self.specials)
        let (gpu, cpu) = try run(layer, input)
        for (i, x) in Self.specials.enumerated() {
            let reference = Float(Float64Formula.evaluate(layer.formula, Double(x), values: [:]))
            #expect(ieeeMatches(cpu[i], reference, tolerance: 0, signedZeros: true), "CPU \(formula) at \(x): \(cpu[i]), IEEE \(reference)")
            #expect(ieeeMatches(gpu[i], fp16Rounded(reference), tolerance: 0, signedZeros: true),
                    "GPU \(formula) at \(x): \(gpu[i]), IEEE \(reference)")
        }
    }

    /// Every catalog op, default and example parameters, on the special
    /// values: the GPU matches the CPU and the CPU matches float64 (NaN for
    /// NaN, the same infinity, the same signed zero, finite within 1e-3).
    /// fp16 storage is the one legitimate difference: the GPU is compared
    /// with the CPU's result rounded to fp16 (131008 stores as inf).
    @Test func everyCatalogOpOnSpecialValues() throws {
        let input = try Tensor(shape: [1, 1, 1, Self.specials.count], values: Self.specials)
        for definition in OpDefinition.catalog {
            for parameters in [[:], definition.example] {
                let layer = try ElementwiseLayer(definition: definition, parameters: parameters)
                var values = layer.scalars.mapValues(Double.init)
                for name in definition.weightNames {
                    try layer.setWeightData(definition.weightNames.map { _ in [Float(0.5)].withUnsafeBufferPointer { Data(buffer: $0) } })
                    values[name] = 0.5
                }
                for (name, set) in layer.channelValues { values[name] = Double(set[0]) }
                let (gpu, cpu) = try run(layer, input)
                for (i, x) in Self.specials.enumerated() {
                    let reference = Float(Float64Formula.evaluate(layer.formula, Double(x), values: values))
                    // Signs of zero are compared only where the formula is exact arithmetic (above):
                    // approximations (erf, tanh, sigmoid's branches) may give -0 where float64 gives +0.
                    #expect(ieeeMatches(cpu[i], reference, tolerance: 1e-3, signedZeros: false),
                            "CPU \(definition.name) \(parameters) at \(x): \(cpu[i]), float64 \(reference)")
                    #expect(ieeeMatches(gpu[i], fp16Rounded(cpu[i]), tolerance: 1e-3, signedZeros: false),
                            "GPU \(definition.name) \(parameters) at \(x): \(gpu[i]), CPU \(cpu[i])")
                }
            }
        }
    }

    /// Negative control: the rule above tells the folded results from IEEE
    /// ones, so a compiler that folded would fail these tests.
    @Test func theRuleCatchesFoldedResults() {
        #expect(!ieeeMatches(0, .infinity, tolerance: 1e-3, signedZeros: false))  // x / 0 folded, x = 1
        #expect(!ieeeMatches(0, .nan, tolerance: 1e-3, signedZeros: false))       // x * 0 folded, x = inf
        #expect(!ieeeMatches(-0.0, 0, tolerance: 0, signedZeros: true))           // 0 - x folded to -x, x = 0
        #expect(!ieeeMatches(-.infinity, .infinity, tolerance: 1e-3, signedZeros: false))
        #expect(ieeeMatches(-0.0, 0, tolerance: 0, signedZeros: false))
        #expect(ieeeMatches(-.nan, .nan, tolerance: 0, signedZeros: true))
        #expect(ieeeMatches(1.0005, 1, tolerance: 1e-3, signedZeros: false))
        #expect(!ieeeMatches(1.002, 1, tolerance: 1e-3, signedZeros: false))
    }

    /// Negative control for the fix: the GLSL the generator wrote before
    /// (literal zeros, no `precise`) loses the IEEE results on lavapipe, the
    /// driver folding it (glslang's SPIR-V still holds the OpFMul/OpFDiv).
    @Test func literalZerosFoldOnLavapipe() throws {
        let context = try TestGPU.get()
        guard context.deviceInfo.name.contains("llvmpipe") else { return }
        let input = try Tensor(shape: [1, 1, 1, 2], values: [.infinity, 1])
        let image = try context.makeSliceImage(like: input)
        let output = try context.makeSliceImage(like: input)
        let result = try Tensor(shape: input.shape)
        let commands = try context.makeCommandBuffer()
        try commands.upload(input, to: image)
        try commands.dispatch(PerElementKernel(name: "literal-zero", body: "x * vec4(0.0) + x / vec4(0.0)"),
                              input: image, output: output)
        try commands.download(output, into: result)
        try commands.commit()
        try commands.waitUntilCompleted()
        // IEEE: inf * 0 + inf / 0 = NaN; 1 * 0 + 1 / 0 = inf. Folded: 0 and 0.
        #expect(result.values == [0, 0], "lavapipe no longer folds literal zeros: \(result.values)")
    }
}

/// A per-element GPU kernel: a GLSL expression that maps the texel `x` (a
/// vec4 of four channels, in fp32) to its output, instantiated into the one
/// element-wise template (`Shaders/elementwise.comp`).
///
/// The expression may use `param(i)` (scalar parameter `i`, up to 8) and
/// `weight(k)` (per-channel weight set `k`, as the vec4 of this texel's
/// channels). Swish with a scalar beta is
/// `PerElementKernel(name: "Swish", body: "x / (1.0 + exp(-param(0) * x))")`.
public struct PerElementKernel: Sendable, Hashable {
    /// Names the kernel in errors and profiles.
    public let name: String
    /// The GLSL expression over `x`, `param(i)` and `weight(k)`; one line.
    public let body: String
    /// GLSL functions the body calls, defined before `main`; one line.
    public let functions: String

    /// The most scalar parameters a kernel takes: the template's
    /// `float params[8]` (`PerElementConstants.parameters`).
    public static let maxParameters = MemoryLayout.size(ofValue: PerElementConstants.zero.parameters) / 4

    public init(name: String, body: String, functions: String = "") {
        self.name = name
        self.body = body
        self.functions = functions
    }
}

/// An ai.onnx.ml regressor that computes a float64 input in Double, with
/// its parameters as the file gives them (a float attribute widened, a
/// double `_as_tensor` attribute exact): scikit-learn's float64 results
/// from a double model (`TypedKernels.float64Regression`). Its float32
/// path (`evaluate`) is unchanged by it.
protocol Float64Regressor: Layer {
    /// The `[N, targets]` outputs of `rows` float64 rows (`x`, row-major),
    /// row-major; nil where the layer computes in float32 only (a
    /// `post_transform`).
    func predict(float64 x: [Double], rows: Int) -> [Double]?
}

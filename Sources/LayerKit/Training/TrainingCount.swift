/// The bound on every count a training run keeps and a checkpoint restores
/// (optimizer steps, a parameter's steps, epochs, the batch in an epoch).
///
/// A restored count goes on being counted (`step += 1`), so a checkpoint
/// holding 2^63 - 1 would trap on overflow at the first step; every count
/// read from a file is checked against this bound first, naming the field.
enum TrainingCount {
    /// 2^53: the largest whole number a Double holds exactly (Adam's bias
    /// correction reads the step as one), and so far below `Int.max` that a
    /// restored count plus every step a run may take (`UpdateTask` keeps a
    /// run's steps at most this many too) cannot overflow.
    static let maximum = 1 << 53

    /// Throws `failure(text)` unless `value` is a count from 0 to `maximum`;
    /// the text names `field`.
    static func check(_ value: Int, _ field: String, _ failure: (String) -> LayerKitError) throws {
        guard (0...maximum).contains(value) else {
            throw failure("\(field) is \(value); expected a count from 0 to \(maximum) (2^53)")
        }
    }
}

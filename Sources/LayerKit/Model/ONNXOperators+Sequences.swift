/// Sequences and optionals (`TypedTensor.Container`): ops only load-time
/// folding computes (`TypedKernels+Sequences`), so the values they read are
/// asked for at prepare (`ValueRequests`) and a sequence or optional never
/// reaches a layer; a node of them on typed values of the run (a Loop's
/// trip count) is a `TypedStep`.
extension ONNXOperators {
    static let sequences: [ONNXOperator] = [
        ONNXOperator("SequenceEmpty", through: 11, fold: TypedKernels.sequenceEmpty),
        ONNXOperator("SequenceConstruct", through: 11, fold: TypedKernels.sequenceConstruct),
        ONNXOperator("SequenceInsert", through: 11, fold: TypedKernels.sequenceInsert),
        ONNXOperator("SequenceAt", through: 11, fold: TypedKernels.sequenceAt),
        ONNXOperator("SequenceErase", through: 11, fold: TypedKernels.sequenceErase),
        ONNXOperator("SequenceLength", through: 11, fold: TypedKernels.sequenceLength),
        ONNXOperator("SequenceMap", through: 17, fold: TypedKernels.sequenceMap),
        ONNXOperator("SplitToSequence", through: 24, fold: TypedKernels.splitToSequence),  // 24: types
        ONNXOperator("ConcatFromSequence", through: 11, fold: TypedKernels.concatFromSequence),
        ONNXOperator("Optional", through: 28, fold: TypedKernels.optionalValue),  // 28: types
        // 18: the input may be omitted (no element); 28: types
        ONNXOperator("OptionalHasElement", through: 28, fold: TypedKernels.optionalHasElement),
        ONNXOperator("OptionalGetElement", through: 28, fold: TypedKernels.optionalGetElement),  // 18: a tensor or sequence passes as itself; 28: types
    ]
}

import Foundation
import Testing
@testable import LayerKit
@testable import LayerKitONNX

/// The op declarations (`ONNXOperator`, one per op in its family's file)
/// against the onnx package's schema history (`ONNXOpVersions`, generated
/// by Scripts/update-onnx-op-versions) and against each other.
@Suite struct OpTableTests {
    /// Every op LayerKit declares is an op of the ONNX spec (a typo would
    /// never match a node), and the reader's newest opset is the table's.
    @Test func everyOpIsAnONNXOp() {
        let unknown = ONNXOperators.table.keys.filter { ONNXOpVersions.changes[$0] == nil }.sorted()
        #expect(unknown.isEmpty, "\(unknown)")
        #expect(ONNXOpVersions.newestOpset == ONNXModel.maxOpset)
    }

    /// No op is declared twice, in one family or in two (the table would
    /// keep the first silently), nor twice among the ai.onnx.ml ops.
    @Test func everyOpIsDeclaredOnce() {
        for names in [ONNXOperators.families.joined().map(\.name), ONNXOperators.ml.map(\.name)] {
            let twice = Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            #expect(twice.isEmpty, "declared more than once: \(twice)")
            #expect(Set(names).count == names.count)
        }
    }

    /// Each declaration does something: converts, folds, or both; only an
    /// op that converts declares an arity (a fold-only op's node is not
    /// checked); the ai.onnx.ml ops all convert.
    @Test func everyDeclarationConvertsOrFolds() {
        for op in ONNXOperators.families.joined() {
            #expect(op.convert != nil || op.fold != nil, "\(op.name) neither converts nor folds")
            #expect((op.arity != nil) == (op.convert != nil), "\(op.name): an arity goes with a conversion")
        }
        #expect(ONNXOperators.ml.allSatisfy { $0.convert != nil && $0.arity != nil && $0.implemented == nil })
    }

    /// Every standard element-wise op of the catalog (all but LayerKit's own
    /// Linear; Swish is ONNX's from opset 24) and every Reduce operation is declared.
    @Test func everyCatalogOpAndReductionIsDeclared() {
        let catalog = Set(OpDefinition.catalog.map(\.name)).subtracting(["Linear"])
        let reductions = Set(Reduce.Operation.allCases.map(\.rawValue))
        let missing = catalog.union(reductions).filter { ONNXOperators.converter(for: $0) == nil }.sorted()
        #expect(missing.isEmpty, "not declared: \(missing)")
    }

    /// Every op declares the newest version of its definition it
    /// implements, a version in the table, and every version past it is one
    /// ONNX deprecated: after the table is regenerated from a newer onnx,
    /// this names each op with a version no one has reviewed yet.
    @Test func everyOpIsReviewedThroughItsNewestVersion() {
        var unreviewed: [String] = []
        for op in ONNXOperators.families.joined().sorted(by: { $0.name < $1.name }) {
            guard let newest = op.implemented else {
                Issue.record("\(op.name) declares no implemented version")
                continue
            }
            let versions = ONNXOpVersions.changes[op.name] ?? []
            #expect(versions.contains(newest), "\(op.name): \(newest) is not one of its versions \(versions)")
            let deprecated = ONNXOpVersions.deprecated[op.name] ?? []
            let past = versions.filter { $0 > newest && !deprecated.contains($0) }
            if !past.isEmpty { unreviewed.append("\(op.name) \(past) (implemented through \(newest))") }
            if let replacement = op.replacement {
                #expect(!deprecated.isEmpty && ONNXOperators.table[replacement] != nil, "\(op.name) -> \(replacement)")
            }
        }
        #expect(unreviewed.isEmpty, "versions to review against the schema history, then implement or refuse: \(unreviewed)")
    }

    /// A model's opset resolves each op to a version of its definition; an
    /// op resolved past what its converter implements is refused, naming
    /// the op and the version, while the same op at an older opset passes.
    @Test func anOpPastItsImplementedVersionIsRefused() throws {
        let mod = ONNXNode(name: "mod", opType: "Mod", domain: "", inputs: ["x", "x"], outputs: ["y"], attributes: [:])
        try ONNXValidation.checkVersion(mod, 27, implemented: 13)
        #expect {
            try ONNXValidation.checkVersion(mod, 28, implemented: 13)
        } throws: { error in
            "\(error)".contains("node 'mod' (Mod): Mod at opset 28 is its version 28, which LayerKit does not implement "
                                + "(it implements versions up to 13)")
        }
        try ONNXValidation.checkVersion(mod, 28, implemented: ONNXOperators.table["Mod"]?.implemented)
    }

    /// Every declared op has ONNX's type facts (`ONNXOpSchema.history`,
    /// generated with `ONNXOpVersions` by Scripts/update-onnx-op-versions)
    /// for each version of its definition, and every formal parameter's type
    /// has a constraint: the load-time type check has what it reads.
    @Test func everyOpHasGeneratedTypeFacts() {
        for op in ONNXOperators.families.joined() {
            let schemas = ONNXOpSchema.history[op.name] ?? []
            #expect(schemas.map(\.version) == ONNXOpVersions.changes[op.name], "\(op.name) has no type facts for each version")
            for schema in schemas {
                let untyped = (schema.inputs + schema.outputs).filter { schema.constraints[$0.type] == nil }
                #expect(untyped.isEmpty, "\(op.name)-\(schema.version): \(untyped.map(\.name))")
            }
        }
    }

    /// The generated facts say what the ONNX operator spec says: Relu-13
    /// takes floats only, Relu-14 signed integers too; Reshape's shape is
    /// int64; Concat's inputs are variadic of one type, Loop's carried values
    /// of mixed types; a model's opset resolves to the newest version at or
    /// below it.
    @Test func theTypeFactsAreONNXs() throws {
        let relu13 = try #require(ONNXOpSchema.resolved("Relu", opset: 13))
        let relu14 = try #require(ONNXOpSchema.resolved("Relu", opset: 17))
        #expect(relu13.version == 13 && relu14.version == 14)
        #expect(relu13.constraints["T"]?.types == [.float32, .float16, .float64, .bfloat16])
        #expect(relu14.constraints["T"]?.types == [.float32, .int8, .int16, .int32, .int64, .float16, .float64, .bfloat16])
        let reshape = try #require(ONNXOpSchema.resolved("Reshape", opset: 17))
        #expect(reshape.inputs.map(\.type) == ["T", "tensor(int64)"] && reshape.constraints["tensor(int64)"]?.types == [.int64])
        let concat = try #require(ONNXOpSchema.resolved("Concat", opset: 13))
        #expect(concat.input(at: 5) == ONNXOpSchema.Parameter("inputs: T..."))
        let loop = try #require(ONNXOpSchema.resolved("Loop", opset: 17))
        #expect(loop.inputs.map(\.option) == [.optional, .optional, .heterogeneous])
        #expect(ONNXOpSchema.resolved("Gelu", opset: 19) == nil)
    }

    /// LayerKit's side of each op's types (`OpTypes`): a conversion computes
    /// floats in float32, a folding kernel every type, an element-moving
    /// layer moves every type, and no way computes complex values.
    @Test func eachDeclarationSaysWhichTypesLayerKitComputes() throws {
        let relu = try #require(ONNXOperators.table["Relu"]?.types)
        #expect(relu == .floatLayer && relu.computes(.float16) && !relu.computes(.int64))
        let add = try #require(ONNXOperators.table["Add"]?.types)
        #expect(add == [.floatLayer, .typedKernel] && add.computes(.int64) && add.computes(.bool))
        #expect(ONNXOperators.table["Reshape"]?.types.computes(.string) == true)
        #expect(ONNXOperators.table["Shape"]?.types.contains(.shape) == true)
        #expect(ONNXOperators.table["CumSum"]?.types == .typedKernel)
        #expect(ONNXOperators.families.joined().allSatisfy { !$0.types.computes(.complex64) && !$0.types.isEmpty })
    }
}

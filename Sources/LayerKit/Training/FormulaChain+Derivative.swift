import Foundation

/// The chain rule through a chain's stages: the chain as one formula of
/// its input (stage i + 1's `x` replaced by stage i's formula), whose
/// derivatives are then taken as for one formula. Stage values are renamed
/// `s<i>.<name>` in a chain of several stages (two Swish stages each have
/// their own `beta`); a chain of one keeps its names.
extension FormulaChain {
    /// The most nodes the composed formula of a chain may have: each
    /// substitution copies the previous stages once per use of `x` (Swish
    /// reads `x` twice, so its composed size doubles per stage), and the
    /// derivative of a tree is walked per node on both backends.
    static let maxComposedNodes = 4096

    /// The name a stage's value has in the composed formula.
    func composedName(_ name: String, stage index: Int) -> String {
        stages.count == 1 ? name : "s\(index).\(name)"
    }

    /// The chain as one stage: its formula the stages composed, its values
    /// every stage's (renamed by `composedName`). Throws for an empty chain or
    /// one whose composed formula would pass `maxComposedNodes`.
    func composed() throws -> Stage {
        guard let first = stages.first else {
            throw LayerKitError.invalidParameter("an empty formula chain has no derivative")
        }
        if stages.count == 1 { return first }
        var formula = Expr.input
        var size = 1
        var scalars: [String: Float] = [:]
        var channelValues: [String: [Float]] = [:]
        for (index, stage) in stages.enumerated() {
            let renamed = stage.formula.renamingValues { composedName($0, stage: index) }
            let (nodes, uses) = renamed.nodeAndInputCounts
            size = nodes - uses + uses * size
            guard size <= FormulaChain.maxComposedNodes else {
                throw LayerKitError.invalidParameter(
                    "\(name): the chain as one formula passes \(FormulaChain.maxComposedNodes) nodes at stage "
                    + "\(index + 1) of \(stages.count); differentiate its layers one by one (unfused)")
            }
            formula = renamed.substitutingInput(formula)
            for (key, value) in stage.scalars { scalars[composedName(key, stage: index)] = value }
            for (key, value) in stage.channelValues { channelValues[composedName(key, stage: index)] = value }
        }
        return Stage(name: name, formula: formula, scalars: scalars, channelValues: channelValues)
    }

    /// d(chain)/d`variable` as a chain of one stage with the chain's values
    /// bound: `.input` for dy/dx, `.value(composedName(name, stage: i))`
    /// for stage i's value `name` (a scalar's or a per-channel one's).
    func derivative(withRespectTo variable: Expr.Variable) throws -> FormulaChain {
        let stage = try composed()
        let suffix = variable == .input ? "dx" : "d(\(variable))"
        return FormulaChain(stages: [Stage(name: "\(name)/\(suffix)", formula: stage.formula.derivative(withRespectTo: variable),
                                           scalars: stage.scalars, channelValues: stage.channelValues)])
    }
}

extension Expr {
    /// The formula with every value renamed by `rename`.
    func renamingValues(_ rename: (String) -> String) -> Expr {
        switch self {
        case .input, .constant: self
        case .value(let name): .value(rename(name))
        case .unary(let f, let a): .unary(f, a.renamingValues(rename))
        case .binary(let f, let a, let b): .binary(f, a.renamingValues(rename), b.renamingValues(rename))
        case .select(let c, let a, let b):
            .select(c.renamingValues(rename), a.renamingValues(rename), b.renamingValues(rename))
        }
    }

    /// The formula with `replacement` in place of `x`.
    func substitutingInput(_ replacement: Expr) -> Expr {
        switch self {
        case .input: replacement
        case .constant, .value: self
        case .unary(let f, let a): .unary(f, a.substitutingInput(replacement))
        case .binary(let f, let a, let b): .binary(f, a.substitutingInput(replacement), b.substitutingInput(replacement))
        case .select(let c, let a, let b):
            .select(c.substitutingInput(replacement), a.substitutingInput(replacement), b.substitutingInput(replacement))
        }
    }

    /// The formula's node count and how many of its nodes are `x`.
    var nodeAndInputCounts: (nodes: Int, inputs: Int) {
        var counts = (nodes: 0, inputs: 0)
        visit { node in
            counts.nodes += 1
            if case .input = node { counts.inputs += 1 }
        }
        return counts
    }
}

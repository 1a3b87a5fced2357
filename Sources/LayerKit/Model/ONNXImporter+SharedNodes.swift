import LayerKitONNX

/// Common subexpressions: a node that applies the same op, with the same
/// attributes, to the same values as an earlier one makes the same outputs,
/// so the importer reads the earlier node's instead of adding a step
/// (onnxruntime's common-subexpression elimination). Exporters write such
/// nodes once per layer: GPT-2's and BERT's exports turn the one attention
/// mask into an additive bias in every layer, each `Where` reading its own
/// `Constant` node of the same value.
extension ONNXImporter {
    /// What makes two nodes compute the same outputs: op, domain,
    /// attributes and inputs, a constant input by its type, shape and
    /// elements (not its name), a computed one by its value's index.
    struct SharedNodeKey: Hashable {
        enum Input: Hashable {
            case absent
            case value(Int)
            case constant(ONNXTensor)
        }

        let opType: String
        let domain: String
        let attributes: [String: ONNXAttribute]
        let inputs: [Input]

        /// Ops whose outputs are drawn at random: two nodes of them differ.
        static let drawn: Set<String> = ["Bernoulli", "Dropout", "Multinomial", "RandomNormal", "RandomNormalLike",
                                          "RandomUniform", "RandomUniformLike"]

        /// The key of `node`, or nil where the node is never shared: outside
        /// the standard domain (a custom layer may keep state), drawn at
        /// random, with a subgraph (If, Loop, Scan: left to their own
        /// import), or reading a name nothing makes yet (the node's import
        /// says so).
        init?(_ node: ONNXNode, valueIndex: [String: Int], constants: [String: ONNXTensor]) {
            guard node.isStandard, !Self.drawn.contains(node.opType) else { return nil }
            for attribute in node.attributes.values {
                switch attribute {
                case .graph, .graphs: return nil
                default: continue
                }
            }
            var inputs: [Input] = []
            for name in node.inputs {
                if name.isEmpty {
                    inputs.append(.absent)
                } else if let index = valueIndex[name] {
                    inputs.append(.value(index))
                } else if var constant = constants[name] {
                    constant.name = ""
                    inputs.append(.constant(constant))
                } else {
                    return nil
                }
            }
            (opType, domain, attributes, self.inputs) = (node.opType, node.domain, node.attributes, inputs)
        }

        /// Op, domain and inputs (attributes are compared by `==` alone:
        /// `ONNXAttribute` is not hashable, and nodes that differ only in
        /// attributes are few).
        func hash(into hasher: inout Hasher) {
            hasher.combine(opType)
            hasher.combine(domain)
            hasher.combine(inputs)
        }
    }
}

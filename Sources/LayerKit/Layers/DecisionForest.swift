import Foundation

/// The trees of an ai.onnx.ml tree ensemble, checked once: every child a
/// node names exists, no tree loops back on itself, every feature index is
/// one of the input's, every leaf weight names a known target. A walk from
/// a root therefore ends at a leaf within `nodes.count` steps, whatever the
/// file said. Both forms ONNX has are read into it: the (tree id, node id)
/// lists of `TreeEnsembleRegressor` and `TreeEnsembleClassifier`
/// (`init(ids:...)`), and the node and leaf indices of opset 5's
/// `TreeEnsemble` (`init(indices:...)`).
struct DecisionForest: Sendable {
    /// How a branch node compares feature `x` with its threshold `t` (true
    /// goes to the true child); `member` tests `x` against a set of values.
    enum Rule: UInt8, Sendable {
        case lessOrEqual, less, greaterOrEqual, greater, equal, notEqual, member, leaf
    }

    struct Node: Sendable {
        var rule: Rule
        var feature = 0
        /// As the file gives it (a float attribute widened, a double tensor
        /// attribute exact); see `leaf(from:_:)` for how rows compare with it.
        var threshold: Double = 0
        /// A NaN feature takes the true branch (else it compares as NaN does).
        var missingGoesTrue = false
        var trueChild = 0
        var falseChild = 0
        /// The leaf's weights, a range of `targets`/`weights`.
        var weights: Range<Int> = 0..<0
        /// A `member` node's set, a range of `members`.
        var members: Range<Int> = 0..<0
    }

    /// The most targets or classes an ensemble may have (onnxruntime's own
    /// limit for classes): far past scikit-learn's models, and an output
    /// width a corrupt count cannot turn into a huge allocation.
    static let maxTargets = 65_535

    let nodes: [Node]
    /// The root of each tree, in the order their sums are taken.
    let roots: [Int]
    /// Per leaf weight, its target (or class) index and value.
    let targets: [Int]
    let weights: [Double]
    let members: [Double]

    /// The leaf row `x` reaches from `root`, compared in the row's type (a
    /// float32 row against the thresholds rounded to float, as onnxruntime
    /// walks a float input; a float64 row against the doubles).
    func leaf<T: BinaryFloatingPoint>(from root: Int, _ x: UnsafePointer<T>) -> Node {
        var node = nodes[root]
        while node.rule != .leaf {
            let value = x[node.feature], threshold = T(node.threshold)
            let goesTrue: Bool
            if value.isNaN && node.missingGoesTrue {
                goesTrue = true
            } else {
                switch node.rule {
                case .lessOrEqual: goesTrue = value <= threshold
                case .less: goesTrue = value < threshold
                case .greaterOrEqual: goesTrue = value >= threshold
                case .greater: goesTrue = value > threshold
                case .equal: goesTrue = value == threshold
                case .notEqual: goesTrue = value != threshold
                case .member: goesTrue = members[node.members].contains { T($0) == value }
                case .leaf: goesTrue = false
                }
            }
            node = nodes[goesTrue ? node.trueChild : node.falseChild]
        }
        return node
    }

    private init(nodes: [Node], roots: [Int], targets: [Int], weights: [Double], members: [Double]) throws {
        (self.nodes, self.roots, self.targets, self.weights, self.members) = (nodes, roots, targets, weights, members)
        try checkAcyclic()
    }

    /// The trees of `TreeEnsembleRegressor`/`Classifier` (ai.onnx.ml 1-3):
    /// nodes named by (tree id, node id), a tree's root its first node
    /// listed (as onnxruntime and the ONNX reference take it), the trees in
    /// the order their ids first appear, leaf weights attached by (tree id,
    /// node id). Throws `invalidParameter` naming what is inconsistent.
    init(ids treeIDs: [Int], nodeIDs: [Int], features featureIDs: [Int], thresholds: [Double], modes: [String],
         trueIDs: [Int], falseIDs: [Int], missingTracksTrue: [Int], weightTreeIDs: [Int], weightNodeIDs: [Int],
         weightTargets: [Int], weightValues: [Double], targetCount: Int, featureCount: Int) throws {
        let count = treeIDs.count
        guard count >= 1 else { throw LayerKitError.invalidParameter("the ensemble has no nodes (nodes_treeids is empty)") }
        for (name, values) in [("nodes_nodeids", nodeIDs.count), ("nodes_featureids", featureIDs.count),
                               ("nodes_values", thresholds.count), ("nodes_modes", modes.count),
                               ("nodes_truenodeids", trueIDs.count), ("nodes_falsenodeids", falseIDs.count)] where values != count {
            throw LayerKitError.invalidParameter("\(name) has \(values) values for \(count) nodes (nodes_treeids)")
        }
        guard missingTracksTrue.isEmpty || missingTracksTrue.count == count else {
            throw LayerKitError.invalidParameter(
                "nodes_missing_value_tracks_true has \(missingTracksTrue.count) values for \(count) nodes")
        }
        let weightCount = weightTreeIDs.count
        guard weightNodeIDs.count == weightCount, weightTargets.count == weightCount, weightValues.count == weightCount else {
            throw LayerKitError.invalidParameter("the leaf weight lists have \(weightTreeIDs.count) tree ids, "
                                                 + "\(weightNodeIDs.count) node ids, \(weightTargets.count) target ids and "
                                                 + "\(weightValues.count) weights; they must be as long")
        }
        var index: [NodeKey: Int] = [:]
        var roots: [Int] = []
        var seenTrees = Set<Int>()
        for i in 0..<count {
            let key = NodeKey(tree: treeIDs[i], node: nodeIDs[i])
            guard index.updateValue(i, forKey: key) == nil else {
                throw LayerKitError.invalidParameter("node \(key.node) of tree \(key.tree) is listed twice")
            }
            if i == 0 || treeIDs[i - 1] != treeIDs[i] {
                // A tree's nodes are listed together; its first one is its root.
                guard seenTrees.insert(treeIDs[i]).inserted else {
                    throw LayerKitError.invalidParameter("the nodes of tree \(treeIDs[i]) are not listed together")
                }
                roots.append(i)
            }
        }
        var nodes: [Node] = []
        nodes.reserveCapacity(count)
        for i in 0..<count {
            guard let rule = Self.rule(named: modes[i]) else {
                throw LayerKitError.invalidParameter("node \(nodeIDs[i]) of tree \(treeIDs[i]) has mode '\(modes[i])', not one "
                                                     + "of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF")
            }
            var node = Node(rule: rule)
            if rule != .leaf {
                func child(_ id: Int, _ side: String) throws -> Int {
                    guard let child = index[NodeKey(tree: treeIDs[i], node: id)] else {
                        throw LayerKitError.invalidParameter("node \(nodeIDs[i]) of tree \(treeIDs[i]) names \(side) node \(id), "
                                                             + "which the tree does not have")
                    }
                    return child
                }
                node.trueChild = try child(trueIDs[i], "true")
                node.falseChild = try child(falseIDs[i], "false")
                node.feature = try Self.feature(featureIDs[i], of: featureCount, "node \(nodeIDs[i]) of tree \(treeIDs[i])")
                node.threshold = thresholds[i]
                node.missingGoesTrue = !missingTracksTrue.isEmpty && missingTracksTrue[i] != 0
            }
            nodes.append(node)
        }
        // Each leaf's weights, in the order listed: the order onnxruntime adds them.
        var byNode = [[Int]](repeating: [], count: count)
        for k in 0..<weightCount {
            guard let node = index[NodeKey(tree: weightTreeIDs[k], node: weightNodeIDs[k])] else {
                throw LayerKitError.invalidParameter("weight \(k) names node \(weightNodeIDs[k]) of tree \(weightTreeIDs[k]), "
                                                     + "which the ensemble does not have")
            }
            guard (0..<targetCount).contains(weightTargets[k]) else {
                throw LayerKitError.invalidParameter("weight \(k) is for target \(weightTargets[k]); the ensemble has "
                                                     + "\(targetCount) target(s) or class(es)")
            }
            byNode[node].append(k)
        }
        var targets: [Int] = [], weights: [Double] = []
        for i in 0..<count where nodes[i].rule == .leaf {
            let start = targets.count
            for k in byNode[i] {
                targets.append(weightTargets[k])
                weights.append(weightValues[k])
            }
            nodes[i].weights = start..<targets.count
        }
        try self.init(nodes: nodes, roots: roots, targets: targets, weights: weights, members: [])
    }

    /// The trees of opset 5's `TreeEnsemble`: branch nodes by index, whose
    /// children are other nodes or, where `trueLeaf`/`falseLeaf` says so,
    /// leaves (one weight each); `BRANCH_MEMBER` nodes take their sets from
    /// `membership`, NaN-separated, in the order of those nodes.
    init(indices roots: [Int], features featureIDs: [Int], splits: [Double], modes: [UInt8], trueChildren: [Int],
         trueLeaf: [Int], falseChildren: [Int], falseLeaf: [Int], missingTracksTrue: [Int], membership: [Double],
         leafTargets: [Int], leafWeights: [Double], targetCount: Int, featureCount: Int) throws {
        let count = featureIDs.count
        guard count >= 1, !roots.isEmpty else { throw LayerKitError.invalidParameter("the ensemble has no nodes or no tree_roots") }
        for (name, values) in [("nodes_splits", splits.count), ("nodes_modes", modes.count),
                               ("nodes_truenodeids", trueChildren.count), ("nodes_trueleafs", trueLeaf.count),
                               ("nodes_falsenodeids", falseChildren.count), ("nodes_falseleafs", falseLeaf.count)] where values != count {
            throw LayerKitError.invalidParameter("\(name) has \(values) values for \(count) nodes (nodes_featureids)")
        }
        guard missingTracksTrue.isEmpty || missingTracksTrue.count == count else {
            throw LayerKitError.invalidParameter(
                "nodes_missing_value_tracks_true has \(missingTracksTrue.count) values for \(count) nodes")
        }
        guard leafTargets.count == leafWeights.count, !leafWeights.isEmpty else {
            throw LayerKitError.invalidParameter("leaf_targetids has \(leafTargets.count) values and leaf_weights "
                                                 + "\(leafWeights.count); they must be as long, and not empty")
        }
        let leaves = leafWeights.count
        // Nodes first, then one node per leaf.
        var nodes: [Node] = []
        nodes.reserveCapacity(count + leaves)
        let sets = membership.split(omittingEmptySubsequences: false, whereSeparator: \.isNaN)
        var members: [Double] = [], memberNodes = 0
        for i in 0..<count {
            let rules: [Rule] = [.lessOrEqual, .less, .greaterOrEqual, .greater, .equal, .notEqual, .member]
            guard Int(modes[i]) < rules.count else {
                throw LayerKitError.invalidParameter("node \(i) has mode \(modes[i]), not one of 0 (BRANCH_LEQ) to 6 (BRANCH_MEMBER)")
            }
            var node = Node(rule: rules[Int(modes[i])])
            func child(_ target: Int, _ isLeaf: Int, _ side: String) throws -> Int {
                let limit = isLeaf != 0 ? leaves : count
                guard (0..<limit).contains(target) else {
                    throw LayerKitError.invalidParameter("node \(i) names \(side) \(isLeaf != 0 ? "leaf" : "node") \(target); "
                                                         + "there are \(limit)")
                }
                return isLeaf != 0 ? count + target : target
            }
            node.trueChild = try child(trueChildren[i], trueLeaf[i], "true")
            node.falseChild = try child(falseChildren[i], falseLeaf[i], "false")
            node.feature = try Self.feature(featureIDs[i], of: featureCount, "node \(i)")
            node.threshold = splits[i]
            node.missingGoesTrue = !missingTracksTrue.isEmpty && missingTracksTrue[i] != 0
            if node.rule == .member {
                guard memberNodes < sets.count else {
                    throw LayerKitError.invalidParameter("membership_values holds \(sets.count) set(s); node \(i) is "
                                                         + "BRANCH_MEMBER node \(memberNodes + 1)")
                }
                let start = members.count
                members += sets[memberNodes]
                node.members = start..<members.count
                memberNodes += 1
            }
            nodes.append(node)
        }
        for (k, target) in leafTargets.enumerated() {
            guard (0..<targetCount).contains(target) else {
                throw LayerKitError.invalidParameter("leaf \(k) is for target \(target); the ensemble has \(targetCount)")
            }
            nodes.append(Node(rule: .leaf, weights: k..<(k + 1)))
        }
        for root in roots where !(0..<count).contains(root) {
            throw LayerKitError.invalidParameter("tree_roots names node \(root); there are \(count)")
        }
        try self.init(nodes: nodes, roots: roots, targets: leafTargets, weights: leafWeights, members: members)
    }

    /// The mode names of ai.onnx.ml 1-3.
    private static func rule(named name: String) -> Rule? {
        switch name {
        case "BRANCH_LEQ": .lessOrEqual
        case "BRANCH_LT": .less
        case "BRANCH_GTE": .greaterOrEqual
        case "BRANCH_GT": .greater
        case "BRANCH_EQ": .equal
        case "BRANCH_NEQ": .notEqual
        case "LEAF": .leaf
        default: nil
        }
    }

    private static func feature(_ id: Int, of count: Int, _ node: String) throws -> Int {
        guard (0..<count).contains(id) else {
            throw LayerKitError.invalidParameter("\(node) reads feature \(id); the input has \(count)")
        }
        return id
    }

    /// Throws when a walk from a root could come back to a node it passed:
    /// a depth-first search that finds a node still on its path. Nodes
    /// shared by two paths are allowed (they are harmless); loops would
    /// make `leaf(from:_:)` run forever. Iterative, so deep trees cannot
    /// exhaust the stack.
    private func checkAcyclic() throws {
        enum State: UInt8 { case unseen, onPath, done }
        var state = [State](repeating: .unseen, count: nodes.count)
        for root in roots where state[root] == .unseen {
            var path: [(node: Int, visited: Int)] = [(root, 0)]
            state[root] = .onPath
            while let (node, visited) = path.last {
                guard nodes[node].rule != .leaf, visited < 2 else {
                    state[node] = .done
                    path.removeLast()
                    continue
                }
                path[path.count - 1].visited += 1
                let child = visited == 0 ? nodes[node].trueChild : nodes[node].falseChild
                switch state[child] {
                case .onPath:
                    throw LayerKitError.invalidParameter("the trees loop: node \(node) leads back to node \(child), "
                                                         + "which is on its own path from the root (nodes counted from 0 as listed)")
                case .unseen:
                    state[child] = .onPath
                    path.append((child, 0))
                case .done: break
                }
            }
        }
    }

    private struct NodeKey: Hashable {
        let tree: Int
        let node: Int
    }
}

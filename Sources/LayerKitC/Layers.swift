import CLayerKitAPI
import Foundation
import LayerKit

/// What an `lk_layer` holds: the layer, and the weight names in the order
/// `lk_layer_set_weights` takes them (a formula's as its caller listed
/// them; the layer itself takes them in the order its formula uses them).
final class LayerBox {
    let layer: CustomLayer
    /// The caller's order of the weights.
    let weightNames: [String]
    /// The order `layer.setWeightData` takes the blobs in.
    private let blobNames: [String]

    init(_ layer: CustomLayer, weightNames: [String], blobNames: [String]) {
        self.layer = layer
        self.weightNames = weightNames
        self.blobNames = blobNames
    }

    /// Throws unless `count` arrays are at most one per weight name.
    func requireWeightCount(_ count: Int) throws {
        guard count <= weightNames.count else {
            let names = weightNames.isEmpty ? "none" : weightNames.joined(separator: ", ")
            throw LayerKitError.invalidWeights("\(layer.layerName) takes \(weightNames.count) weight array(s) "
                                               + "(\(names)), got \(count)")
        }
    }

    /// Sets `weights[i]` as the weights named `weightNames[i]`; a name with
    /// no array (fewer arrays than names) keeps its scalar, as in LayerKit.
    func setWeights(_ weights: [[Float]]) throws {
        try requireWeightCount(weights.count)
        var byName: [String: Data] = [:]
        for (name, values) in zip(weightNames, weights) {
            // Blobs are Float32 little-endian (`WeightBlob`), whatever the host's order.
            byName[name] = values.map(\.bitPattern.littleEndian).withUnsafeBytes { Data($0) }
        }
        var blobs = blobNames.map { byName[$0] ?? Data() }
        // Trailing empty blobs are left off: a layer that takes its weights
        // whole (Swish) reports a missing array by the count it got.
        while blobs.last?.isEmpty == true { blobs.removeLast() }
        try layer.setWeightData(blobs)
    }
}

/// The arguments shared by the layer functions.
enum LayerArguments {
    /// `count` (name, value) pairs from the caller's arrays, each name
    /// UTF-8 and given once, each value finite as a Float.
    static func scalars(_ names: UnsafePointer<UnsafePointer<CChar>?>?, _ values: UnsafePointer<Double>?,
                        count: Int) throws -> [String: Double] {
        let count = try TensorArguments.count(count, "count")
        guard count > 0 else { return [:] }
        guard let names else { throw CAPIError.invalidArgument("names is NULL with count \(count)") }
        guard let values else { throw CAPIError.invalidArgument("values is NULL with count \(count)") }
        var scalars: [String: Double] = [:]
        for i in 0..<count {
            let name = try requireString(names[i], "names[\(i)]")
            guard scalars[name] == nil else {
                throw CAPIError.invalidArgument("names[\(i)]: parameter '\(name)' is given twice")
            }
            guard Float(values[i]).isFinite else {
                throw CAPIError.invalidArgument("values[\(i)] (parameter '\(name)') is \(values[i]), "
                                                + "not a finite float32")
            }
            scalars[name] = values[i]
        }
        return scalars
    }

    /// `count` distinct UTF-8 names.
    static func names(_ names: UnsafePointer<UnsafePointer<CChar>?>?, count: Int, _ what: String) throws -> [String] {
        let count = try TensorArguments.count(count, "\(what)_count")
        guard count > 0 else { return [] }
        guard let names else { throw CAPIError.invalidArgument("\(what) is NULL with \(what)_count \(count)") }
        var result: [String] = []
        for i in 0..<count {
            let name = try requireString(names[i], "\(what)[\(i)]")
            guard !result.contains(name) else { throw CAPIError.invalidArgument("\(what)[\(i)]: '\(name)' is given twice") }
            result.append(name)
        }
        return result
    }

    /// The layer behind `pointer`.
    static func layer(_ pointer: OpaquePointer?) throws -> LayerBox {
        try Handle.object(pointer, as: LayerBox.self, "the layer")
    }
}

@c @implementation
public func lk_layer_create(_ context: OpaquePointer?, _ op: UnsafePointer<CChar>?,
                            _ names: UnsafePointer<UnsafePointer<CChar>?>?, _ values: UnsafePointer<Double>?,
                            _ count: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { context in
        guard out != nil else { throw CAPIError.invalidArgument("out is NULL") }
        let name = try requireString(op, "op")
        let parameters = try LayerArguments.scalars(names, values, count: count)
        let entry = try context.registry.entry(named: name)
        let layer = try entry.make(parameters)
        try Handle.store(LayerBox(layer, weightNames: context.weightOrder(of: name, registered: entry),
                                  blobNames: entry.weightNames), in: out)
    }
}

@c @implementation
public func lk_layer_create_formula(_ context: OpaquePointer?, _ formula: UnsafePointer<CChar>?,
                                    _ names: UnsafePointer<UnsafePointer<CChar>?>?, _ values: UnsafePointer<Double>?,
                                    _ count: Int, _ weightNames: UnsafePointer<UnsafePointer<CChar>?>?,
                                    _ weightCount: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { _ in
        guard out != nil else { throw CAPIError.invalidArgument("out is NULL") }
        let text = try requireString(formula, "formula")
        let scalars = try LayerArguments.scalars(names, values, count: count).mapValues { Float($0) }
        let weights = try LayerArguments.names(weightNames, count: weightCount, "weight_names")
        let layer = try FormulaLayer(formula: text, parameters: scalars, weightNames: weights)
        try Handle.store(LayerBox(layer, weightNames: weights, blobNames: layer.definition.weightNames), in: out)
    }
}

@c @implementation
public func lk_layer_set_weights(_ context: OpaquePointer?, _ layer: OpaquePointer?,
                                 _ weights: UnsafePointer<UnsafePointer<Float>?>?, _ counts: UnsafePointer<Int>?,
                                 _ weightCount: Int) -> lk_status {
    withContext(context) { _ in
        let box = try LayerArguments.layer(layer)
        let arrays = try TensorArguments.count(weightCount, "weight_count")
        guard arrays == 0 || weights != nil else { throw CAPIError.invalidArgument("weights is NULL") }
        guard arrays == 0 || counts != nil else { throw CAPIError.invalidArgument("counts is NULL") }
        // Checked before any array is read.
        try box.requireWeightCount(arrays)
        var values: [[Float]] = []
        for i in 0..<arrays {
            let count = try TensorArguments.count(counts![i], "counts[\(i)]")
            // One value per channel: bounded as a tensor's element count is.
            let copy = try Tensor(shape: [count])
            if count > 0 {
                guard let array = weights![i] else {
                    throw CAPIError.invalidArgument("weights[\(i)] is NULL with counts[\(i)] \(count)")
                }
                copy.dataPointer.update(from: array, count: count)
            }
            values.append(copy.values)
        }
        try box.setWeights(values)
    }
}

@c @implementation
public func lk_layer_weight_count(_ context: OpaquePointer?, _ layer: OpaquePointer?,
                                  _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let box = try LayerArguments.layer(layer)
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = box.weightNames.count
    }
}

@c @implementation
public func lk_layer_weight_name(_ context: OpaquePointer?, _ layer: OpaquePointer?, _ index: Int,
                                 _ name: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                 _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let box = try LayerArguments.layer(layer)
        try writeString(element(box.weightNames, index, "weight"), to: name, capacity: capacity, length: length)
    }
}

@c @implementation
public func lk_layer_destroy(_ layer: OpaquePointer?) { Handle.release(layer) }

@c @implementation
public func lk_layer_apply(_ context: OpaquePointer?, _ layer: OpaquePointer?,
                           _ inputs: UnsafePointer<OpaquePointer?>?, _ inputCount: Int,
                           _ outputs: UnsafeMutablePointer<OpaquePointer?>?, _ outputCapacity: Int,
                           _ outputCount: UnsafeMutablePointer<Int>?, _ profiler: OpaquePointer?) -> lk_status {
    outputCount?.pointee = 0
    return withContext(context) { context in
        let box = try LayerArguments.layer(layer)
        guard let outputCount else { throw CAPIError.invalidArgument("output_count is NULL") }
        let count = try TensorArguments.count(inputCount, "input_count")
        guard count >= 1 else { throw CAPIError.invalidArgument("input_count is 0: a layer takes at least one input") }
        guard let inputs else { throw CAPIError.invalidArgument("inputs is NULL") }
        let tensors = try (0..<count).map {
            let tensor = try TensorArguments.tensor(inputs[$0], "inputs[\($0)]", takes: "layers take float32 tensors")
            try TensorArguments.requireElements(tensor, "inputs[\($0)]")
            return tensor
        }
        let capacity = try TensorArguments.count(outputCapacity, "output_capacity")
        guard capacity == 0 || outputs != nil else { throw CAPIError.invalidArgument("outputs is NULL") }
        let recorder = try profiler.map { try Handle.object($0, as: Profiler.self, "the profiler") }
        // The output count is known before running: nothing is run for a
        // capacity that cannot take the results.
        let needed = try box.layer.outputShapes(forInputShapes: tensors.map(\.shape)).count
        guard needed <= capacity else {
            outputCount.pointee = needed
            throw CAPIError(status: lk_status(LK_ERROR_BUFFER_TOO_SMALL),
                            description: "\(box.layer.layerName) makes \(needed) output(s), outputs has room for "
                                + "\(capacity)")
        }
        // Backend.run is thread-safe (its plans are per call, the CPU
        // worker pool takes one job and runs others on Dispatch's threads,
        // GPU submissions are serialized by the device), so calls run at
        // once without a lock here.
        let run = try context.backend.run(box.layer, inputs: tensors, profiler: recorder)
        guard run.outputs.count <= capacity else {
            throw CAPIError(status: lk_status(LK_ERROR_INTERNAL),
                            description: "\(box.layer.layerName) made \(run.outputs.count) outputs, not the \(needed) "
                                + "its output shapes said")
        }
        for (i, output) in run.outputs.enumerated() { outputs![i] = Handle.make(output) }
        outputCount.pointee = run.outputs.count
    }
}

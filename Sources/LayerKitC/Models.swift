import CLayerKitAPI
import Foundation
import LayerKit

// `lk_model` handles are LayerKit `Model`s, loaded on their context's backend
// with its registry. `Model.predict` serializes runs on one model (its plans
// and their host arenas are reused run after run), so predicting from several
// threads at once is safe without a lock here.

@c @implementation
public func lk_model_load(_ context: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                          _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { context in
        guard out != nil else { throw CAPIError.invalidArgument("the output pointer is NULL") }
        let path = try requireString(path, "the path")
        guard !path.isEmpty else { throw CAPIError.invalidArgument("the path is empty") }
        let model = try Model(contentsOf: URL(fileURLWithPath: path), backend: context.backend,
                              registry: context.registry)
        try Handle.store(model, in: out)
    }
}

@c @implementation
public func lk_model_destroy(_ model: OpaquePointer?) { Handle.release(model) }

@c @implementation
public func lk_model_input_count(_ context: OpaquePointer?, _ model: OpaquePointer?,
                                 _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = model.inputs.count
    }
}

@c @implementation
public func lk_model_output_count(_ context: OpaquePointer?, _ model: OpaquePointer?,
                                  _ count: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        guard let count else { throw CAPIError.invalidArgument("count is NULL") }
        count.pointee = model.outputs.count
    }
}

@c @implementation
public func lk_model_input_name(_ context: OpaquePointer?, _ model: OpaquePointer?, _ index: Int,
                                _ name: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        try writeString(element(model.inputs, index, "input").name, to: name, capacity: capacity, length: length)
    }
}

@c @implementation
public func lk_model_output_name(_ context: OpaquePointer?, _ model: OpaquePointer?, _ index: Int,
                                 _ name: UnsafeMutablePointer<CChar>?, _ capacity: Int,
                                 _ length: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        try writeString(element(model.outputs, index, "output").name, to: name, capacity: capacity, length: length)
    }
}

@c @implementation
public func lk_model_input_shape(_ context: OpaquePointer?, _ model: OpaquePointer?, _ index: Int,
                                 _ shape: UnsafeMutablePointer<Int64>?, _ capacity: Int,
                                 _ rank: UnsafeMutablePointer<Int>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        let dimensions = try element(model.inputs, index, "input").dimensions
        try writeShape(dimensions.map { $0.size.map(Int64.init) ?? -1 }, to: shape, capacity: capacity, rank: rank)
    }
}

@c @implementation
public func lk_model_input_type(_ context: OpaquePointer?, _ model: OpaquePointer?, _ index: Int,
                                _ type: UnsafeMutablePointer<lk_element_type>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        let input = try element(model.inputs, index, "input")
        guard let type else { throw CAPIError.invalidArgument("type is NULL") }
        type.pointee = lk_element_type(declaredType(input).rawValue)
    }
}

@c @implementation
public func lk_model_output_type(_ context: OpaquePointer?, _ model: OpaquePointer?, _ index: Int,
                                 _ type: UnsafeMutablePointer<lk_element_type>?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        let output = try element(model.outputs, index, "output")
        guard let type else { throw CAPIError.invalidArgument("type is NULL") }
        type.pointee = lk_element_type(declaredType(output).rawValue)
    }
}

/// The type `predict(typed:)` takes or returns for a value: the model's, float32 when it declares none.
private func declaredType(_ value: Model.ValueDescription) -> ElementType { value.dataType ?? .float32 }

@c @implementation
public func lk_model_predict(_ context: OpaquePointer?, _ model: OpaquePointer?,
                             _ names: UnsafePointer<UnsafePointer<CChar>?>?, _ inputs: UnsafePointer<OpaquePointer?>?,
                             _ inputCount: Int, _ outputs: UnsafeMutablePointer<OpaquePointer?>?,
                             _ outputCapacity: Int, _ profiler: OpaquePointer?) -> lk_status {
    withContext(context) { _ in
        let model = try Handle.object(model, as: Model.self, "the model")
        guard let outputs else { throw CAPIError.invalidArgument("outputs is NULL") }
        guard outputCapacity >= model.outputs.count else {
            throw CAPIError(status: lk_status(LK_ERROR_BUFFER_TOO_SMALL),
                            description: "outputs has room for \(outputCapacity) tensors; the model has "
                                + "\(model.outputs.count) output(s)")
        }
        for i in model.outputs.indices { outputs[i] = nil }
        let given = try namedInputs(names, inputs, inputCount, of: model)
        let profiler = try profiler.map { try Handle.object($0, as: Profiler.self, "the profiler") }
        let results = try predict(model, given, profiler: profiler)
        let handles = try model.outputs.map { output in
            guard let handle = results[output.name] else {
                throw CAPIError(status: lk_status(LK_ERROR_INTERNAL), description: "output '\(output.name)' was not computed")
            }
            return handle
        }
        for (i, handle) in handles.enumerated() { outputs[i] = Handle.make(handle) }
    }
}

/// Runs `model` on `given` (each input checked against its declared type
/// first: no conversion) and returns each output as the object of a new
/// handle, in its declared type. A model whose inputs given and outputs are
/// all float32 runs through `predict(inputs:)`, which `predict(typed:)`
/// would call with the same tensors, without copying each tensor into bytes
/// and back.
private func predict(_ model: Model, _ given: [String: AnyTensor], profiler: Profiler?) throws -> [String: AnyObject] {
    // A handle holds a tensor: a sequence, optional or map (ZipMap's) has no C form.
    if let value = (model.inputs + model.outputs).first(where: { $0.form != nil }), let form = value.form {
        let side = model.inputs.contains { $0.name == value.name } ? "input" : "output"
        throw CAPIError(status: lk_status(LK_ERROR_UNSUPPORTED),
                        description: "\(side) '\(value.name)' is a \(form); the C API takes and returns tensors only "
                            + "(run such a model with `layerkit run`, which reads and writes them as files)")
    }
    for (name, tensor) in given.sorted(by: { $0.key < $1.key }) {
        // Unknown names are the model's own error (predict).
        guard let input = model.inputs.first(where: { $0.name == name }) else { continue }
        let type = declaredType(input)
        guard tensor.elementType == type else {
            throw CAPIError(status: lk_status(LK_ERROR_TYPE),
                            description: "input '\(name)' is \(tensor.elementType); the model takes \(type) "
                                + "(nothing is converted: make the tensor \(type))")
        }
    }
    var floats: [String: Tensor] = [:]
    for (name, tensor) in given { if case .float32(let tensor) = tensor { floats[name] = tensor } }
    if floats.count == given.count, model.outputs.allSatisfy({ declaredType($0) == .float32 }) {
        return try model.predict(inputs: floats, profiler: profiler).mapValues { $0 as AnyObject }
    }
    let typed = try given.mapValues { try $0.value }
    return try model.predict(typed: typed, profiler: profiler).mapValues(AnyTensor.handle(of:))
}

/// The inputs of `lk_model_predict` by name. Unknown and missing names are
/// the model's own errors (`predict`); counts, NULLs and repeats are checked
/// here, before any pointer past the model's input count is read.
private func namedInputs(_ names: UnsafePointer<UnsafePointer<CChar>?>?, _ inputs: UnsafePointer<OpaquePointer?>?,
                         _ count: Int, of model: Model) throws -> [String: AnyTensor] {
    let expected = model.inputs.map(\.name).joined(separator: ", ")
    guard count >= 0, count <= model.inputs.count else {
        throw CAPIError.invalidArgument("\(count) inputs given; the model has \(model.inputs.count) (\(expected))")
    }
    guard count == 0 || (names != nil && inputs != nil) else {
        throw CAPIError.invalidArgument("names or inputs is NULL with an input count of \(count)")
    }
    var given: [String: AnyTensor] = [:]
    for i in 0..<count {
        let name = try requireString(names![i], "input name \(i)")
        guard given[name] == nil else { throw CAPIError.invalidArgument("input '\(name)' is given twice") }
        given[name] = try TensorArguments.anyTensor(inputs![i], "input \(i) ('\(name)')")
    }
    return given
}

// Tensor and LayerKitError live in LayerKitCore so that the ONNX reader can
// use them without depending on LayerKit; `import LayerKit` brings them too.
@_exported public import LayerKitCore

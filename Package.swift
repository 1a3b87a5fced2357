// swift-tools-version:6.0
import PackageDescription

// glslang ships as static archives on Debian; GNU-style linkers need them in
// dependency order (each archive before the ones it uses).
let glslangArchives: [LinkerSetting] = [
    "glslang-default-resource-limits", "SPIRV", "glslang", "MachineIndependent",
    "GenericCodeGen", "OGLCompiler", "OSDependent", "SPIRV-Tools-opt", "SPIRV-Tools",
    "stdc++", "pthread", "m",
].map { .linkedLibrary($0) }

let package = Package(
    name: "LayerKit",
    products: [
        .library(name: "LayerKit", targets: ["LayerKit"]),
        .library(name: "VulkanCompute", targets: ["VulkanCompute"]),
        .executable(name: "layerkit", targets: ["layerkit"]),
        // The C API's objects with every LayerKit module they use, which CMake
        // links into liblayerkit.so.1 with the Swift runtime inside
        // (CMakeLists.txt; SwiftPM cannot link a dynamic library statically).
        .library(name: "LayerKitCAPI", type: .static, targets: ["LayerKitC"]),
    ],
    targets: [
        // C modules over system libraries.
        // Headers and libraries are in the default paths on Debian, so no
        // pkg-config (which a fresh machine lacks) is needed.
        .systemLibrary(name: "CVulkan", providers: [.apt(["libvulkan-dev"])]),
        .target(name: "CGlslang", linkerSettings: glslangArchives),
        .target(name: "CPNG", linkerSettings: [.linkedLibrary("png16")]),
        // libjpeg-turbo's libjpeg API (Debian libjpeg62-turbo-dev).
        .target(name: "CJPEG", linkerSettings: [.linkedLibrary("jpeg")]),
        .target(name: "CKernels", linkerSettings: [.linkedLibrary("sleef")]),

        // Build tool: embeds Shaders/*.comp as Swift string constants, so the
        // binary never looks for shader files at run time.
        .executableTarget(name: "shader-embedder"),
        .plugin(name: "EmbedShaders", capability: .buildTool(),
                dependencies: ["shader-embedder"]),

        .target(name: "VulkanCompute", dependencies: ["CVulkan", "CGlslang"]),
        // Tensor and the error type: what every LayerKit module shares.
        .target(name: "LayerKitCore"),
        // The ONNX file reader (protobuf wire format, ONNX decoding): knows
        // nothing of layers or devices.
        .target(name: "LayerKitONNX", dependencies: ["LayerKitCore"]),
        .target(name: "LayerKit", dependencies: ["LayerKitCore", "LayerKitONNX", "VulkanCompute", "CPNG", "CJPEG", "CKernels"],
                plugins: ["EmbedShaders"]),
        .target(name: "LayerKitCommands", dependencies: ["LayerKit"]),
        // The C API (include/layerkit.h), implemented in Swift against the header.
        .systemLibrary(name: "CLayerKitAPI", path: "include"),
        .target(name: "LayerKitC", dependencies: ["LayerKit", "CLayerKitAPI"]),
        .executableTarget(name: "layerkit", dependencies: ["LayerKitCommands"]),
        // Benchmarks: GPU timing and report printing shared by the executables;
        // statistics, timed loops, tables and flag values come from the CLI
        // library (dependencies point one way: Benchmarks → CLI → LayerKit).
        .target(name: "BenchmarkSupport", dependencies: ["LayerKit", "LayerKitCommands"], path: "Benchmarks/BenchmarkSupport"),
        .executableTarget(name: "SwishBench", dependencies: ["LayerKit", "LayerKitCommands", "BenchmarkSupport"],
                          path: "Benchmarks/SwishBench"),
        .executableTarget(name: "OpBench", dependencies: ["LayerKit", "LayerKitCommands", "BenchmarkSupport"],
                          path: "Benchmarks/OpBench"),
        .executableTarget(name: "FusionBench", dependencies: ["LayerKit", "LayerKitCommands", "BenchmarkSupport"],
                          path: "Benchmarks/FusionBench"),
        .executableTarget(name: "ModelBench", dependencies: ["LayerKit", "LayerKitCommands", "BenchmarkSupport"],
                          path: "Benchmarks/ModelBench"),
        .executableTarget(name: "ConvBench", dependencies: ["LayerKit", "LayerKitCommands", "BenchmarkSupport"],
                          path: "Benchmarks/ConvBench"),
        .executableTarget(name: "TrainBench", dependencies: ["LayerKit", "LayerKitCommands"],
                          path: "Benchmarks/TrainBench"),

        // Seeded mutation fuzzer over every user-fed parser (`make fuzz`).
        .executableTarget(name: "Fuzz", dependencies: ["LayerKit", "LayerKitONNX", "LayerKitCommands"], path: "Fuzz",
                          exclude: ["corpus", "findings"]),

        .testTarget(name: "VulkanComputeTests", dependencies: ["VulkanCompute"]),
        .testTarget(name: "LayerKitTests", dependencies: ["LayerKit", "LayerKitONNX", "CKernels"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "LayerKitCommandsTests", dependencies: ["LayerKitCommands"]),
    ]
)

import LayerKit

/// The `layerkit` command line: parses, calls LayerKit, prints.
public enum LayerKitCommands {
    static let usage = """
        usage: layerkit <command> [options]

        commands:
          devices                      list Vulkan devices and which one is chosen
          ops     [--markdown]         list the ops: parameters, weights, formula, backends
          apply   LAYERS --input FILE --output FILE [--backend cpu|gpu|auto]
                                       run layers on a .npy or .png input
          parity  LAYERS [--shape NxCxHxW] [--range LOW,HIGH] [--seed N]
                                       compare GPU and CPU on a seeded input (exit 1 on FAIL)
          parity  --all [--shape NxCxHxW] [--seed N]
                                       every op, defaults and an example set: one table
          inspect MODEL.onnx [--backend cpu|gpu|auto]
                                       inputs, outputs, opsets, and every node with where it runs
          run     MODEL.onnx --input FILE|NAME=FILE ... [--output FILE|NAME=FILE ...]
                  [--backend cpu|gpu|auto] [--resize WxH] [--normalize 0,1|-1,1|mean=..,std=..]
                  [--top K] [--profile] run a model on .npy/.png inputs; top-5 of 2-D outputs
          run     MODEL.onnx --input DIR/ [--output DIR/] [--batch N]
                                       every .npy/.png in a folder; --batch N stacks N into one run
          demo    [--output FILE.npy]  the Core ML article's model (Conv, Swish, pooling, Dense,
                                       softmax) on a built-in image, on GPU and CPU
          bench   [LAYERS] [--shape NxCxHxW] [--repeat N] [--warmup N] [--backend cpu|gpu|auto|both] [--json]
                                       kernel and end-to-end times: median, min, p90, elements/s, GB/s
                                       (default both: the CPU and the GPU side by side)
          bench   MODEL.onnx [--input FILE ...] [--repeat N] [--warmup N] [--backend cpu|gpu|auto|both] [--json]
                                       whole-model times: min, median, p90, mean, inferences/s
          bench   --sweep [LAYERS] [--backend cpu|gpu|auto|both] [--plot FILE.svg] [--json]
                                       sizes 1x64x8x8 to 1x64x1024x1024 against the memory-copy ceiling
          profile LAYERS [--shape NxCxHxW] [--backend cpu|gpu|auto] [--trace FILE.json]
          profile MODEL.onnx [--input FILE|NAME=FILE ...] [--backend cpu|gpu|auto] [--trace FILE.json]
                                       where one run's time goes: per-layer table, overhead, Chrome trace
          help                         show this text

        --backend: cpu (the CPU evaluator), gpu (the chosen Vulkan device, lavapipe included;
          an error without one), auto (the GPU on real GPU hardware, else the CPU; the default
          except for profile: gpu, and bench: both). parity and demo always compare the two.

        LAYERS: one or more of --op NAME or --expr "FORMULA", each followed by its own
          --param k=v and --weights k=FILE.npy (one Float32 per channel); several run
          fused, as one pass. e.g. --op Linear --param scale=2 --op Swish --param beta=0.5
          or --expr "max(x, alpha * x)" --param alpha=0.1

        --json (devices, ops, inspect, run, bench, profile): one JSON object with a "schema" field
          (Docs/JSON.md). --threads N (apply, parity, run, demo, bench, profile): the CPU
          evaluator's threads, default the cores the process may use.

        --repeat and --warmup take 1 to 100000 and 0 to 100000 (ValueParsing.maximumCount).

        environment:
          LAYERKIT_DEVICE=<index|name>  pick a Vulkan device
          LAYERKIT_VALIDATION=1         enable Khronos validation
        """

    /// Runs `arguments` (without the program name); returns the exit status:
    /// 0 success, 1 failure (error or parity FAIL), 2 usage error.
    public static func main(_ arguments: [String], console: Console = .standard) -> Int32 {
        guard let command = arguments.first else {
            console.writeError(usage + "\n")
            return 2
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch command {
            case "devices": return try DevicesCommand.run(rest, console: console)
            case "ops": return try OpsCommand.run(rest, console: console)
            case "apply": return try ApplyCommand.run(rest, console: console)
            case "parity": return try ParityCommand.run(rest, console: console)
            case "demo": return try DemoCommand.run(rest, console: console)
            case "inspect": return try InspectCommand.run(rest, console: console)
            case "run": return try RunCommand.run(rest, console: console)
            case "bench": return try BenchCommand.run(rest, console: console)
            case "profile": return try ProfileCommand.run(rest, console: console)
            case "help", "--help", "-h":
                console.printLines(usage)
                return 0
            default:
                throw UsageError("unknown command '\(command)' (try: layerkit help)")
            }
        } catch let error as UsageError {
            console.note("error: \(error)")
            return 2
        } catch {
            console.note("error: \(error)")
            return 1
        }
    }
}

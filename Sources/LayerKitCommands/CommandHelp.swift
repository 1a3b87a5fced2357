/// One command's interface, declared once: the options it accepts (which
/// `Arguments` parses, and nothing else), their defaults, and its help text
/// (`layerkit CMD --help`, `layerkit help CMD`, the general help's lines).
struct CommandHelp {
    /// One option: `--name VALUE` or, without `value`, a `--flag`.
    struct Option {
        let name: String
        /// The value's placeholder (`FILE`, `N`); nil for a flag.
        let value: String?
        /// What it is when not given (`none`, `off`, `30`).
        let defaultValue: String
        /// Whether it may be given more than once.
        let repeatable: Bool
        let text: String

        init(_ name: String, _ value: String?, default defaultValue: String, repeatable: Bool = false, _ text: String) {
            self.name = name
            self.value = value
            self.defaultValue = defaultValue
            self.repeatable = repeatable
            self.text = text
        }
    }

    let name: String
    /// What follows `layerkit NAME` in the synopsis.
    let synopsis: [String]
    let summary: String
    let options: [Option]
    /// How many words that are not options it takes (a model path, an op name).
    let positional: ClosedRange<Int>
    let examples: [String]

    var valued: Set<String> { Set(options.filter { $0.value != nil }.map(\.name)) }
    var flags: Set<String> { Set(options.filter { $0.value == nil }.map(\.name)) }
    var repeatable: Set<String> { Set(options.filter(\.repeatable).map(\.name)) }

    /// The text of `layerkit NAME --help`.
    var text: String {
        var lines = synopsis.enumerated().map { ($0.offset == 0 ? "usage: " : "       ") + "layerkit \(name) \($0.element)" }
        lines += [""] + Self.wrap(summary, after: "", column: 0)
        if !options.isEmpty {
            lines += ["", "options:"]
            for option in options {
                let left = "  " + option.name + (option.value.map { " " + $0 } ?? "")
                let right = option.text + " (default: \(option.defaultValue)"
                    + (option.repeatable ? "; repeatable)" : ")")
                lines += Self.wrap(right, after: left, column: 34)
            }
        }
        lines += ["", examples.count == 1 ? "example:" : "examples:"] + examples.map { "  " + $0 }
        return lines.joined(separator: "\n")
    }

    /// `left` padded to `column`, then `text` wrapped at 100 columns.
    static func wrap(_ text: String, after left: String, column: Int, width: Int = 100) -> [String] {
        var lines: [String] = []
        var line = left
        if left.count + 1 <= column {
            line = left.padding(toLength: column, withPad: " ", startingAt: 0)
        } else if column > 0 {
            lines.append(left)
            line = String(repeating: " ", count: column)
        }
        var lineHasWord = false
        for word in text.split(separator: " ") {
            if lineHasWord, line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: column)
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines
    }

    /// The help of the command `word` (any letter case), if there is one.
    static func named(_ word: String) -> CommandHelp? { all.first { $0.name == word.lowercased() } }

    /// Every command, in the order the general help lists them.
    static let all: [CommandHelp] = [devices, ops, apply, parity, inspect, run, generate, train, demo, bench, profile,
                                     conformance]

    // MARK: Options several commands share

    static func backend(_ defaultValue: String, both: Bool = false) -> Option {
        Option("--backend", both ? "cpu|gpu|auto|both" : "cpu|gpu|auto", default: defaultValue,
               "where layers run: the CPU evaluator, the GPU (an error without one), or auto"
               + (both ? "; both: the CPU and the GPU side by side" : ""))
    }

    static let layerOptions = [
        Option("--op", "NAME", default: "none", repeatable: true, "an op of `layerkit ops`; several run fused"),
        Option("--expr", "FORMULA", default: "none", repeatable: true, "a per-element formula, e.g. \"max(x, alpha * x)\""),
        Option("--param", "NAME=VALUE", default: "the op's defaults", repeatable: true,
               "a parameter of the --op or --expr before it"),
        Option("--weights", "NAME=FILE.npy", default: "none", repeatable: true,
               "per-channel weights (one Float32 per channel) of the --op or --expr before it"),
    ]

    static let layer = Option("--layer", "OPTYPE=FORMULA", default: "none", repeatable: true,
                              "run the model's nodes of op type OPTYPE (any domain) as this formula: node attributes "
                              + "are its parameters, constant inputs its per-channel weights, matched by name")

    static let input = Option("--input", "FILE|NAME=FILE", default: "none", repeatable: true,
                              "a .npy (any numeric or bool dtype), .pb (ONNX TensorProto, any type), .png or .jpg input; "
                              + "NAME=FILE for each input of a model with several")

    /// `--shape` and `--dim` of a model's seeded inputs (`SeededShapes`).
    static let seededShape = Option("--shape", "NxCxHxW|NAME=DIMS", default: "1x64x256x256; a model: its inputs' shapes",
                                    repeatable: true,
                                    "a layer's input shape; with a model, a seeded input's shape (DIMS: sizes joined by x)")
    static let dim = Option("--dim", "SYMBOL=N", default: "1", repeatable: true,
                            "with a model: the size of a symbolic dimension (a free batch, say) of its seeded inputs")

    static let threads = Option("--threads", "N", default: "the cores the process may use",
                                "the CPU evaluator's threads, 1 to 4096")

    static func json(_ schema: String) -> Option {
        Option("--json", nil, default: "off", "print one \(schema) JSON object instead (Docs/JSON.md)")
    }

    // MARK: The commands

    static let devices = CommandHelp(
        name: "devices", synopsis: [""],
        summary: "Lists the Vulkan devices, what each supports, and which one is chosen and why.",
        options: [json("layerkit-devices/1")], positional: 0...0,
        examples: ["layerkit devices", "LAYERKIT_DEVICE=1 layerkit devices"])

    static let ops = CommandHelp(
        name: "ops", synopsis: ["[NAME] [--markdown|--json]", "--onnx [--markdown]"],
        summary: "Lists the ops: parameters with defaults, per-channel weights, formula, backends; "
            + "with NAME, one op in detail; with --onnx, the ONNX ops and the element types LayerKit computes each in.",
        options: [Option("--markdown", nil, default: "off", "print the list as Docs/OPS.md's Markdown table"),
                  Option("--onnx", nil, default: "off", "list the standard ONNX ops: versions and element types"),
                  json("layerkit-ops/1")],
        positional: 0...1, examples: ["layerkit ops", "layerkit ops Swish", "layerkit ops --onnx"])

    static let apply = CommandHelp(
        name: "apply", synopsis: ["LAYERS --input FILE --output FILE [--backend cpu|gpu|auto]"],
        summary: "Runs layers on a .npy or .png input and writes a .npy or .png output.",
        options: layerOptions + [
            Option("--input", "FILE", default: "required", "the .npy or .png input"),
            Option("--output", "FILE", default: "required", "the .npy or .png output (a PNG is an activation-map grid)"),
            backend("auto"), threads,
        ],
        positional: 0...0, examples: ["layerkit apply --op Swish --param beta=0.5 --input x.npy --output y.npy"])

    static let parity = CommandHelp(
        name: "parity", synopsis: ["LAYERS [--shape NxCxHxW] [--range LOW,HIGH] [--seed N]",
                                   "--all [--shape NxCxHxW] [--seed N]",
                                   "MODEL.onnx [--input FILE|NAME=FILE ...] [--layer OPTYPE=FORMULA ...]"],
        summary: "Compares the GPU and the CPU evaluator on the same seeded, fp16-rounded input (exit 1 on FAIL); "
            + "--all does every op and prints one table; with a model, every output of the model on the same "
            + "inputs (--input files, or seeded uniform [0, 1)).",
        options: layerOptions + [
            Option("--shape", "NxCxHxW", default: "1x6x256x256; 1x6x64x64 with --all", "the input's shape"),
            Option("--range", "LOW,HIGH", default: "-10,10", "the range the input is drawn from"),
            Option("--seed", "N", default: "1", "the input's seed"),
            Option("--all", nil, default: "off", "every op, its defaults and an example set, in one table"),
            Option("--input", "FILE|NAME=FILE", default: "seeded uniform [0, 1)", repeatable: true,
                   "a model's .npy or .png input; NAME=FILE for each input of a model with several"),
            layer, threads,
        ] + ImageOptions.help,
        positional: 0...1, examples: ["layerkit parity --op Swish --param beta=2 --shape 1x6x64x64", "layerkit parity --all",
                                      "layerkit parity article.onnx --layer ArticleSwish='x * sigmoid(beta * x)'"])

    static let conformance = CommandHelp(
        name: "conformance", synopsis: ["FOLDER ... [--backend cpu|gpu|both] [--expect FILE] [--passes FILE]",
                                        "FOLDER ... --markdown"],
        summary: "Runs every test of the onnx package's backend-test layout (CASE/model.onnx with test_data_set_N/ of "
            + "input_K.pb and output_K.pb) under each FOLDER: the CPU against the stored outputs at ONNX's tolerance "
            + "(rtol 1e-3, atol 1e-7), the GPU by the parity rule against the CPU on the same fp16-rounded inputs, "
            + "or, where the case has a tolerance.json {\"gpu\": x} (whole models), against the stored outputs "
            + "within x max(1, |ref|). "
            + "Prints a row per case and the pass counts per folder; exits 1 when a case listed in --expect fails.",
        options: [
            Option("--backend", "cpu|gpu|both", default: "both", "which backends run each case"),
            Option("--expect", "FILE", default: "none",
                   "lines 'FOLDER/CASE cpu|gpu' that must pass: one that fails is a regression (exit 1); "
                   + "cases passing but not listed are reported"),
            Option("--passes", "FILE", default: "none", "write the passing cases, in --expect's form, to FILE"),
            Option("--markdown", nil, default: "off", "print the tables as Markdown (for the docs)"),
            threads,
        ],
        positional: 1...Int.max,
        examples: ["layerkit conformance onnx/backend/test/data/simple onnx/backend/test/data/pytorch-operator",
                   "layerkit conformance DATA/simple --backend cpu --expect expected-passes.txt"])

    static let inspect = CommandHelp(
        name: "inspect", synopsis: ["MODEL.onnx [--backend cpu|gpu|auto] [--layer OPTYPE=FORMULA ...] [--json]"],
        summary: "Shows a model's inputs, outputs and opsets, and every node with where it runs.",
        options: [backend("auto"), layer, threads, json("layerkit-inspect/1")],
        positional: 1...1, examples: ["layerkit inspect model.onnx",
                                      "layerkit inspect model.onnx --layer ArticleSwish='x * sigmoid(beta * x)'"])

    static let run = CommandHelp(
        name: "run", synopsis: ["MODEL.onnx --input FILE|NAME=FILE ... [--output FILE|NAME=FILE ...] [options]",
                                "MODEL.onnx --input DIR/ [--output DIR/] [--batch N] [options]"],
        summary: "Runs an ONNX model on .npy/.pb/.png/.jpg inputs, writes its outputs in their declared types, and prints "
            + "their shapes and the top-5 of 2-D float outputs; a model without inputs runs with no --input. A .png output is a picture (an image-to-image model's: 1, 3 or 4 channels, "
            + "--normalize undone, clamped to 0..1).",
        options: [
            input,
            Option("--output", "FILE|NAME=FILE", default: "none", repeatable: true,
                   "write an output as .npy or .pb in its type (a sequence or optional as a .pb, ZipMap's maps as .json), "
                   + "or as a .png picture (1, 3 or 4 channels); NAME=FILE for each output "
                   + "of a model with several"),
            Option("--output-grid", "FILE.png|NAME=FILE.png", default: "none", repeatable: true,
                   "draw an output's channels as gray tiles (min..max), an activation-map grid"),
            backend("auto"),
        ] + ImageOptions.help + [
            Option("--denormalize", "0,1|-1,1|imagenet|mean=..,std=..", default: "the --normalize value",
                   "how a .png output's values become pixels (x * std + mean), then clamped to 0..1"),
            Option("--profile", nil, default: "off", "print the run's per-layer times"),
            Option("--batch", "N", default: "1", "with a folder of inputs: stack N of them into one NxCxHxW run"),
            Option("--top", "K", default: "5", "how many classes of a 2-D output to print"),
            Option("--labels", "FILE", default: "none",
                   "class names, one a line (line K names class K), printed with the top classes of the 2-D output "
                   + "with as many classes"),
            Option("--softmax", nil, default: "off",
                   "print the top classes as softmax probabilities of each row (the --output files stay as computed)"),
            layer, threads, json("layerkit-run/1"),
        ],
        positional: 1...1,
        examples: ["layerkit run model.onnx --input image=cat.png --resize 224x224 --output probabilities=p.npy",
                   "layerkit run resnet.onnx --input cat.jpg --resize 256 --center-crop 224 --normalize imagenet \\",
                   "    --labels labels.txt --softmax",
                   "layerkit run Models/style.onnx --input photo.jpg --output styled.png",
                   "layerkit run article.onnx --input x.npy --layer ArticleSwish='x * sigmoid(beta * x)'"])

    static let train = CommandHelp(
        name: "train", synopsis: ["MODEL.onnx --data X --labels Y --loss L --trainable T --output OUT.onnx [...]",
                                  "UPDATABLE.mlmodel --data X --labels Y --output OUT.mlmodel [...]"],
        summary: "Trains the chosen parameters of an ONNX model on the CPU or the GPU and writes the updated model "
            + "(ONNX; every other weight bit-identical). --data is a .npy whose axis 0 is the items, with --labels "
            + "a .npy of the targets, or a folder of PNG/JPEG pictures (resized to the model's input) with --labels "
            + "one class index per picture in file-name order (a text file, one a line, or a .npy). Prints one line "
            + "per epoch (a progress bar as well on a terminal) and where each backward op ran. An updatable Core ML "
            + "model (Core ML 3) trains as its file says (its loss, optimizer, batch size, epochs and updatable "
            + "layers; an option given overrides it) and is written back as an .mlmodel (only the trained weights' "
            + "values differ).",
        options: [
            Option("--data", "FILE.npy|DIR/", default: "required", "the inputs: a .npy (axis 0: items) or a folder of pictures"),
            Option("--labels", "FILE", default: "required",
                   "the targets: a .npy (axis 0: items), or class indices, one a line or a .npy vector"),
            Option("--loss", "ce|mse|l1|bce|ce-probabilities", default: "required; .mlmodel: its loss layer",
                   "cross-entropy from logits (targets: class indices), mean squared error, L1, binary "
                   + "cross-entropy with logits, or cross-entropy of probabilities (after a softmax)"),
            Option("--trainable", "NAME[,NAME...]|all|custom|last:N", default: "required; .mlmodel: its updatable layers",
                   "what trains: initializers by name, every parameter, the weights of every custom layer, or the "
                   + "last N layers with parameters"),
            Option("--output", "FILE.onnx|.mlmodel", default: "required",
                   "where the updated model is written (.mlmodel for a Core ML model)"),
            Option("--optimizer", "sgd|adam|adamw", default: "sgd; .mlmodel: its own",
                   "the optimizer (PyTorch's formulation)"),
            Option("--lr", "RATE", default: "0.01; .mlmodel: its own", "the learning rate, a positive number"),
            Option("--momentum", "M", default: "0; .mlmodel: its own", "SGD's momentum, 0 to below 1"),
            Option("--nesterov", nil, default: "off", "SGD with Nesterov momentum (needs --momentum)"),
            Option("--weight-decay", "W", default: "0; adamw: 0.01", "L2 weight decay (adamw: decoupled), 0 or more"),
            Option("--clip-norm", "N", default: "none", "scale the gradients down to this global L2 norm at most"),
            Option("--schedule", "constant|step:EPOCHS,FACTOR|cosine", default: "constant",
                   "the learning rate by epoch: fixed, times FACTOR every EPOCHS epochs, or a cosine to 0 at the "
                   + "last epoch"),
            Option("--epochs", "N", default: "5; .mlmodel: its own", "passes over the data, 1 to \(ValueParsing.maximumCount)"),
            Option("--batch", "N", default: "16; .mlmodel: its own", "items per mini-batch, 1 to \(ValueParsing.maximumCount)"),
            Option("--seed", "N", default: "0; .mlmodel: its own", "the seed of each epoch's shuffled order"),
            Option("--checkpoint", "FILE", default: "none",
                   "also write a checkpoint (weights, optimizer state, step) to resume from"),
            Option("--resume", "FILE", default: "none",
                   "continue from a checkpoint written by --checkpoint (the options may change)"),
            backend("auto"),
            Option("--normalize", "0,1|-1,1|imagenet|mean=..,std=..", default: "0,1",
                   "with a folder of pictures: how pixels become input values"),
            Option("--plot", "FILE.svg", default: "none", "draw the loss of every mini-batch and each epoch's mean"),
            Option("--stats", nil, default: "off",
                   "print each step's time and, on a GPU, the images and buffers it created and the bytes it moved"),
            layer, threads, json("layerkit-train/1"),
        ],
        positional: 1...1,
        examples: ["layerkit train student.onnx --data x.npy --labels y.npy --loss mse --trainable custom \\",
                   "    --optimizer adam --lr 0.05 --epochs 20 --output trained.onnx --plot loss.svg",
                   "layerkit train classifier.onnx --data pictures/ --labels classes.txt --loss ce \\",
                   "    --trainable last:1 --output tuned.onnx",
                   "layerkit train student.onnx --data x.npy --labels y.npy --loss mse --trainable beta \\",
                   "    --resume run.ckpt --epochs 40 --output trained.onnx",
                   "layerkit train Updatable.mlmodel --data x.npy --labels y.npy --output updated.mlmodel"])

    static let generate = CommandHelp(
        name: "generate", synopsis: ["MODEL.onnx --ids ID,... [--tokens N] [--backend B] [--threads N] [--json]"],
        summary: "Greedy text generation with a KV cache, ids in and ids out: runs the prompt with an empty past, "
            + "then each chosen id alone, every present.N output fed back as its past_key_values.N input; with a "
            + "mask and positions input, in a window that grows 64 positions at a time (the slots not yet used "
            + "masked), so 64 decode steps run one plan; prints the generated ids, the load time and the tokens "
            + "per second of the prefill and of the decode.",
        options: [
            Option("--ids", "ID,ID,...", default: "required", "the prompt's token ids, whole numbers in the vocabulary"),
            Option("--tokens", "N", default: "16", "how many ids to generate, 1 to \(ValueParsing.maximumCount)"),
            backend("auto"), threads, json("layerkit-generate/1"),
        ],
        positional: 1...1,
        examples: ["layerkit generate gpt2.onnx --ids 464,3290,318 --tokens 32",
                   "layerkit generate gpt2.onnx --ids 464 --tokens 100 --backend cpu --threads 2 --json"])

    static let demo = CommandHelp(
        name: "demo", synopsis: ["[--output FILE.npy]", "--style [--output FILE.png]"],
        summary: "Runs the Core ML article's model (Conv, Swish, pooling, Dense, softmax) on a built-in image, "
            + "on the GPU and the CPU; --style runs a built-in style-transfer network and writes the picture, "
            + "and beside it input | output (FILE-side-by-side.png); \(DemoCommand.styleCaption).",
        options: [Option("--output", "FILE", default: "none; \(DemoCommand.defaultStylePath) with --style",
                         "write the 10 predictions (.npy), or with --style the picture (.png)"),
                  Option("--style", nil, default: "off", "run the style-transfer network instead"),
                  threads],
        positional: 0...0, examples: ["layerkit demo", "layerkit demo --style --output styled.png"])

    static let bench = CommandHelp(
        name: "bench", synopsis: ["[LAYERS] [--shape NxCxHxW] [--repeat N] [--warmup N] [--backend B] [--json]",
                                  "--sweep [LAYERS] [--backend B] [--plot FILE.svg] [--json]",
                                  "MODEL.onnx [--input FILE ...] [--shape NAME=DIMS ...] [--dim SYMBOL=N ...]"],
        summary: "Times a layer's kernel and end to end (median, min, p90, elements/s, GB/s); --sweep measures "
            + "sizes 1x64x8x8 to 1x64x1024x1024 against the memory-copy ceiling; with a model, whole-model "
            + "times (min, median, p90, mean, inferences/s).",
        options: layerOptions + [
            seededShape, dim,
            Option("--repeat", "N", default: "30; 10 with --sweep", "timed runs, 1 to \(ValueParsing.maximumCount)"),
            Option("--warmup", "N", default: "3", "untimed runs first, 0 to \(ValueParsing.maximumCount)"),
            backend("both", both: true),
            Option("--json", nil, default: "off", "print one layerkit-bench/1 JSON record (a model: layerkit-bench-model/1)"),
            Option("--sweep", nil, default: "off", "measure every size from 8x8 to 1024x1024"),
            Option("--plot", "FILE.svg", default: "none", "draw the sweep"),
            input, layer, threads,
        ] + ImageOptions.help,
        positional: 0...1, examples: ["layerkit bench --op Swish --shape 1x64x256x256 --backend cpu",
                                      "layerkit bench --sweep --plot sweep.svg",
                                      "layerkit bench model.onnx --backend cpu --json",
                                      "layerkit bench model.onnx --dim batch=8 --backend cpu"])

    static let profile = CommandHelp(
        name: "profile", synopsis: ["LAYERS [--shape NxCxHxW] [--repeat N] [--warmup N] [--trace FILE.json] [...]",
                                    "MODEL.onnx [--input FILE|NAME=FILE ...] [--by-op] [--sort order|time] [...]"],
        summary: "Shows where one run's time goes (the run with the median wall time): per-layer table, overhead, "
            + "and a Chrome trace.",
        options: layerOptions + [
            input, layer, seededShape, dim,
            Option("--repeat", "N", default: "5", "profiled runs, 1 to \(ValueParsing.maximumCount)"),
            Option("--warmup", "N", default: "3", "unprofiled runs first, 0 to \(ValueParsing.maximumCount)"),
            backend("gpu"),
            Option("--trace", "FILE.json", default: "none", "write the median run as a Chrome trace-event file"),
            Option("--by-op", nil, default: "off", "one row per op type (Conv, Relu, ...): calls and times summed, slowest first"),
            Option("--sort", "order|time", default: "order", "the rows in the order they first ran, or slowest first"),
            threads, json("layerkit-profile/1"),
        ] + ImageOptions.help,
        positional: 0...1, examples: ["layerkit profile --op Swish --shape 1x64x512x512 --trace swish.json",
                                      "layerkit profile model.onnx --repeat 20",
                                      "layerkit profile model.onnx --by-op --backend cpu"])
}

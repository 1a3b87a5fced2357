#!/usr/bin/env python3
"""A tiny GPT-2 with a KV cache, exported to ONNX, and its greedy generation
computed by onnxruntime, for `layerkit generate` (GenerateCommandTests).

What it writes (Tests/LayerKitTests/Fixtures/gpt2-kv/ by default):
    model.onnx       transformers' GPT2LMHeadModel (seeded random weights: 2 layers,
                     4 heads, n_embd 64, vocab 256, eager attention) exported by
                     torch.onnx with its cache as flat tensors:
                       inputs   input_ids int64 [1, S], attention_mask int64 [1, P+S],
                                position_ids int64 [1, S],
                                past_key_values.N.key / .value float [1, 4, P, 16]
                       outputs  logits [1, S, vocab], present.N.key / .value [1, 4, P+S, 16]
    reference.json   {"prompt": [...], "tokens": K, "ids": [...K generated ids...],
                      "margins": [...top-1 minus top-2 logit at each step...]}
The ids are onnxruntime's greedy KV-cache loop (prefill the prompt with an empty
past, then one token at a time, present fed back as past); the script checks them
against transformers' own `generate(do_sample=False)` and fails when they differ,
or when a step's top-1 margin is below --min-margin (so the GPU's fp16 storage
cannot flip a choice).

--gpt2-small writes a GPT-2-small-shaped export instead (12 layers, n_embd 768,
12 heads, vocab 50257, random weights; ~500 MB) for Benchmarks/compare_generate_onnxruntime.py,
to .build/gpt2-small-kv/ by default; not committed.

How to run (from the repository root)
    python3 -m venv .build/gpt2-venv
    .build/gpt2-venv/bin/pip install torch==2.13.0+cpu transformers onnx==1.23.2 onnxruntime==1.32.0 numpy onnxscript
    .build/gpt2-venv/bin/python Scripts/generate_gpt2_fixture.py
"""
import argparse
import json
import os
import time

import numpy as np
import onnxruntime as ort

PROMPT = [17, 93, 5, 201, 42]


def flat_cache_module(model, layers):
    """GPT2LMHeadModel with its cache as flat tensors: (key, value) per layer in, present out.
    (torch and transformers are imported here, so that the benchmark's import of ort_greedy needs neither.)"""
    import torch
    from transformers import DynamicCache

    class FlatCacheGPT2(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, position_ids, *past):
            cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(layers)])
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=cache, use_cache=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    return FlatCacheGPT2()


def names(layers):
    """The past inputs' and present outputs' names, key then value per layer."""
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    return past, present


def export(model, config, path):
    import torch
    layers, heads = config.n_layer, config.n_head
    head_size = config.n_embd // heads
    past_names, present_names = names(layers)
    # Traced with a non-empty past so every dimension stays symbolic.
    ids = torch.tensor([[1, 2]], dtype=torch.int64)
    mask = torch.ones(1, 5, dtype=torch.int64)
    positions = torch.tensor([[3, 4]], dtype=torch.int64)
    past = [torch.zeros(1, heads, 3, head_size) for _ in past_names]
    axes = {"input_ids": {1: "sequence"}, "attention_mask": {1: "total_sequence"},
            "position_ids": {1: "sequence"}, "logits": {1: "sequence"}}
    axes.update({n: {2: "past_sequence"} for n in past_names})
    axes.update({n: {2: "total_sequence"} for n in present_names})
    with torch.no_grad():
        torch.onnx.export(flat_cache_module(model, layers), (ids, mask, positions, *past), path,
                          input_names=["input_ids", "attention_mask", "position_ids", *past_names],
                          output_names=["logits", *present_names], dynamic_axes=axes, opset_version=17,
                          dynamo=False)


def ort_greedy(path, prompt, tokens, threads=1):
    """onnxruntime's KV-cache loop on the CPU with `threads` intra-op threads:
    (generated ids, top-1 margins, prefill seconds, decode seconds, session
    creation seconds). The cache's shape comes from the model's past inputs,
    their past length 0."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    load = time.perf_counter() - start
    past = {i.name: np.zeros([d if isinstance(d, int) else 0 for d in i.shape], np.float32)
            for i in session.get_inputs() if i.name.startswith("past_key_values.")}
    past_names = list(past)
    ids, generated, margins, seconds = list(prompt), [], [], []
    step = np.array([prompt], np.int64)
    for _ in range(tokens):
        total = len(ids)
        feed = {"input_ids": step, "attention_mask": np.ones((1, total), np.int64),
                "position_ids": np.arange(total - step.shape[1], total, dtype=np.int64)[None], **past}
        start = time.perf_counter()
        outputs = session.run(None, feed)
        row = outputs[0][0, -1]
        token = int(np.argmax(row))
        seconds.append(time.perf_counter() - start)
        best, second = np.sort(row)[-2:][::-1]
        margins.append(float(best - second))
        generated.append(token)
        ids.append(token)
        past = dict(zip(past_names, outputs[1:]))
        step = np.array([[token]], np.int64)
    return generated, margins, seconds[0], sum(seconds[1:]), load


def main():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpt2-small", action="store_true", help="the GPT-2-small-shaped export, for benchmarks")
    parser.add_argument("--output", help="the folder to write")
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--min-margin", type=float, default=0.05)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if args.gpt2_small:
        config = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024, eos_token_id=None)
        folder = args.output or os.path.join(root, ".build", "gpt2-small-kv")
    else:
        config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=128,
                            initializer_range=0.2, bos_token_id=0, eos_token_id=None)
        folder = args.output or os.path.join(root, "Tests", "LayerKitTests", "Fixtures", "gpt2-kv")
    config._attn_implementation = "eager"
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    torch.manual_seed(args.seed)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        # Before the export, which traces through the model. No eos token: all --tokens steps run.
        expected = model.generate(torch.tensor([PROMPT]), max_new_tokens=args.tokens,
                                  do_sample=False)[0, len(PROMPT):].tolist()
    export(model, config, path)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB)")
    if args.gpt2_small:
        return
    generated, margins, *_ = ort_greedy(path, PROMPT, args.tokens)
    if generated != expected:
        raise SystemExit(f"onnxruntime's ids {generated} differ from transformers' generate() {expected}")
    if min(margins) < args.min_margin:
        raise SystemExit(f"a top-1 margin is {min(margins):.4f} < {args.min_margin}: choose another --seed")
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump({"prompt": PROMPT, "tokens": args.tokens, "ids": generated,
                   "margins": [round(m, 5) for m in margins], "seed": args.seed,
                   "versions": {"torch": torch.__version__, "onnxruntime": ort.__version__}}, f, indent=1)
        f.write("\n")
    print(f"ids {generated}, smallest top-1 margin {min(margins):.4f}")


if __name__ == "__main__":
    main()

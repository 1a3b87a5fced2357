#!/usr/bin/env python3
"""Greedy generation with a KV cache: `layerkit generate` beside onnxruntime's
own KV-cache loop, on the CPU, at the same thread counts.

Both run the same export (Scripts/generate_gpt2_fixture.py --gpt2-small: a
GPT-2-small-shaped model, 12 layers, n_embd 768, vocab 50257, random weights,
written to .build/gpt2-small-kv/model.onnx), the same prompt and the same
number of tokens; each reports the prefill (the prompt with an empty past)
and the decode (one id per run, the present outputs fed back as the past
inputs) apart. onnxruntime: intra_op_num_threads = N, inter_op 1, default
graph optimizations; LayerKit: `--backend cpu --threads N`. The table holds
medians over --repeat runs of each; both sides' ids must agree. "load" is
onnxruntime's InferenceSession creation and LayerKit's model load (its
`loadMs`); a KV-cache export plans at its first run, so LayerKit's prefill
holds the import work onnxruntime does in its session creation: compare
load + prefill, the time to the first id.

    python3 Benchmarks/compare_generate_onnxruntime.py [--model FILE] [--layerkit BIN]
        [--prompt-tokens 8] [--tokens 32] [--threads 1,2] [--repeat 3]

Needs numpy and onnxruntime (the venv of Scripts/generate_gpt2_fixture.py has them)
and a release build (`swift build -c release`).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Scripts"))
from generate_gpt2_fixture import ort_greedy  # noqa: E402


def layerkit(binary, model, prompt, tokens, threads):
    """One `layerkit generate --json` run: (ids, prefill ms, decode ms, load ms)."""
    words = [binary, "generate", model, "--ids", ",".join(map(str, prompt)), "--tokens", str(tokens),
             "--backend", "cpu", "--threads", str(threads), "--json"]
    record = json.loads(subprocess.run(words, check=True, capture_output=True, text=True).stdout)
    return record["ids"], record["prefill"]["ms"], record["decode"]["ms"], record["loadMs"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=os.path.join(ROOT, ".build", "gpt2-small-kv", "model.onnx"))
    parser.add_argument("--layerkit", default=os.path.join(ROOT, ".build", "release", "layerkit"))
    parser.add_argument("--prompt-tokens", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    prompt = [(464 + 97 * i) % 50257 for i in range(args.prompt_tokens)]
    decoded = args.tokens - 1
    print(f"model {os.path.relpath(args.model, ROOT)}, prompt {len(prompt)} ids, {args.tokens} generated, "
          f"medians of {args.repeat}; load average {os.getloadavg()[0]:.2f}")
    print("| threads | runtime | load ms | prefill ms | load + prefill ms | decode ms/token | decode tokens/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for threads in [int(t) for t in args.threads.split(",")]:
        runs = {"onnxruntime": [], "LayerKit": []}
        for _ in range(args.repeat):
            ids, _, prefill, decode, load = ort_greedy(args.model, prompt, args.tokens, threads)
            runs["onnxruntime"].append((ids, prefill * 1000, decode * 1000, load * 1000))
            runs["LayerKit"].append(layerkit(args.layerkit, args.model, prompt, args.tokens, threads))
        if runs["onnxruntime"][0][0] != runs["LayerKit"][0][0]:
            print(f"warning: the ids differ: onnxruntime {runs['onnxruntime'][0][0]}, LayerKit {runs['LayerKit'][0][0]}",
                  file=sys.stderr)
        for name, samples in runs.items():
            prefill = statistics.median(s[1] for s in samples)
            decode = statistics.median(s[2] for s in samples) / decoded
            load = statistics.median(s[3] for s in samples)
            first = statistics.median(s[1] + s[3] for s in samples)
            print(f"| {threads} | {name} | {load:.1f} | {prefill:.1f} | {first:.1f} | {decode:.1f} | {1000 / decode:.1f} |")


if __name__ == "__main__":
    main()

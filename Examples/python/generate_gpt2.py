#!/usr/bin/env python3
"""Greedy generation with a KV cache through the `layerkit` package: ids in, ids out.

The model is a decoder exported with its cache as inputs and outputs (GPT-2 by
torch.onnx or optimum: input_ids, attention_mask, position_ids and
past_key_values.N.key/.value in; logits and present.N.key/.value out), e.g. the
tiny GPT-2 of Scripts/generate_gpt2_fixture.py. Each step feeds every present
output back as its past input, as `layerkit generate` does; the cache lives in
numpy arrays between steps. The decode runs in a window, as `layerkit generate`'s
does: the past grows 64 positions at a time up to the run's whole span, the cached
tokens at its end after zeros the attention mask hides, so the steps within 64
positions have the same input shapes and LayerKit runs them with one plan (a cache
that grows by one is a new shape, so a new plan, each step).

    python3 Examples/python/generate_gpt2.py [MODEL] [--ids 17,93,5,201,42] [--tokens 12]
        [--backend cpu|gpu] [--threads N]
"""
import argparse
import time

import numpy as np

import layerkit


def right_aligned(cache, slots):
    """`cache` with `slots` positions on axis 2: its last ones, after zeros when it has fewer."""
    if cache.shape[2] >= slots:
        return cache[:, :, cache.shape[2] - slots:]
    padding = np.zeros(cache.shape[:2] + (slots - cache.shape[2],) + cache.shape[3:], cache.dtype)
    return np.concatenate([padding, cache], axis=2)


def greedy(model, prompt, tokens):
    """`tokens` ids after `prompt`, each the argmax of the last logits row; and
    the seconds of the prefill (the prompt) and of the decode (one id per run)."""
    past_names = [name for name in model.inputs if name.startswith("past_key_values.")]
    past = {}
    for name in past_names:
        shape = [0 if axis == 2 else max(size, 1) for axis, size in enumerate(model.input_shapes[name])]
        past[name] = np.zeros(shape, np.float32)          # an empty cache: past length 0
    window = len(prompt) + tokens - 2                     # the positions the last decode step reads
    step_size = 64                                        # the past grows this many positions at a time
    cached, generated, seconds = 0, [], []
    step = np.array([prompt], np.int64)
    for _ in range(tokens):
        slots = past[past_names[0]].shape[2]              # cached tokens at the end, masked zeros before
        total = cached + step.shape[1]
        mask = np.concatenate([np.zeros(slots - cached, np.int64), np.ones(total, np.int64)])[None]
        feed = {"input_ids": step, "attention_mask": mask,
                "position_ids": np.arange(cached, total, dtype=np.int64)[None], **past}
        start = time.perf_counter()
        outputs = model.predict(feed)
        seconds.append(time.perf_counter() - start)
        token = int(np.argmax(outputs["logits"][0, -1]))
        generated.append(token)
        keep = min(window, -(-total // step_size) * step_size) if total <= window else slots + step.shape[1]
        past = {name: right_aligned(outputs[name.replace("past_key_values.", "present.", 1)], keep)
                for name in past_names}
        cached = total
        step = np.array([[token]], np.int64)
    return generated, seconds[0], sum(seconds[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", default="Tests/LayerKitTests/Fixtures/gpt2-kv/model.onnx")
    parser.add_argument("--ids", default="17,93,5,201,42")
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    prompt = [int(word) for word in args.ids.split(",")]
    with layerkit.Model(args.model, backend=args.backend, threads=args.threads) as model:
        generated, prefill, decode = greedy(model, prompt, args.tokens)
    print("ids:", ",".join(map(str, generated)))
    print(f"prefill: {len(prompt)} tokens in {prefill * 1000:.2f} ms ({len(prompt) / prefill:.1f} tokens/s)")
    if args.tokens > 1:
        print(f"decode: {args.tokens - 1} tokens in {decode * 1000:.2f} ms ({(args.tokens - 1) / decode:.1f} tokens/s)")


if __name__ == "__main__":
    main()

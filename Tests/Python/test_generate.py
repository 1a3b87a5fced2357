"""Examples/python/generate_gpt2.py, the KV-cache loop through the installed
`layerkit` package, prints onnxruntime's greedy ids for the tiny GPT-2 of
Scripts/generate_gpt2_fixture.py (Tests/LayerKitTests/Fixtures/gpt2-kv)."""
import json
import os
import subprocess
import sys
import unittest

from test_layerkit import SOURCE

FIXTURE = os.path.join(SOURCE, "Tests", "LayerKitTests", "Fixtures", "gpt2-kv")
EXAMPLE = os.path.join(SOURCE, "Examples", "python", "generate_gpt2.py")


class GenerateExampleTests(unittest.TestCase):
    def test_the_example_prints_onnxruntimes_ids(self):
        with open(os.path.join(FIXTURE, "reference.json")) as file:
            reference = json.load(file)
        words = [sys.executable, EXAMPLE, os.path.join(FIXTURE, "model.onnx"),
                 "--ids", ",".join(map(str, reference["prompt"])), "--tokens", str(len(reference["ids"]))]
        child = subprocess.run(words, capture_output=True, text=True, timeout=300)
        self.assertEqual(child.returncode, 0, child.stderr)
        lines = child.stdout.splitlines()
        self.assertEqual(lines[0], "ids: " + ",".join(map(str, reference["ids"])))
        self.assertTrue(lines[1].startswith(f"prefill: {len(reference['prompt'])} tokens in "))
        self.assertTrue(lines[2].startswith(f"decode: {len(reference['ids']) - 1} tokens in "))


if __name__ == "__main__":
    unittest.main()

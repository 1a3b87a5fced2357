"""The code of Docs/PYTHON.md's "Custom layers" section runs as written and
prints what the page shows (in a child interpreter, from the checkout's
root, so its register_layer stays out of this process)."""
import os
import re
import subprocess
import sys
import unittest

from test_layerkit import SOURCE

PAGE = os.path.join(SOURCE, "Docs", "PYTHON.md")


def section_blocks(title: str):
    """The section's first python block and the plain block after it."""
    with open(PAGE) as page:
        text = page.read()
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    printed = re.search(r"```\n(.*?)```", section[code.end():], re.S)
    return code.group(1), printed.group(1)


class DocumentedCodeTests(unittest.TestCase):
    def test_the_custom_layers_example_runs_as_documented(self):
        code, printed = section_blocks("Custom layers")
        child = subprocess.run([sys.executable, "-c", code], cwd=SOURCE, capture_output=True, text=True, timeout=300)
        self.assertEqual(child.returncode, 0, child.stderr)
        self.assertEqual(child.stdout, printed)
        self.assertEqual(child.stderr, "")


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""tools/lesson_excerpts.py on a source tree of its own: an excerpt that is in its file passes
(annotated, shortened with "...", its #pragma lines left out, a template header above its anchor
included); one changed line of the source, a
block that names no source, a missing file or anchor, or an excerpt out of order fails, naming
the README's line, in a list item's indented block as elsewhere; a block marked simplified is
not compared.

    lesson_excerpts_test.py --tool tools/lesson_excerpts.py
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOL = None  # set from the command line

KERNEL = """// A kernel a lesson quotes.
#include <cstdint>

__global__ void other_kernel(float* y) { y[0] = 0.0f; }

__global__ void scale_kernel(std::int64_t n, float alpha, float* y) {
    const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
#pragma unroll
    for (int k = 0; k < 4; ++k) y[i] *= alpha;  // four times, to have a loop
    y[i] += 1.0f;
}
"""

EXCERPT = """<!-- excerpt: src/scale.cu scale_kernel -->
```cpp
const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // the global index
// ... the bounds check
for (int k = 0; k < 4; ++k)   y[i] *= alpha;
```
"""


class LessonExcerpts(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.root, "src"))
        os.makedirs(os.path.join(self.root, "lessons", "99_test"))
        self.write("src/scale.cu", KERNEL)

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, path, text):
        with open(os.path.join(self.root, path), "w", encoding="utf-8") as f:
            f.write(text)

    def readme(self, body):
        self.write("lessons/99_test/README.md", "# Lesson 99\n\nSome prose.\n\n" + body + "\nEnd.\n")

    def run_tool(self):
        done = subprocess.run([sys.executable, TOOL, "--root", self.root], capture_output=True,
                              text=True)
        return done.returncode, done.stdout + done.stderr

    def assert_fails(self, expected):
        code, output = self.run_tool()
        self.assertEqual(code, 1, output)
        self.assertIn(expected, output)

    def test_an_excerpt_that_is_in_its_file_passes(self):
        self.readme(EXCERPT + "\n```\nan output block is not code\n```\n")
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        self.assertIn("all 1 code blocks match", output)

    def test_readmes_without_code_fail_as_checking_nothing(self):
        self.readme("```\nonly an output block\n```\n")
        self.assert_fails("no code block in")

    def test_a_readme_that_is_not_utf8_fails_in_one_line(self):
        with open(os.path.join(self.root, "lessons/99_test/README.md"), "wb") as f:
            f.write(b"# Lesson 99\n\xff\xfe\n")
        code, output = self.run_tool()
        self.assertEqual(code, 1, output)
        self.assertNotIn("Traceback", output)
        self.assertIn("lessons/99_test/README.md: cannot be read as UTF-8 text", output)

    def test_one_changed_line_of_the_source_fails(self):
        self.readme(EXCERPT)
        self.write("src/scale.cu", KERNEL.replace("y[i] *= alpha;", "y[i] *= 2.0f * alpha;"))
        self.assert_fails("lessons/99_test/README.md:6: the excerpt is no longer in src/scale.cu")

    def test_a_line_the_excerpt_changed_fails(self):
        self.readme(EXCERPT.replace("k < 4", "k < 8"))
        self.assert_fails("for (int k = 0; k < 8; ++k) y[i] *= alpha;")

    def test_an_excerpt_must_follow_its_anchor_and_the_order_of_the_file(self):
        self.readme(EXCERPT.replace("scale_kernel", "other_kernel").replace(
            "src/scale.cu other_kernel", "src/scale.cu y[i] += 1.0f"))
        self.assert_fails("the excerpt is no longer in src/scale.cu after 'y[i] += 1.0f'")
        swapped = EXCERPT.replace("// ... the bounds check\n", "").split("\n")
        swapped[2], swapped[3] = swapped[3], swapped[2]
        self.readme("\n".join(swapped))
        self.assert_fails("the excerpt is no longer in src/scale.cu")

    def test_a_template_header_belongs_to_the_function_its_anchor_names(self):
        header, body = "template <int n>\n", "__global__ void fixed_kernel(float* y) {\n"
        self.write("src/scale.cu", KERNEL + "\n" + header + body + "    y[0] = float(n);\n}\n")
        self.readme("<!-- excerpt: src/scale.cu fixed_kernel -->\n```cpp\n" + header + body +
                    "```\n")
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        # Only the line right above: a template line further up is not the function's.
        self.write("src/scale.cu", KERNEL + "\n" + header + "\n" + body + "    y[0] = float(n);\n}\n")
        self.assert_fails("the excerpt is no longer in src/scale.cu after 'fixed_kernel'")

    def test_a_block_inside_a_list_item_is_compared_too(self):
        indented = "".join("  " + line + "\n" for line in EXCERPT.splitlines())
        self.readme("- A list item, whose code block is indented:\n\n" + indented)
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        self.assertIn("all 1 code blocks match", output)
        self.readme("- A list item:\n\n" + indented.replace("k < 4", "k < 8"))
        self.assert_fails("for (int k = 0; k < 8; ++k) y[i] *= alpha;")
        self.readme("- A list item:\n\n" + indented.split("\n", 1)[1])
        self.assert_fails("this ```cpp block names no source")

    def test_a_block_that_names_no_source_fails(self):
        self.readme(EXCERPT.split("\n", 1)[1])
        self.assert_fails("lessons/99_test/README.md:5: this ```cpp block names no source")

    def test_a_missing_file_or_anchor_fails(self):
        self.readme(EXCERPT.replace("src/scale.cu", "src/gone.cu"))
        self.assert_fails("src/gone.cu (named by its excerpt mark) does not exist")
        self.readme(EXCERPT.replace("scale_kernel", "renamed_kernel"))
        self.assert_fails("no line of src/scale.cu contains the anchor 'renamed_kernel'")

    def test_a_simplified_block_is_not_compared_but_its_source_must_exist(self):
        simplified = EXCERPT.replace("excerpt:", "simplified:").replace("k < 4", "k < K")
        self.readme(simplified)
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        self.readme(simplified.replace("scale_kernel", "renamed_kernel"))
        self.assert_fails("contains the anchor 'renamed_kernel'")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    args, rest = parser.parse_known_args()
    TOOL = os.path.abspath(args.tool)
    unittest.main(argv=[sys.argv[0], *rest])

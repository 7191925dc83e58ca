#!/usr/bin/env python3
"""tools/lesson_outputs.py on a lesson of its own, with a stand-in lesson program: a quoted output
whose times differ from the run still passes; one changed digit of a column that is not a time
fails, as do a missing or an extra line; an error figure is compared only on the machine kind it
was recorded on; a "part" block may quote a slice, and "..." skips lines; --write rewrites a
stale block (and only a stale one) with what the program prints; a mark may set the program's
environment, and a block may be a list item's, indented; an edit mark that is malformed or not
above an output mark fails (edited_build_test.py builds and checks an edit); a block without its
closing fence, and a program that fails, are named as such, not called stale, and --write leaves
their README as it was.

    lesson_outputs_test.py --tool tools/lesson_outputs.py
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOL = None  # set from the command line

# Prints like a lesson program: its times (measured) and errors (the machine's) marked under
# TRIPTYCH_LESSON_OUTPUT=marked, its time from the environment so that each run can differ.
PROGRAM = r"""#!/usr/bin/env python3
import os, sys
marked = os.environ.get("TRIPTYCH_LESSON_OUTPUT") == "marked"
measured = (lambda t: "\u27e6" + t + "\u27e7") if marked else (lambda t: t)
machine = (lambda t: "\u27e8" + t + "\u27e9") if marked else (lambda t: t)
time = os.environ.get("FAKE_TIME", "1.25 ms")
if sys.argv[1:] != ["7"]:  # as a lesson program refuses an argument it does not take
    print(f"usage: {os.path.basename(sys.argv[0])} [SEED]", file=sys.stderr)
    print(f"{os.path.basename(sys.argv[0])}: unknown argument {sys.argv[-1]}", file=sys.stderr)
    for i in range(3, 9):
        print(f"  error line {i}", file=sys.stderr)
    sys.exit(2)
print(f"seed 7 (replay: build/lessons/{os.path.basename(sys.argv[0])} 7)")
print(f"threads {os.environ.get('OMP_NUM_THREADS')}")
print()
print(f"{'variant':<14} {'time':>11}  vs float64 reference")
for name in ("cpu_naive", "gpu_tiled"):
    print(f"{name:<14} {measured(time):>11}  PASS  max abs {machine('4.76e-07')}, rel 0")
print("all variants match the reference")
"""

QUOTED = """seed 7 (replay: build/lessons/lesson_99_test 7)
threads 2

variant               time  vs float64 reference
cpu_naive          1.25 ms  PASS  max abs 4.76e-07, rel 0
gpu_tiled          1.25 ms  PASS  max abs 4.76e-07, rel 0
all variants match the reference"""

# Stands in for build/tools/triptych: `train` prints an epoch line, the loss and accuracy the
# machine's, the times measured, and writes its loss curve where it runs.
TRIPTYCH = r"""
import os, sys
marked = os.environ.get("TRIPTYCH_LESSON_OUTPUT") == "marked"
measured = (lambda t: "\u27e6" + t + "\u27e7") if marked else (lambda t: t)
machine = (lambda t: "\u27e8" + t + "\u27e9") if marked else (lambda t: t)
print(f"triptych {' '.join(sys.argv[1:])}, started in an empty folder: {os.listdir('.') == []}")
os.makedirs("training")
open(os.path.join("training", "mlp.csv"), "w").write("step,epoch,loss\n")
print(f"epoch    train loss  test accuracy   seconds   images/s")
print(f"  1/1    {machine('0.4821')}   {machine('85.84')}%   {measured(os.environ.get('FAKE_TIME'))}  {measured('77777')}")
print("loss curve: training/mlp.csv", flush=True)
print("triptych train: a warning on the error output", file=sys.stderr, flush=True)
print("done")
"""


def kind_here():
    sys.path.insert(0, os.path.dirname(TOOL))
    import lesson_outputs  # noqa: E402  (the tool itself: the machine kind it would record)
    return lesson_outputs.machine_kind()


class LessonOutputs(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.bin = os.path.join(self.root, "bin")
        os.makedirs(self.bin)
        os.makedirs(os.path.join(self.root, "lessons", "99_test"))
        program = os.path.join(self.bin, "lesson_99_test")
        with open(program, "w", encoding="utf-8") as f:
            f.write(PROGRAM.replace("#!/usr/bin/env python3", "#!" + sys.executable, 1))
        os.chmod(program, 0o755)
        self.readme_path = os.path.join(self.root, "lessons", "99_test", "README.md")

    def tearDown(self):
        shutil.rmtree(self.root)

    def readme(self, block, options="", recorded_on=None, env="", indent="", above=""):
        recorded = f"; recorded on {recorded_on or kind_here()}"
        block = "\n".join(indent + line for line in block.split("\n"))
        with open(self.readme_path, "w", encoding="utf-8") as f:
            f.write(f"# Lesson 99\n\n1. The program prints:\n\n{above}{indent}<!-- output: {env}"
                    f"lesson_99_test 7{options}{recorded} -->\n{indent}```\n{block}\n{indent}```"
                    "\n\nEnd.\n")

    def run_tool(self, mode="--check", time="3.50 ms", extra=()):
        done = subprocess.run([sys.executable, TOOL, mode, *extra, "--bin", self.bin, "--root",
                               self.root],
                              capture_output=True, text=True, env=dict(os.environ, FAKE_TIME=time))
        return done.returncode, done.stdout + done.stderr

    def assert_fails(self, expected):
        code, output = self.run_tool()
        self.assertEqual(code, 1, output)
        self.assertIn(expected, output)

    def test_a_quoted_output_passes_though_its_times_differ(self):
        self.readme(QUOTED)
        code, output = self.run_tool(time="812 us")
        self.assertEqual(code, 0, output)
        self.assertIn("all 1 quoted outputs are what their programs print", output)

    def test_one_changed_digit_fails(self):
        self.readme(QUOTED.replace("threads 2", "threads 3"))
        self.assert_fails("line 2 of the block:\n      quoted:  threads 3\n      printed: threads 2")

    def test_a_missing_or_an_extra_line_fails(self):
        self.readme(QUOTED.replace("\nall variants match the reference", ""))
        self.assert_fails("the program prints more than the block quotes, from: all variants")
        self.readme(QUOTED + "\none line too many")
        self.assert_fails("line 8 of the block is past the end of the output: one line too many")

    def test_a_malformed_mark_fails_instead_of_being_skipped(self):
        # A mark with two spaces was skipped, so the tampered block under it passed.
        self.readme(QUOTED.replace("threads 2", "threads 3"))
        with open(self.readme_path, encoding="utf-8") as f:
            text = f.read().replace("<!-- output: ", "<!--  output: ")
        with open(self.readme_path, "w", encoding="utf-8") as f:
            f.write(text)
        self.assert_fails("README.md: line 5: an output mark not of the form")
        code, output = self.run_tool(mode="--write")
        self.assertEqual(code, 1, output)
        self.assertIn("README.md: line 5: an output mark not of the form", output)

    def test_a_lessons_folder_that_is_not_there_fails(self):
        done = subprocess.run([sys.executable, TOOL, "--check", "--bin", self.bin, "--root",
                               os.path.join(self.root, "absent")], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no such folder of lessons", done.stderr)

    def test_an_error_is_compared_on_the_machine_kind_it_was_recorded_on(self):
        changed = QUOTED.replace("4.76e-07", "4.77e-07", 1)
        self.readme(changed)
        self.assert_fails("line 5 of the block:\n      quoted:  cpu_naive          1.25 ms  PASS  "
                          "max abs 4.77e-07, rel 0")
        self.readme(changed, recorded_on="some other CPU")
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        self.assertIn("the errors of 1 recorded elsewhere were not compared", output)

    def test_a_mark_without_the_cpu_family_and_model_fails(self):
        # Marks written before the kind named the family and model matched no machine, so the
        # errors under them went uncompared everywhere.
        self.readme(QUOTED, recorded_on="AMD EPYC, x86-64 AVX-512")
        self.assert_fails("'recorded on AMD EPYC, x86-64 AVX-512' names no CPU family and model")
        code, output = self.run_tool(mode="--write", extra=("--only", "lesson_99_test"))
        self.assertEqual(code, 0, output)
        self.assertEqual(self.run_tool()[0], 0)

    def test_a_part_may_quote_a_slice_and_dots_skip_lines(self):
        lines = QUOTED.split("\n")
        self.readme("\n".join(lines[3:5]), options="; part")
        self.assertEqual(self.run_tool()[0], 0)
        self.readme("\n".join(lines[:2] + ["..."] + lines[5:]))
        self.assertEqual(self.run_tool()[0], 0)
        self.readme("\n".join(lines[3:5]))  # the same slice, not marked as a part
        self.assert_fails("line 1 of the block:")

    def test_write_rewrites_a_stale_block_and_keeps_a_fresh_one(self):
        self.readme(QUOTED)
        self.assertEqual(self.run_tool("--write", time="9.99 ms")[0], 0)
        with open(self.readme_path, encoding="utf-8") as f:
            self.assertIn("cpu_naive          1.25 ms", f.read())  # fresh: its times are kept
        self.readme(QUOTED.replace("threads 2", "threads 3"), recorded_on="some other CPU")
        code, output = self.run_tool("--write", time="9.99 ms")
        self.assertEqual(code, 0, output)
        with open(self.readme_path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(f"<!-- output: lesson_99_test 7; recorded on {kind_here()} -->", text)
        self.assertIn("threads 2\n", text)
        self.assertIn("cpu_naive          9.99 ms  PASS", text)  # as printed, without marks
        self.assertEqual(self.run_tool()[0], 0)

    def test_write_only_rewrites_that_programs_blocks_stale_or_not(self):
        # Recorded elsewhere with another error: not stale here, so --write keeps it...
        self.readme(QUOTED.replace("4.76e-07", "4.77e-07", 1), recorded_on="some other CPU")
        self.assertEqual(self.run_tool("--write", time="9.99 ms")[0], 0)
        with open(self.readme_path, encoding="utf-8") as f:
            self.assertIn("4.77e-07", f.read())
        # ... another program's name leaves it alone, and its own name records it here, anew.
        self.assertEqual(self.run_tool("--write", extra=("--only", "lesson_98_other"))[0], 0)
        with open(self.readme_path, encoding="utf-8") as f:
            self.assertIn("4.77e-07", f.read())
        code, output = self.run_tool("--write", time="9.99 ms", extra=("--only", "lesson_99_test"))
        self.assertEqual(code, 0, output)
        with open(self.readme_path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(f"recorded on {kind_here()} -->", text)
        self.assertIn("max abs 4.76e-07", text)
        self.assertNotIn("4.77e-07", text)

    def test_the_machine_kind_names_the_cpu_family_and_model(self):
        # Two EPYCs of one instruction set (a Zen 4 and a Zen 5) round differently: OpenBLAS
        # picks its kernels by family and model.
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            has_family = any(line.startswith("cpu family") for line in f)
        if has_family:
            self.assertRegex(kind_here(), r"\(family \d+, model \d+\), ")

    def test_a_stale_part_is_left_to_be_edited_by_hand(self):
        self.readme("threads 3", options="; part")
        code, output = self.run_tool("--write")
        self.assertEqual(code, 1, output)
        self.assertIn("a stale block that quotes part of the output, not rewritten", output)

    def install_triptych(self):
        """The stand-in command-line tool, where build/tools/triptych is to build/lessons."""
        tools = os.path.join(self.root, "tools")
        os.makedirs(tools)
        with open(os.path.join(tools, "triptych"), "w", encoding="utf-8") as f:
            f.write("#!" + sys.executable + "\n" + TRIPTYCH)
        os.chmod(os.path.join(tools, "triptych"), 0o755)

    def test_a_triptych_command_runs_next_to_the_lessons_in_a_folder_of_its_own(self):
        self.install_triptych()
        quoted = ("triptych train --epochs 1, started in an empty folder: True\n"
                  "...\n  1/1        0.4821         85.84%      2.85      21029")

        def quote(block):
            with open(self.readme_path, "w", encoding="utf-8") as f:
                f.write(f"# Lesson 99\n\n<!-- output: triptych train --epochs 1; part; recorded "
                        f"on {kind_here()} -->\n```\n{block}\n```\n")

        quote(quoted)
        code, output = self.run_tool(time="0.77")
        self.assertEqual(code, 0, output)
        self.assertFalse(os.path.exists(os.path.join(os.getcwd(), "training", "mlp.csv")))
        # On the machine kind it was recorded on, the accuracy is compared.
        quote(quoted.replace("85.84%", "85.83%"))
        self.assert_fails("quoted:  1/1        0.4821         85.83%      2.85      21029")

    def test_a_command_ending_in_2_and_1_quotes_the_error_output_too(self):
        self.install_triptych()

        def quote(redirect):
            with open(self.readme_path, "w", encoding="utf-8") as f:
                f.write(f"# Lesson 99\n\n<!-- output: triptych train {redirect}; part -->\n```\n"
                        "loss curve: training/mlp.csv\ndone\ntriptych train: a warning on the "
                        "error output\n```\n")

        quote("2>&1")  # after the standard output, wherever the program printed it
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        quote("")  # the standard output alone does not hold the warning
        self.assert_fails("past the end of the output: triptych train: a warning on the error "
                          "output")

    def test_a_mark_may_set_the_programs_environment(self):
        one = QUOTED.replace("threads 2", "threads 1")
        self.readme(one, env="OMP_NUM_THREADS=1 ")
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        self.readme(one)  # without it the program runs with 2 threads
        self.assert_fails("quoted:  threads 1")
        # --write keeps the environment in the mark it writes.
        self.readme(QUOTED, env="OMP_NUM_THREADS=1 ")
        self.assertEqual(self.run_tool("--write")[0], 0)
        with open(self.readme_path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("<!-- output: OMP_NUM_THREADS=1 lesson_99_test 7; recorded on", text)
        self.assertIn("threads 1\n", text)

    def test_a_block_may_be_a_list_items(self):
        self.readme(QUOTED, indent="   ")
        code, output = self.run_tool()
        self.assertEqual(code, 0, output)
        self.readme(QUOTED.replace("threads 2", "threads 3"), indent="   ")
        self.assert_fails("quoted:  threads 3")
        self.assertEqual(self.run_tool("--write")[0], 0)
        with open(self.readme_path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("\n   <!-- output: lesson_99_test 7; recorded on", text)
        self.assertIn("\n   threads 2\n\n   variant", text)  # indented, but no trailing spaces
        self.assertEqual(self.run_tool()[0], 0)

    def test_an_edit_mark_must_be_well_formed_and_above_an_output(self):
        # Either mistake would leave the edit unmade and its block checked against the
        # unedited program, or not checked at all.
        self.readme(QUOTED, above="<!-- edit: src/x.cpp: `a` -> `b` -->\n")
        self.assert_fails("an edit mark not of the form '<!-- edit: FILE: `OLD` \u2192 `NEW` -->'")
        self.readme(QUOTED, above="<!-- edit: src/x.cpp: `a` \u2192 `b` -->\n\n")
        self.assert_fails("an edit mark must stand above an output mark")

    def test_a_readme_that_is_not_utf8_fails_in_one_line(self):
        with open(self.readme_path, "wb") as f:
            f.write(b"# Lesson 99\n\xff\xfe\n")
        code, output = self.run_tool()
        self.assertEqual(code, 1, output)
        self.assertNotIn("Traceback", output)
        self.assertIn("README.md: cannot be read as UTF-8 text", output)

    def test_check_only_compares_that_programs_blocks(self):
        self.readme(QUOTED.replace("3.50", "3.51").replace("seed 7", "seed 8"))
        # A program with no block (a misspelt name) checks nothing, which must not pass.
        code, output = self.run_tool(extra=("--only", "lesson_01_other"))
        self.assertEqual(code, 1, output)
        self.assertIn("no quoted output of lesson_01_other", output)
        code, output = self.run_tool(extra=("--only", "lesson_99_test"))
        self.assertEqual(code, 1, output)
        self.assertIn("1 of 1 quoted outputs are stale", output)

    def test_a_command_that_records_accesses_asks_for_the_instrumented_twin(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import lesson_outputs  # noqa: E402  (the tool itself: which commands record accesses)
        marks = {"triptych profile --op gemm": True, "triptych check --racecheck --op gemm": True,
                 "TRIPTYCH_SIM_RACECHECK=1 lesson_03_matmul_tiled 7": True,
                 "TRIPTYCH_SIM_PROFILE=0 lesson_03_matmul_tiled 7": False,
                 "triptych check --op gemm": False, "lesson_03_matmul_tiled profile": False}
        for command, records in marks.items():
            text = f"<!-- output: {command} -->\n```\nx\n```\n"
            block = next(lesson_outputs.blocks(text))
            self.assertEqual(lesson_outputs.records_accesses(block), records, command)

    def test_a_block_without_its_closing_fence_is_named_not_called_stale(self):
        # It ran on to the end of the README: the check called it stale, and --write replaced
        # the prose after it with the program's output.
        text = f"# Lesson 99\n\n<!-- output: lesson_99_test 7 -->\n```\n{QUOTED}\n\nEnd.\n"
        with open(self.readme_path, "w", encoding="utf-8") as f:
            f.write(text)
        self.assert_fails("README.md: line 4: the output block has no closing ``` fence\n")
        self.assertNotIn("stale", self.run_tool()[1])
        code, output = self.run_tool("--write")
        self.assertEqual(code, 1, output)
        self.assertIn("README.md: line 4: the output block has no closing ``` fence", output)
        with open(self.readme_path, encoding="utf-8") as f:
            self.assertEqual(f.read(), text)
        # Left open up to the next block, whose opening fence it would take for its closing one.
        text = text.replace("\nEnd.\n", f"<!-- output: lesson_99_test 7 -->\n```\n{QUOTED}\n```\n")
        with open(self.readme_path, "w", encoding="utf-8") as f:
            f.write(text)
        self.assert_fails("README.md: line 4: the output block has no closing ``` fence before "
                          "the next output mark, at line 12")
        self.assertEqual(self.run_tool("--write")[0], 1)
        with open(self.readme_path, encoding="utf-8") as f:
            self.assertEqual(f.read(), text)

    def test_a_program_that_fails_is_named_with_its_status_and_errors_not_called_stale(self):
        self.readme(QUOTED, options=" --bogus")  # the program refuses the argument, status 2
        with open(self.readme_path, encoding="utf-8") as f:
            text = f.read()
        code, output = self.run_tool()
        self.assertEqual(code, 1, output)
        self.assertIn("README.md:5: build/lessons/lesson_99_test 7 --bogus failed (exit status 2); "
                      "its error output begins:\n    usage: lesson_99_test [SEED]\n    "
                      "lesson_99_test: unknown argument --bogus\n", output)
        self.assertIn("error line 5\n    ...\n", output)  # its first lines only
        self.assertNotIn("error line 6", output)
        self.assertIn("1 of 1 quoted outputs were not compared: their programs failed", output)
        self.assertNotIn("stale", output)
        code, output = self.run_tool("--write")
        self.assertEqual(code, 1, output)
        self.assertIn("README.md:5: build/lessons/lesson_99_test 7 --bogus failed (exit status 2), "
                      "so the README is left as it was; its error output begins:", output)
        with open(self.readme_path, encoding="utf-8") as f:
            self.assertEqual(f.read(), text)

    def test_an_edited_program_may_fail_but_not_be_killed(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import lesson_outputs  # noqa: E402  (the tool itself: run a block of an exercise's edit)
        edited = os.path.join(self.bin, "edited")

        class Built:  # stands in for EditedPrograms: the program as built with the edits
            def path(self, *_):
                return edited
        text = ("<!-- edit: x.cu: `a` \u2192 `b` -->\n<!-- output: lesson_99_test 7; part -->\n"
                "```\nwrong\n```\n")
        block = next(lesson_outputs.blocks(text))
        for body, expected in (("echo wrong; echo broken >&2; exit 1", None),
                               ("echo broken >&2; kill -9 $$", "killed by signal 9")):
            with open(edited, "w", encoding="utf-8") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(edited, 0o755)
            if expected is None:  # an exercise's edit that breaks the program, on purpose
                self.assertEqual(lesson_outputs.run(self.bin, block, Built()), ["wrong"])
                continue
            with self.assertRaises(lesson_outputs.ProgramFailed) as failed:
                lesson_outputs.run(self.bin, block, Built())
            self.assertEqual(str(failed.exception),
                             "build/lessons/lesson_99_test 7 (built with the edits above it) "
                             f"failed ({expected}); its error output begins:\n    broken")

    def test_a_program_that_fails_or_is_missing_fails_the_check(self):
        self.readme(QUOTED)
        os.remove(os.path.join(self.bin, "lesson_99_test"))
        self.assert_fails("no program")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    args, rest = parser.parse_known_args()
    TOOL = os.path.abspath(args.tool)
    unittest.main(argv=[sys.argv[0], *rest])

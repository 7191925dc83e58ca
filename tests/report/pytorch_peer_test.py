"""bench/pytorch_peer.py --quick: its JSON has the schema its docstring gives, every result names a
case of `triptych_bench --quick` (the op and size of one of its rows) so that the report can pair
them, --out leaves one complete file, and bad input is one line on stderr with exit status 1.
Exits 77 (skipped) where /usr/bin/python3 has no torch (tools/install-deps.sh --peer installs it).

    python3 pytorch_peer_test.py --peer-py bench/pytorch_peer.py --bench build/bench/triptych_bench
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

PYTHON = "/usr/bin/python3"  # the interpreter Debian's python3-torch installs for
DATA = "/usr/share/datasets/fashion-mnist"
PEER_PY = BENCH = None  # set from the command line
ALGORITHMS = ("direct", "im2col", "fft", "implicit_gemm", "winograd")


def run_peer(*args):
    return subprocess.run([PYTHON, PEER_PY, *args], capture_output=True, text=True, timeout=240)


def bench_cases():
    """{(op, size)} of the rows `triptych_bench --quick` would run."""
    listed = subprocess.run([BENCH, "--quick", "--benchmark_list_tests"], capture_output=True,
                            text=True, check=True, timeout=60).stdout.split()
    cases = set()
    for name in listed:
        op, _variant, size = name.split("/")[:3]
        cases.add((op, size))
    return cases


def paired_ops(op):
    """The ops of our rows a peer result pairs with (see the peer's docstring)."""
    if op == "train_epoch":
        return {"train_step"}
    if op in ("conv2d_forward", "conv2d_forward_backward"):
        return {f"{op}_{algorithm}" for algorithm in ALGORITHMS}
    return {op}


class QuickRun(unittest.TestCase):
    """Every group but train, once for the class, written with --out."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "peer.json")
        cls.result = run_peer("gemm", "conv", "pool", "elementwise", "--quick", "--threads", "1",
                              "--out", cls.out)
        if cls.result.returncode != 0:
            raise AssertionError(cls.result.stderr)
        with open(cls.out, encoding="utf-8") as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_json_has_the_documented_schema(self):
        self.assertEqual(set(self.doc), {"peer", "context", "results"})
        self.assertRegex(self.doc["peer"], r"^PyTorch \d")
        context = self.doc["context"]
        self.assertEqual(set(context), {"threads", "host", "date", "cpu", "quick"})
        self.assertEqual(context["threads"], 1)
        self.assertIs(context["quick"], True)
        for key in ("host", "date", "cpu"):
            self.assertIsInstance(context[key], str)
        for result in self.doc["results"]:
            self.assertEqual(set(result), {"op", "size", "seconds", "repetitions"}, result)
            self.assertGreater(result["seconds"], 0, result)
            self.assertEqual(result["repetitions"], 2, result)

    def test_every_group_asked_for_is_there(self):
        ops = {r["op"] for r in self.doc["results"]}
        # The elementwise group times the forward pass of every op of ours over n floats (sized
        # by a bare count: the activations), so a new activation without its peer call fails.
        elementwise = {op for op, size in bench_cases() if op.endswith("_forward") and size.isdigit()}
        self.assertIn("relu_forward", elementwise)
        self.assertEqual(ops, {"gemm", "conv2d_forward", "conv2d_forward_backward",
                               "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward",
                               "avg_pool2d_backward", "softmax_forward"} | elementwise)

    def test_every_result_names_one_of_our_benchmark_cases(self):
        cases = bench_cases()
        for r in self.doc["results"]:
            self.assertTrue(any((op, r["size"]) in cases for op in paired_ops(r["op"])),
                            f"{r['op']}/{r['size']}: no triptych_bench --quick row pairs with it")

    def test_out_leaves_one_complete_file_and_nothing_on_stdout(self):
        self.assertEqual(os.listdir(self.tmp.name), ["peer.json"])  # no temporary left
        self.assertEqual(self.result.stdout, "")


class Training(unittest.TestCase):
    @unittest.skipUnless(os.path.isdir(DATA), f"no Fashion-MNIST in {DATA}")
    def test_an_epoch_per_model_on_the_first_images(self):
        result = run_peer("train", "--limit", "256", "--epochs", "2", "--threads", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        results = json.loads(result.stdout)["results"]
        self.assertEqual([(r["size"], r["epoch"]) for r in results],
                         [("mlp", 1), ("mlp", 2), ("lenet", 1), ("lenet", 2)])
        cases = bench_cases()
        for r in results:
            self.assertEqual(set(r), {"op", "size", "images_per_second", "test_accuracy", "epoch"})
            self.assertEqual(r["op"], "train_epoch")
            self.assertIn(("train_step", r["size"]), cases)
            self.assertGreater(r["images_per_second"], 0)
            self.assertTrue(0 <= r["test_accuracy"] <= 1, r)


class BadInput(unittest.TestCase):
    def assert_fails_in_one_line(self, result, expected):
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(expected, lines[0])
        self.assertEqual(result.stdout, "")

    def test_an_unknown_group(self):
        self.assert_fails_in_one_line(run_peer("gemm", "matmul"), "unknown group 'matmul'")

    def test_train_without_the_data_set(self):
        with tempfile.TemporaryDirectory() as empty:
            self.assert_fails_in_one_line(run_peer("train", "--data", empty),
                                          f"no Fashion-MNIST in {empty}")

    def test_a_bad_option(self):
        self.assert_fails_in_one_line(run_peer("--threads", "0"), "--threads")
        # 10^20 aborted in C++; 100,000 ran for ever.
        self.assert_fails_in_one_line(run_peer("--threads", "100000", "gemm"),
                                      "'100000' threads is more than 4096")

    def test_damaged_data_files_are_named(self):
        # An empty gzip file was an IndexError, a file that is not gzip "pytorch_peer.py: : None",
        # a file shorter than its header says a RuntimeError.
        names = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                 "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
        damaged = {b"": "not an IDX file of unsigned bytes",
                   b"plain": "not a readable gzip file",
                   b"\x00\x00\x08\x03" + struct.pack(">III", 10, 28, 28) + bytes(5 * 784):
                   "the header says 10 x 28 x 28 values, the file holds 3920"}
        for content, why in damaged.items():
            with tempfile.TemporaryDirectory() as data:
                for name in names:
                    with gzip.open(os.path.join(data, name), "wb") as f:
                        f.write(b"\x00\x00\x08\x01" + struct.pack(">I", 1) + b"\x00")
                path = os.path.join(data, names[0])
                if content == b"plain":
                    with open(path, "wb") as f:
                        f.write(content)
                else:
                    with gzip.open(path, "wb") as f:
                        f.write(content)
                self.assert_fails_in_one_line(run_peer("train", "--data", data, "--limit", "1"),
                                              f"{path}: {why}")

    def test_an_empty_out_is_refused(self):
        # It was taken for no --out: the JSON went to stdout.
        self.assert_fails_in_one_line(run_peer("gemm", "--quick", "--out", ""),
                                      "--out '' names no file")
        result = run_peer("gemm", "--quick", "--threads", "1")  # no --out at all: stdout
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout)["results"][0]["op"], "gemm")

    def test_an_out_in_a_missing_directory(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "missing", "peer.json")
            self.assert_fails_in_one_line(run_peer("gemm", "--out", out),
                                          "its directory does not exist")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer-py", required=True)
    parser.add_argument("--bench", required=True, help="triptych_bench, whose rows are listed")
    args, rest = parser.parse_known_args()
    PEER_PY, BENCH = os.path.abspath(args.peer_py), os.path.abspath(args.bench)
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"skipped: {PYTHON} has no torch (tools/install-deps.sh --peer installs it)")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest)

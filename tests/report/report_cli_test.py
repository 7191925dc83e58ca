"""`triptych bench` and `triptych report` end to end: a --quick report has every section, real
figures and PNG charts; without a GPU every GPU column says "no GPU" and no simulator row was
timed; bad input fails in one line and leaves an existing report as it was.

    python3 report_cli_test.py --triptych build/tools/triptych --bench build/bench/triptych_bench
                               --flavor sim
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

from markdown_tables import cell, cell_where, column, tables
from snapshots import snapshot

TRIPTYCH = BENCH = FLAVOR = None  # set from the command line
SECTIONS = ["## Machine", "## GEMM throughput (GFLOP/s)", "## GEMM speedup over cpu_naive",
            "## GEMM speedup over cpu_eigen_omp", "## GPU kernels as % of gpu_vendor (cuBLAS)",
            "## cpu_eigen_omp as % of OpenBLAS", "## ReLU bandwidth (GB/s) against copy bandwidth",
            "## Memory-bound ops: GB/s", "## Memory-bound ops: % of copy bandwidth",
            "## sum: deterministic against fast",
            "## What fusion buys: dense_forward fused against unfused",
            "## Host↔device transfers", "## Charts"]
CHARTS = ["gemm_gflops.png", "gemm_speedup.png", "relu_bandwidth.png", "memory_bandwidth.png"]
# Memory-bound ops the descriptions must declare (a few by name, so that a lost description shows);
# the test takes the whole list from the run itself.
SOME_MEMORY_BOUND = ["relu_forward", "sigmoid_backward", "bias_add", "softmax_forward",
                     "softmax_cross_entropy", "sum_fast"]


def triptych(*args):
    return subprocess.run([TRIPTYCH, *args], capture_output=True, text=True, timeout=300)


class QuickReport(unittest.TestCase):
    """One `triptych report --quick` run, shared by the tests that read it."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "report")
        cls.result = triptych("report", "--quick", "--out", cls.out)
        if cls.result.returncode != 0:
            raise AssertionError(cls.result.stdout + cls.result.stderr)
        with open(os.path.join(cls.out, "report.md"), encoding="utf-8") as f:
            cls.md = f.read()
        cls.tables = tables(cls.md)
        with open(os.path.join(cls.out, "benchmarks.json"), encoding="utf-8") as f:
            cls.bench_run = json.load(f)
        cls.ops = json.loads(cls.bench_run["context"]["triptych_ops"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_row_of_the_run_is_declared_and_its_op_shown_in_the_report(self):
        names = {e["run_name"].split("/")[0] for e in self.bench_run["benchmarks"]}
        for op in names:
            self.assertIn(op, self.ops)
            # The tables that list their ops by name name every one of them.
            if self.ops[op]["table"] in ("memory", "reduction", "dense", "pool"):
                self.assertIn(op, self.md)

    def test_progress_is_shown_while_running(self):
        self.assertRegex(self.result.stdout, r"triptych: \d+ benchmarks x 3 repetitions")
        self.assertIn("gemm/cpu_eigen_omp/64x64x64/real_time_median", self.result.stdout)

    def test_report_has_every_section_and_chart(self):
        for section in SECTIONS:
            self.assertIn(section, self.md)
        for png in CHARTS:
            with open(os.path.join(self.out, png), "rb") as f:
                data = f.read()
            self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n", png)
            self.assertGreater(len(data), 10_000, png)  # axes, lines and labels, not a blank

    def test_a_sim_build_counts_every_gpu_kernel(self):
        instrumented = os.path.join(os.path.dirname(TRIPTYCH), "instrumented",
                                    os.path.basename(TRIPTYCH))
        if FLAVOR != "sim" or not os.path.exists(instrumented):
            self.assertNotIn("counted on the simulator", self.md)
            return
        ladder = self.tables["The GEMM ladder counted on the simulator (no GPU time)"]
        # The naive kernel reads a row of A and a column of B for each output: 2 floats per FMA
        # (and C once per output where beta != 0); the last version reuses them from tiles.
        self.assertAlmostEqual(float(cell(ladder, "gpu_naive@1", "global floats/FMA")), 2, delta=0.1)
        self.assertLess(float(cell(ladder, "gpu_tiled", "global floats/FMA")), 0.25)
        kernels = self.tables["Every GPU kernel counted on the simulator (no GPU time)"]
        lanes = {v: float(cell_where(kernels, "lanes/request", op="sum", **{"run as": v}))
                 for v in ("gpu_tiled@2", "gpu_tiled@3")}
        self.assertLess(lanes["gpu_tiled@2"], lanes["gpu_tiled@3"])  # the divergent tree
        self.assertIn("max_pool2d", column(kernels, "op"))

    def test_cpu_figures_are_measured_numbers(self):
        gflops = self.tables["GEMM throughput (GFLOP/s)"]
        # --quick: the CPU runs N = 64, 128, 256 (a GPU goes on to 512)
        self.assertEqual(column(gflops, "N (M=N=K)")[:3], ["64", "128", "256"])
        for variant in ("cpu_naive", "cpu_eigen_omp", "openblas"):
            for size in ("64", "128", "256"):
                self.assertGreater(float(cell(gflops, size, variant)), 0, variant)
        ratio = cell(self.tables["cpu_eigen_omp as % of OpenBLAS"], "256",
                     "cpu_eigen_omp / openblas")
        self.assertGreater(float(ratio.rstrip("%")), 0)

    def test_every_memory_bound_op_is_measured_against_the_copy_on_both_cpu_variants(self):
        percent = self.tables["Memory-bound ops: % of copy bandwidth"]
        memory_bound = [op for op, facts in self.ops.items()
                        if facts["table"] in ("memory", "reduction")]
        for op in SOME_MEMORY_BOUND:
            self.assertIn(op, memory_bound)
        self.assertEqual(list(dict.fromkeys(column(percent, "op"))), memory_bound)
        for row in percent:
            for variant in ("cpu_naive", "cpu_eigen_omp"):
                self.assertGreater(float(row[variant].rstrip("%")), 0, (row["op"], row["size"]))
        softmax_sizes = [row["size"] for row in percent if row["op"] == "softmax_forward"]
        self.assertEqual(softmax_sizes, ["16384x10 (640 KiB)", "256x1000 (1000 KiB)",
                                         "4x100000 (1.53 MiB)"])

    def test_fusion_and_sum_tables_hold_measured_numbers(self):
        fusion = self.tables["What fusion buys: dense_forward fused against unfused"]
        for variant in ("cpu_naive", "cpu_eigen_omp"):
            where = {"variant": variant, "shape": "64x784->256 relu"}
            self.assertGreater(float(cell_where(fusion, "fusion speedup", **where).rstrip("×")), 0)
            self.assertGreater(float(cell_where(fusion, "fused GFLOP/s", **where)), 0)
            self.assertEqual(cell_where(fusion, "bytes not moved", **where), "256 KiB")
        sums = self.tables["sum: deterministic against fast"]
        self.assertGreater(float(cell_where(sums, "fast GB/s", variant="cpu_eigen_omp",
                                            floats="65536 (256 KiB)")), 0)

    def test_no_row_failed_for_an_op_its_variant_lacks(self):
        # A variant that throws Unsupported gets no row, rather than a row that can only fail.
        self.assertNotIn("does not implement", self.md)

    def test_raw_results_hold_medians_of_three_repetitions(self):
        with open(os.path.join(self.out, "benchmarks.json")) as f:
            doc = json.load(f)
        medians = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"]
        self.assertTrue(medians)
        self.assertTrue(all(b["repetitions"] == 3 for b in medians))
        self.assertEqual(doc["context"]["triptych_build"], FLAVOR)

    def test_without_a_gpu_gpu_columns_say_no_gpu_and_no_simulator_row_was_timed(self):
        if FLAVOR == "cuda":
            self.skipTest("a real-GPU build has GPU columns")
        gflops = self.tables["GEMM throughput (GFLOP/s)"]
        gpu_columns = [c for c in gflops[0] if c not in
                       ("N (M=N=K)", "cpu_naive", "cpu_eigen_omp", "openblas")]
        self.assertTrue(gpu_columns)
        for name in gpu_columns:
            self.assertEqual(set(column(gflops, name)), {"no GPU"}, name)
        with open(os.path.join(self.out, "benchmarks.json")) as f:
            names = [b["name"] for b in json.load(f)["benchmarks"]]
        self.assertFalse([n for n in names if "/gpu_" in n], "simulator rows were timed")


class BenchCommand(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_bench_writes_json_that_report_reads(self):
        json_path = os.path.join(self.tmp.name, "run.json")
        result = triptych("bench", "--quick", "--filter", "gemm/openblas/64x", "--out", json_path)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(json_path) as f:
            names = [b["name"] for b in json.load(f)["benchmarks"]]
        self.assertIn("gemm/openblas/64x64x64/real_time_median", names)
        self.assertFalse([n for n in names if "cpu_naive" in n])
        out = os.path.join(self.tmp.name, "report")
        result = triptych("report", "--from", json_path, "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["report", "run.json"])

    def test_the_full_run_caps_cpu_naive_and_skips_simulator_variants(self):
        listing = subprocess.run([BENCH, "--benchmark_list_tests=true"], capture_output=True,
                                 text=True, check=True).stdout.split()
        self.assertIn("gemm/cpu_naive/512x512x512/real_time", listing)
        self.assertNotIn("gemm/cpu_naive/1024x1024x1024/real_time", listing)
        self.assertIn("gemm/openblas/2048x2048x2048/real_time", listing)
        self.assertIn("dense_forward/cpu_naive/64x784->256_relu/real_time", listing)
        self.assertNotIn("dense_forward/cpu_naive/256x1024->1024_relu/real_time", listing)
        self.assertIn("dense_forward_unfused/cpu_eigen_omp/256x1024->1024_relu/real_time", listing)
        # Every memory-bound row has a copy of its own size: 4096x1000 is 4096000 floats.
        self.assertIn("softmax_forward/cpu_eigen_omp/4096x1000/real_time", listing)
        self.assertIn("copy/host/4096000/real_time", listing)
        if FLAVOR == "sim":
            self.assertFalse([n for n in listing if "gpu_" in n])
            with_sim = subprocess.run([BENCH, "--benchmark_list_tests=true",
                                       "--include-simulator"], capture_output=True, text=True,
                                      check=True).stdout.split()
            self.assertIn("gemm/gpu_tiled_on_simulator/64x64x64/real_time", with_sim)

    def test_help(self):
        for command in ("bench", "report"):
            result = triptych(command, "--help")
            self.assertEqual(result.returncode, 0)
            self.assertIn(f"usage: triptych {command}", result.stdout)
            self.assertIn("--quick", result.stdout)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def assert_fails_in_one_line(self, result, expected):
        self.assertNotEqual(result.returncode, 0)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(expected, lines[0])

    def test_bad_json_fails_in_one_line_and_keeps_the_existing_report(self):
        good = os.path.join(self.tmp.name, "good.json")
        self.assertEqual(triptych("bench", "--quick", "--filter", "copy/host/65536",
                                  "--out", good).returncode, 0)
        out = os.path.join(self.tmp.name, "report")
        self.assertEqual(triptych("report", "--from", good, "--out", out).returncode, 0)
        before = snapshot(out)
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write('{"context": {}, "benchmarks": [')
        self.assert_fails_in_one_line(triptych("report", "--from", bad, "--out", out),
                                      "not valid JSON")
        self.assertEqual(snapshot(out), before)
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["bad.json", "good.json", "report"])

    def test_missing_json(self):
        self.assert_fails_in_one_line(
            triptych("report", "--from", os.path.join(self.tmp.name, "none.json")),
            "none.json: no such file")

    def test_a_filter_matching_nothing(self):
        self.assert_fails_in_one_line(triptych("bench", "--filter", "no_such_op"),
                                      "matches no benchmark")

    def test_a_peer_file_that_is_not_the_peers_json(self):
        # Refused before any benchmark runs: the filter, which matches nothing, is never listed.
        bad = os.path.join(self.tmp.name, "peer.json")
        with open(bad, "w") as f:
            f.write("{}")
        out = os.path.join(self.tmp.name, "report")
        self.assert_fails_in_one_line(
            triptych("report", "--peer", bad, "--filter", "no_such_op", "--out", out),
            "is not the JSON of bench/pytorch_peer.py")
        self.assertFalse(os.path.exists(out))
        self.assert_fails_in_one_line(triptych("report", "--from", self.tmp.name),
                                      "not a regular file")

    def test_a_filter_that_is_not_a_regular_expression(self):
        for command in ("bench", "report"):
            self.assert_fails_in_one_line(triptych(command, "--filter", "gemm/(cpu"),
                                          "is not a regular expression")

    def test_out_that_is_not_a_report_directory(self):
        with open(os.path.join(self.tmp.name, "notes.txt"), "w") as f:
            f.write("keep me")
        self.assert_fails_in_one_line(triptych("report", "--quick", "--out", self.tmp.name),
                                      "not a triptych report directory")
        self.assertEqual(snapshot(self.tmp.name), {"notes.txt": b"keep me"})

    def test_run_options_with_from(self):
        self.assert_fails_in_one_line(triptych("report", "--from", "x.json", "--quick"),
                                      "cannot be combined with --from")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--triptych", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--flavor", required=True, choices=["cuda", "sim", "off"])
    args, rest = parser.parse_known_args()
    TRIPTYCH, BENCH, FLAVOR = args.triptych, args.bench, args.flavor
    unittest.main(argv=[sys.argv[0]] + rest)

#!/usr/bin/env python3
"""tools/lesson_tables.py on a lesson folder of its own: a table is written from a recorded run,
is checked against it, and a planted change (one digit of the table) fails the check; a counted
table is recorded from `triptych profile` (here a stand-in script), and a recount that no longer
gives the recorded counts fails the check too; so is a removed-barrier table, from `triptych check`.

    lesson_tables_test.py --tool tools/lesson_tables.py
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOL = None  # set from the command line

README = """# Lesson 99

Some prose.

<!-- generated table: gemm_ladder, source ladder.json -->
stale text
<!-- end of generated table -->

More prose.
"""


def median(run_name, gflops, n):
    seconds = 2 * n**3 / (gflops * 1e9)
    return {"name": run_name + "_median", "run_name": run_name, "run_type": "aggregate",
            "aggregate_name": "median", "repetitions": 3, "real_time": seconds * 1e6,
            "cpu_time": seconds * 1e6, "time_unit": "us", "flops": gflops * 1e9}


def gpu_run():
    versions = {"gemm": {"gpu_naive": [[1, "uncoalesced", False], [2, "coalesced", True]],
                         "gpu_tiled": [[3, "shared_tiles", True]],
                         "gpu_vendor": [[1, "cublas", True]]}}
    rows = [median(f"gemm/{v}/1024x1024x1024/real_time", g, 1024)
            for v, g in (("gpu_naive@1", 100), ("gpu_naive", 400), ("gpu_tiled", 8000),
                         ("gpu_vendor", 20000))]
    rows.append(median("relu_forward/gpu_tiled/65536/real_time", 1, 1))  # not kept
    context = {"date": "2026-12-01T12:00:00+00:00", "host_name": "gpuhost", "num_cpus": 16,
               "triptych_build": "cuda", "triptych_build_type": "Release",
               "triptych_variants": "gpu_naive=gpu,gpu_tiled=gpu,gpu_vendor=gpu",
               "triptych_gpu": "NVIDIA H200", "triptych_versions": json.dumps(versions),
               "triptych_ops": json.dumps({
                   "gemm": {"counter": "flops", "work": "2·M·N·K", "table": "gemm"},
                   "relu_forward": {"counter": "bytes", "work": "8n", "table": "memory"}})}
    return {"context": context, "benchmarks": rows}


class LessonFolder(unittest.TestCase):
    """A lessons folder of its own under a temporary directory: one lesson, `folder`, whose README
    is `readme_text`; tool() runs lesson_tables.py on it, text() reads the README back."""
    folder = None
    readme_text = None

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.lessons = os.path.join(self.dir, "lessons")
        os.makedirs(os.path.join(self.lessons, self.folder))
        self.readme = os.path.join(self.lessons, self.folder, "README.md")
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(self.readme_text)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def tool(self, *args, env=None):
        return subprocess.run([sys.executable, TOOL, "--lessons", self.lessons, *args],
                              capture_output=True, text=True, env=env)

    def text(self):
        with open(self.readme, encoding="utf-8") as f:
            return f.read()


class LessonTables(LessonFolder):
    folder, readme_text = "99_test", README

    def setUp(self):
        super().setUp()
        self.run_json = os.path.join(self.dir, "run.json")
        with open(self.run_json, "w", encoding="utf-8") as f:
            json.dump(gpu_run(), f)

    def test_a_table_without_a_recorded_run_says_so_and_stale_text_fails_the_check(self):
        self.assertEqual(self.tool("--check").returncode, 1)
        self.assertEqual(self.tool("--from", os.devnull).returncode, 1)  # not JSON: refused
        text = self.text().replace("stale text\n", "")
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text)
        self.assertEqual(self.tool("--check").returncode, 1)

    def test_a_recorded_run_becomes_the_table_and_a_planted_digit_fails_the_check(self):
        result = self.tool("--from", self.run_json)
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.text()
        self.assertIn("Measured on: NVIDIA H200, host gpuhost, 2026-12-01", text)
        self.assertIn("| 3 | gpu_tiled@3 | shared_tiles | 8000 (40%, 20.0×) |", text)
        self.assertTrue(text.startswith("# Lesson 99\n\nSome prose."))
        self.assertTrue(text.endswith("<!-- end of generated table -->\n\nMore prose.\n"))
        with open(os.path.join(self.lessons, "99_test", "ladder.json"), encoding="utf-8") as f:
            kept = json.load(f)
        self.assertEqual(len(kept["benchmarks"]), 4)  # only the gemm rows
        self.assertEqual(self.tool("--check").returncode, 0)

        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text.replace("8000 (40%", "8001 (40%"))
        result = self.tool("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("out of date", result.stderr)

    def test_a_run_whose_figures_cannot_be_a_table_leaves_the_source_as_it_was(self):
        # The source used to be written first: a run with a median of 0 s replaced a good
        # recorded source, then failed on the division.
        self.assertEqual(self.tool("--from", self.run_json).returncode, 0)
        source = os.path.join(self.lessons, "99_test", "ladder.json")
        with open(source, encoding="utf-8") as f:
            good = f.read()
        table = self.text()
        bad = gpu_run()
        for row in bad["benchmarks"]:
            row["real_time"] = 0.0
            row.pop("flops")
        with open(self.run_json, "w", encoding="utf-8") as f:
            json.dump(bad, f)
        result = self.tool("--from", self.run_json)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        with open(source, encoding="utf-8") as f:
            self.assertEqual(f.read(), good)
        self.assertEqual(self.text(), table)
        self.assertEqual([n for n in os.listdir(os.path.dirname(source)) if ".tmp" in n], [])

    def test_a_broken_end_marker_is_refused_not_written_over(self):
        # A misspelt end marker made --write run the block on to the next table's end, deleting
        # the prose between them.
        text = self.text().replace("<!-- end of generated table -->",
                                   "<!-- end of generated tabel -->")
        text += "\nProse that must stay.\n\n" + "\n".join(README.splitlines()[4:7]) + "\n"
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text)
        for mode in ("--check", "--write"):
            result = self.tool(mode)
            self.assertEqual(result.returncode, 1)
            self.assertIn("README.md:5: the generated table has no end marker", result.stderr)
            self.assertEqual(self.text(), text)

    def test_a_readme_that_is_not_utf8_is_named_in_one_line(self):
        # It was reported as "a recorded figure cannot be made into its table", naming no file.
        with open(self.readme, "ab") as f:
            f.write(b"caf\xe9\n")
        for mode in ("--check", "--write"):
            result = self.tool(mode)
            self.assertEqual(result.returncode, 1)
            self.assertIn("README.md: cannot be read as UTF-8 text", result.stderr)
            self.assertNotIn("Traceback", result.stderr)

    def test_a_lessons_folder_that_is_not_there_fails(self):
        result = subprocess.run([sys.executable, TOOL, "--check", "--lessons",
                                 os.path.join(self.dir, "absent")], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("absent: no such folder of lessons", result.stderr)

    def test_a_run_without_a_gpu_leaves_the_ladder_as_it_was(self):
        run = gpu_run()
        run["context"] = {k: v for k, v in run["context"].items() if not k.startswith("gpu")}
        run["context"]["triptych_variants"] = "cpu_naive=cpu,cpu_eigen_omp=cpu"
        run["context"]["triptych_gpu"] = "no GPU (CPU-only build)"
        with open(self.run_json, "w", encoding="utf-8") as f:
            json.dump(run, f)
        result = self.tool("--from", self.run_json)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ran on no GPU; kept as it was", result.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.lessons, "99_test", "ladder.json")))


BENCH_README = """# Lesson 97

<!-- generated table: bench, source bench.json -->
<!-- end of generated table -->
"""

BENCH_ROWS = ["copy/host/65536", "relu_forward/cpu_naive/65536"]


def cpu_run(rows, cpu=None, round_trip=None):
    """A triptych_bench run on a CPU: the median of each of `rows` (name, microseconds, GB/s);
    with `cpu`, the CPU triptych_bench names in its context (triptych_cpu), with `round_trip` the
    cache line's round trip it measured (triptych_cpu_round_trip)."""
    benchmarks = [{"name": f"{name}/real_time_median", "run_name": f"{name}/real_time",
                   "run_type": "aggregate", "aggregate_name": "median", "repetitions": 9,
                   "real_time": us, "cpu_time": us, "time_unit": "us", "bytes": gbs * 1e9}
                  for name, us, gbs in rows]
    context = {"date": "2026-12-02T16:00:00+00:00", "host_name": "cpuhost", "num_cpus": 2,
               "mhz_per_cpu": 2800, "load_avg": [0.25, 0.5, 0.5], "triptych_build": "sim",
               "triptych_build_type": "Release", "triptych_omp_threads": "2",
               "triptych_variants": "cpu_naive=cpu",
               "triptych_ops": json.dumps({
                   "copy": {"counter": "bytes", "work": "8n", "table": "memory"},
                   "relu_forward": {"counter": "bytes", "work": "8n", "table": "memory"}})}
    if cpu:
        context["triptych_cpu"] = cpu
    if round_trip:
        context["triptych_cpu_round_trip"] = round_trip
    return {"context": context, "benchmarks": benchmarks}


class BenchTables(LessonFolder):
    folder, readme_text = "97_bench", BENCH_README

    def setUp(self):
        super().setUp()
        self.source = os.path.join(self.lessons, "97_bench", "bench.json")
        with open(self.source, "w", encoding="utf-8") as f:
            json.dump({"command": "build/bench/triptych_bench --benchmark_filter=65536",
                       "rows": BENCH_ROWS}, f)

    def record(self, rows, cpu=None, round_trip=None):
        path = os.path.join(self.dir, "run.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cpu_run(rows, cpu, round_trip), f)
        return self.tool("--from", path)

    def test_a_recorded_run_gives_each_row_its_median_under_the_machine_and_command(self):
        self.assertEqual(self.tool("--check").returncode, 1)  # no table yet: out of date
        result = self.record([("copy/host/65536", 40.0, 13.1), ("relu_forward/cpu_naive/65536",
                                                                  500.0, 1.05), ("other/x/1", 1, 1)])
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.text()
        self.assertIn("Measured on: host cpuhost, 2 CPUs × 2800 MHz, 2026-12-02T16:00:00+00:00", text)
        self.assertIn("load average 0.25 when the run started; the median of 9 repetitions", text)
        self.assertIn("    build/bench/triptych_bench --benchmark_filter=65536\n", text)
        self.assertIn("| `copy/host/65536` | 0.04 ms | 13.1 GB/s |", text)
        self.assertIn("| `relu_forward/cpu_naive/65536` | 0.5 ms | 1.05 GB/s |", text)
        with open(self.source, encoding="utf-8") as f:
            self.assertEqual(len(json.load(f)["benchmarks"]), 2)  # only the table's rows
        self.assertEqual(self.tool("--check").returncode, 0)
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text.replace("13.1 GB/s", "13.2 GB/s"))
        self.assertEqual(self.tool("--check").returncode, 1)

    def test_a_run_that_names_its_cpu_and_round_trip_names_them_in_the_measured_on_line(self):
        result = self.record([("copy/host/65536", 40.0, 13.1),
                              ("relu_forward/cpu_naive/65536", 500.0, 1.05)],
                             cpu="AMD EPYC (family 25, model 17), code compiled for AVX2",
                             round_trip="310 ns between CPU 0 and CPU 1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("Measured on: host cpuhost, AMD EPYC (family 25, model 17), code compiled "
                      "for AVX2, 2 CPUs × 2800 MHz, 2026-12-02T16:00:00+00:00", self.text())
        self.assertIn("load average 0.25, 310 ns between CPU 0 and CPU 1 for a cache line's "
                      "round trip when the run started;", self.text())

    def test_a_run_that_lacks_a_row_leaves_the_table_as_it_was_and_says_so(self):
        result = self.record([("copy/host/65536", 40.0, 13.1)])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("kept as it was", result.stdout)
        self.assertIn("lacks its row relu_forward/cpu_naive/65536", result.stdout)
        result = self.record([("other/x/1", 1, 1)])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("lacks 2 of its 2 rows", result.stdout)
        self.assertIn("No run has been recorded for this table yet", self.text())

    def test_context_fields_of_the_wrong_kind_are_refused_before_anything_is_written(self):
        # They were written into the README as they stood: "x CPUs × 2800 MHz".
        rows = [("copy/host/65536", 40.0, 13.1), ("relu_forward/cpu_naive/65536", 500.0, 1.05)]
        readme = self.text()
        with open(self.source, encoding="utf-8") as f:
            source = f.read()
        for field, value, kind in (("num_cpus", "x", "a whole number"),
                                   ("triptych_omp_threads", 2, "a string")):
            run = cpu_run(rows)
            run["context"][field] = value
            path = os.path.join(self.dir, "run.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(run, f)
            result = self.tool("--from", path)
            self.assertEqual(result.returncode, 1, result.stdout)
            self.assertEqual(result.stderr, f"lesson_tables.py: {path}: the context's {field} is "
                                            f"{json.dumps(value)}, not {kind}\n")
            self.assertEqual(self.text(), readme)
            with open(self.source, encoding="utf-8") as f:
                self.assertEqual(f.read(), source)
        # A recorded source edited by hand is refused too.
        self.assertEqual(self.record(rows).returncode, 0)
        readme = self.text()
        with open(self.source, encoding="utf-8") as f:
            recorded = json.load(f)
        recorded["context"]["num_cpus"] = "x"
        with open(self.source, "w", encoding="utf-8") as f:
            json.dump(recorded, f)
        for mode in ("--write", "--check"):
            result = self.tool(mode)
            self.assertEqual(result.returncode, 1, result.stdout)
            self.assertEqual(result.stderr, f"lesson_tables.py: {self.source}: the context's "
                                            "num_cpus is \"x\", not a whole number\n")
            self.assertEqual(self.text(), readme)

    def test_a_table_of_one_build_takes_only_that_builds_runs(self):
        with open(self.source, "w", encoding="utf-8") as f:
            json.dump({"command": "build-noblas/bench/triptych_bench", "rows": BENCH_ROWS,
                       "build": {"triptych_eigen_blas": "off"}}, f)
        rows = [("copy/host/65536", 40.0, 13.1), ("relu_forward/cpu_naive/65536", 500.0, 1.05)]
        run = cpu_run(rows)
        run["context"]["triptych_eigen_blas"] = "on"
        path = os.path.join(self.dir, "run.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(run, f)
        result = self.tool("--from", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("kept as it was, it records a build with triptych_eigen_blas off (the run's: "
                      "on)", result.stdout)
        self.assertIn("No run has been recorded for this table yet", self.text())
        run["context"]["triptych_eigen_blas"] = "off"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(run, f)
        result = self.tool("--from", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("build sim (Release, triptych_eigen_blas off)", self.text())
        with open(self.source, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["build"], {"triptych_eigen_blas": "off"})  # kept
        self.assertEqual(self.tool("--check").returncode, 0)


POOL_README = """# Lesson 96

<!-- generated table: pool, source pool.json -->
<!-- end of generated table -->
"""


def pool_run(ops, cpu=None):
    """A CPU run of max_pool2d_forward on LeNet's shape (0.1 ms) and of copy/host; `cpu` as
    cpu_run's."""
    benchmarks = [{"name": f"{name}/real_time_median", "run_name": f"{name}/real_time",
                   "run_type": "aggregate", "aggregate_name": "median", "repetitions": 5,
                   "real_time": 100.0, "cpu_time": 100.0, "time_unit": "us", "bytes": 1e9}
                  for name in ops]
    context = {"date": "2026-12-02T16:00:00+00:00", "host_name": "cpuhost", "num_cpus": 2,
               "mhz_per_cpu": 2800, "load_avg": [0.25], "triptych_build": "sim",
               "triptych_build_type": "Release", "triptych_omp_threads": "2",
               "triptych_variants": "cpu_eigen_omp=cpu",
               "triptych_ops": json.dumps({
                   "max_pool2d_forward": {"counter": "bytes", "work": "4n", "table": "pool"},
                   "copy": {"counter": "bytes", "work": "8n", "table": "memory"}})}
    if cpu:
        context["triptych_cpu"] = cpu
    return {"context": context, "benchmarks": benchmarks}


PEER = {"peer": "PyTorch 1.13", "context": {"threads": 2, "date": "2026-12-02T16:05:00"},
        "results": [{"op": "max_pool2d_forward", "size": "64x6x28x28_w2s2", "seconds": 4e-4},
                    {"op": "conv2d_forward", "size": "lenet_conv1", "seconds": 1e-3}]}


class PoolTable(LessonFolder):
    folder, readme_text = "96_pool", POOL_README

    def setUp(self):
        super().setUp()
        self.peer = os.path.join(self.dir, "peer.json")
        with open(self.peer, "w", encoding="utf-8") as f:
            json.dump(PEER, f)

    def record(self, ops, *more, cpu=None):
        path = os.path.join(self.dir, "run.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(pool_run(ops, cpu), f)
        return self.tool("--from", path, *more)

    def test_a_run_and_the_peer_become_the_pooling_table(self):
        result = self.record(["max_pool2d_forward/cpu_eigen_omp/64x6x28x28_w2s2",
                              "copy/host/16777216"], "--peer", self.peer)
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.text()
        self.assertIn("| cpu_eigen_omp | 64x6x28x28_w2s2 | 0.1 |", text)
        self.assertIn("| PyTorch (CPU) | 64x6x28x28_w2s2 | 0.4 |", text)
        self.assertIn("| 64x6x28x28_w2s2 | max_pool2d_forward | 0.1 | 0.4 | 4.00× |", text)
        self.assertIn("PyTorch: PyTorch 1.13, 2 threads, 2026-12-02T16:05:00.", text)
        self.assertIn("Measured on: the CPU (2 × 2800 MHz, OpenMP threads 2", text)  # no CPU named
        with open(os.path.join(self.lessons, "96_pool", "pool.json"), encoding="utf-8") as f:
            kept = json.load(f)
        self.assertEqual([r["op"] for r in kept["peer"]["results"]], ["max_pool2d_forward"])

    def test_the_pooling_table_names_the_cpu_the_run_recorded(self):
        result = self.record(["max_pool2d_forward/cpu_eigen_omp/64x6x28x28_w2s2",
                              "copy/host/16777216"],
                             cpu="AMD EPYC (family 26, model 2), code compiled for AVX-512")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("Measured on: AMD EPYC (family 26, model 2), code compiled for AVX-512 "
                      "(2 × 2800 MHz, OpenMP threads 2", self.text())

    def test_a_run_that_lacks_a_recorded_row_leaves_the_table(self):
        both = ["max_pool2d_forward/cpu_eigen_omp/64x6x28x28_w2s2",
                "max_pool2d_forward/cpu_eigen_omp/16x64x112x112_w3s2"]
        self.assertEqual(self.record(both).returncode, 0)
        before = self.text()
        result = self.record(both[:1])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("lacks 1 of the 2 rows it records", result.stdout)
        self.assertEqual(self.text(), before)

    def test_a_run_of_copies_alone_leaves_the_table_and_a_bad_peer_is_refused(self):
        result = self.record(["copy/host/16777216"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("has no rows of max_pool2d_forward", result.stdout)
        self.assertIn("No run has been recorded for this table yet", self.text())
        with open(self.peer, "w", encoding="utf-8") as f:
            json.dump({"not": "a peer"}, f)
        result = self.record(["max_pool2d_forward/cpu_eigen_omp/64x6x28x28_w2s2"], "--peer",
                             self.peer)
        self.assertEqual(result.returncode, 1)
        self.assertIn("is not the JSON of bench/pytorch_peer.py", result.stderr)


COUNTED_README = """# Lesson 98

<!-- generated table: counted, source counts.json -->
<!-- end of generated table -->
"""

# A stand-in for `triptych profile ... --json FILE`: one kernel whose global loads take
# $FAKE_SECTORS sectors over 2 requests (ideal 8).
FAKE_TRIPTYCH = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
assert args[0] == "profile", args
site = {"line": "gpu/naive/x.cu:1", "space": "global", "access": "load", "requests": 2,
        "units": int(os.environ.get("FAKE_SECTORS", "64")), "ideal_units": 8, "lanes": 64,
        "bytes": 256}
kernel = {"kernel": "void triptych::gpu_naive::(anonymous namespace)::scale_kernel<4>(long)",
          "launch_site": "gpu/naive/x.cu:9", "launches": 1, "warps": 2, "barriers": 0,
          "warp_operations": 0, "block": [64, 1, 1], "sites": [site],
          "occupancy": {"gpu": "H200 (sm_90)", "blocks": 32, "warps": 64, "fraction": 1.0,
                        "limit": "blocks", "registers": int(os.environ.get("FAKE_REGISTERS", "18"))}}
kernels = [kernel]
if os.environ.get("FAKE_TWINS"):  # a second instance of the same template
    kernels.append(dict(kernel, kernel="void triptych::gpu_naive::(anonymous namespace)::"
                        "scale_kernel<8, triptych::gpu_naive::(anonymous namespace)::Rows>(long)"))
counts = {"cases": 1, "nvcc": os.environ.get("FAKE_NVCC", "13.0.88") or None, "kernels": kernels}
broken = os.environ.get("FAKE_BROKEN", "")  # "json": cut short; a key: the counts without it
with open(args[args.index("--json") + 1], "w") as f:
    if broken == "json":
        f.write('{"cases": 1, "kernels": [')
    else:
        json.dump({k: v for k, v in counts.items() if k != broken}, f)
"""


class CountedTables(LessonFolder):
    folder, readme_text = "98_test", COUNTED_README

    def setUp(self):
        super().setUp()
        with open(os.path.join(self.lessons, "98_test", "counts.json"), "w",
                  encoding="utf-8") as f:
            json.dump({"runs": [{"args": ["--op", "scale", "--backend", "gpu_naive",
                                          "--shape", "64"]}]}, f)
        self.triptych = os.path.join(self.dir, "triptych")
        with open(self.triptych, "w", encoding="utf-8") as f:
            f.write(FAKE_TRIPTYCH)
        os.chmod(self.triptych, 0o755)

    def tool(self, *args, sectors="64", twins="", nvcc="13.0.88", registers="18", broken=""):
        return super().tool(*args, env=dict(os.environ, FAKE_SECTORS=sectors, FAKE_TWINS=twins,
                                            FAKE_NVCC=nvcc, FAKE_REGISTERS=registers,
                                            FAKE_BROKEN=broken))

    def test_counts_that_are_not_json_or_lack_a_key_are_named_with_the_command(self):
        # They were "a recorded figure cannot be made into its table", naming neither.
        source = os.path.join(self.lessons, "98_test", "counts.json")
        with open(source, encoding="utf-8") as f:
            recorded = f.read()
        command = (f"{self.triptych} profile --op scale --backend gpu_naive --shape 64 --seed 1 "
                   "--json FILE wrote counts")
        for broken, why in (("json", "that are not valid JSON (Expecting value: line 1"),
                            ("cases", 'without "cases"'), ("kernels", 'without "kernels"')):
            for check in (("--count", self.triptych), ("--check", "--triptych", self.triptych)):
                result = self.tool(*check, broken=broken)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
                self.assertIn(f"lesson_tables.py: {command} {why}", result.stderr)
                with open(source, encoding="utf-8") as f:
                    self.assertEqual(f.read(), recorded)  # nothing recorded

    def test_counts_become_the_table_and_a_recount_that_differs_fails_the_check(self):
        # Nothing recorded yet: the table cannot be written.
        self.assertEqual(self.tool("--check").returncode, 1)
        result = self.tool("--count", self.triptych)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.readme, encoding="utf-8") as f:
            text = f.read()
        # 64 sectors over 2 requests, 8 ideal: 32 per request against 4.
        self.assertIn("| scale | 64 | gpu_naive | `scale_kernel` | 2 | 32.0 | 4.00 |", text)
        self.assertEqual(self.tool("--check", "--triptych", self.triptych).returncode, 0)
        # The simulator now counts 16 sectors: the recorded table is stale.
        result = self.tool("--check", "--triptych", self.triptych, sectors="16")
        self.assertEqual(result.returncode, 1)
        self.assertIn("no longer counts what", result.stderr)
        # A planted digit in the table fails without a recount.
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text.replace("| 2 | 32.0 | 4.00 |", "| 2 | 33.0 | 4.00 |"))
        self.assertEqual(self.tool("--check").returncode, 1)

    def test_a_source_may_choose_the_columns_occupancy_among_them(self):
        source = os.path.join(self.lessons, "98_test", "counts.json")
        self.assertEqual(self.tool("--count", self.triptych).returncode, 0)
        with open(source, encoding="utf-8") as f:
            recorded = json.load(f)
        with open(source, "w", encoding="utf-8") as f:
            json.dump(dict(recorded, columns=["occupancy", "lanes/request"]), f)
        result = self.tool("--write")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.readme, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("| op | shape | run as | kernel | occupancy | lanes/request |", text)
        self.assertIn("| scale | 64 | gpu_naive | `scale_kernel` | 100% (blocks, 18 registers) "
                      "| 32.0 |", text)
        # A recount keeps them.
        self.assertEqual(self.tool("--count", self.triptych).returncode, 0)
        with open(source, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["columns"], ["occupancy", "lanes/request"])
        with open(source, "w", encoding="utf-8") as f:
            json.dump(dict(recorded, columns=["speed"]), f)
        result = self.tool("--write")
        self.assertEqual(result.returncode, 1)
        self.assertIn("no counted column speed", result.stderr)

    def test_the_occupancy_is_compared_only_where_the_recorded_nvcc_reports_the_registers(self):
        source = os.path.join(self.lessons, "98_test", "counts.json")
        self.assertEqual(self.tool("--count", self.triptych).returncode, 0)
        with open(source, encoding="utf-8") as f:
            recorded = json.load(f)
        self.assertEqual(recorded["runs"][0]["nvcc"], "13.0.88")
        with open(source, "w", encoding="utf-8") as f:
            json.dump(dict(recorded, columns=["occupancy", "global load sectors/request"]), f)
        self.assertEqual(self.tool("--write").returncode, 0)
        check = ("--check", "--triptych", self.triptych)
        # The same nvcc, other registers: the occupancy differs, and the check says so.
        result = self.tool(*check, registers="200")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("no longer counts what", result.stderr)
        # Another nvcc, or none: the occupancy is left out, the rest still compared.
        for nvcc in ("12.4.131", ""):
            result = self.tool(*check, registers="200", nvcc=nvcc)
            self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
            self.assertIn("the occupancy is not compared: its registers were reported by nvcc "
                          f"13.0.88, and this build's by {nvcc or 'no nvcc'}", result.stdout)
            result = self.tool(*check, registers="200", nvcc=nvcc, sectors="16")
            self.assertEqual(result.returncode, 1)
            self.assertIn("no longer counts what", result.stderr)
        # The memory counts alone (no occupancy column): no word about nvcc.
        with open(source, "w", encoding="utf-8") as f:
            json.dump(recorded, f)
        self.assertEqual(self.tool("--write").returncode, 0)
        result = self.tool(*check, nvcc="")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("occupancy", result.stdout)

    def test_instances_of_one_template_are_told_apart_by_their_arguments(self):
        source = os.path.join(self.lessons, "98_test", "counts.json")
        with open(source, "w", encoding="utf-8") as f:
            json.dump({"runs": [{"args": ["--op", "scale", "--backend", "gpu_naive", "--shape",
                                          "64"], "by_kernel": True}]}, f)
        result = self.tool("--count", self.triptych, twins="1")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.readme, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("| scale | 64 | gpu_naive | `scale_kernel<4>` | 2 |", text)
        self.assertIn("| scale | 64 | gpu_naive | `scale_kernel<8, Rows>` | 2 |", text)
        # One instance alone keeps its short name.
        self.assertEqual(self.tool("--count", self.triptych).returncode, 0)
        with open(self.readme, encoding="utf-8") as f:
            self.assertIn("| `scale_kernel` |", f.read())


NOTED_README = """# Lesson 95

<!-- generated table: noted, source gpu.json, rows ^relu_forward/, by variant, ratio gpu_tiled/gpu_naive -->
<!-- end of generated table -->

<!-- generated table: noted, source gpu.json, rows ^sum_ -->
<!-- end of generated table -->
"""


def noted_figures():
    return {"machine": "NVIDIA Test GPU", "kept": "Written down by hand.",
            "runs": {"r1": {"date": "2026-11-30", "code": "abc1234", "build": "cuda build",
                            "command": "triptych_bench", "written_down": "a note"}},
            "figures": [
                {"row": "relu_forward/gpu_naive/65536", "run": "r1", "time_us": 12.0,
                 "rate": 44.0, "unit": "GB/s"},
                {"row": "relu_forward/gpu_tiled/65536", "run": "r1", "time_us": 10.0,
                 "rate": 52.0, "unit": "GB/s"},
                {"row": "relu_forward/gpu_tiled/1048576", "run": "r1", "time_us": 11.5},
                {"row": "sum_fast/gpu_naive/1000", "run": "r1", "of_copy": 0.45,
                 "note": "one atomic per element"}]}


class NotedTables(LessonFolder):
    """Figures written down from a run whose JSON was not kept: one file, tables by regex."""
    folder, readme_text = "95_noted", NOTED_README

    def setUp(self):
        super().setUp()
        self.source = os.path.join(self.lessons, "95_noted", "gpu.json")
        self.write(NOTED_README, noted_figures())

    def write(self, readme, figures):
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(readme)
        with open(self.source, "w", encoding="utf-8") as f:
            json.dump(figures, f)

    def test_the_figures_become_tables_by_variant_and_by_row_and_a_planted_digit_fails(self):
        self.assertEqual(self.tool("--check").returncode, 1)  # the tables are not written yet
        result = self.tool("--write")
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.text()
        self.assertIn("Measured on: NVIDIA Test GPU. Written down by hand.", text)
        self.assertIn("- run `r1`, 2026-11-30, code of abc1234: cuda build; triptych_bench; "
                      "written down in a note.", text)
        self.assertIn("| relu_forward size | gpu_naive | gpu_tiled | gpu_tiled over gpu_naive |",
                      text)
        # The ratio comes from the times where both have one: 12 / 10.
        self.assertIn("| 65536 | 12.0 µs (44.0 GB/s) | 10.0 µs (52.0 GB/s) | 1.20× |", text)
        self.assertIn("| 1048576 | — | 11.5 µs | — |", text)
        self.assertIn("| `sum_fast/gpu_naive/1000` | — | 45.0% of the device copy | r1 | abc1234 | "
                      "one atomic per element |", text)
        self.assertNotIn("sum_fast", text.split("rows ^sum_")[0])  # each table its own rows
        self.assertEqual(self.tool("--check").returncode, 0)
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text.replace("11.5 µs", "11.6 µs"))
        self.assertEqual(self.tool("--check").returncode, 1)
        # ...and so does a changed figure in the source, against the written table.
        self.write(text, dict(noted_figures(), figures=[
            dict(f, time_us=11.6) if f["row"].endswith("1048576") else f
            for f in noted_figures()["figures"]]))
        self.assertEqual(self.tool("--check").returncode, 1)

    def test_training_runs_show_their_rates_ranges_losses_and_accuracies(self):
        figures = dict(noted_figures(), figures=[
            {"row": "train/gpu_tiled/mlp, epoch 1 of 2", "run": "r1", "time_us": 200000,
             "rate": 297954, "unit": "images/s", "train_loss": 0.482, "test_accuracy": 85.64},
            {"row": "train/gpu_naive/mlp, epoch 1 of 1", "run": "r1", "train_loss": 0.4832,
             "test_accuracy": 85.5, "note": "no time written down"},
            {"row": "train_step/gpu_tiled/mlp", "run": "r1", "time_us": [196, 235],
             "note": "three runs"},
            {"row": "train_step/gpu_naive/mlp", "run": "r1", "time_us": [287, 1500]},
            {"row": "profile_epoch/gpu_naive/lenet", "run": "r1", "rate": 12115,
             "unit": "images/s"},
            {"row": "profile_epoch/gpu_tiled/lenet", "run": "r1", "rate": [70000, 70700],
             "unit": "images/s"},
            {"row": "profile_phase/gpu_naive/lenet total", "run": "r1", "time_us": 5251},
            {"row": "profile_phase/gpu_tiled/lenet total", "run": "r1", "time_us": 871}])
        self.write("<!-- generated table: noted, source gpu.json, rows ^train -->\n"
                   "<!-- end of generated table -->\n\n"
                   "<!-- generated table: noted, source gpu.json, rows ^profile_, by variant, "
                   "ratio gpu_tiled/gpu_naive -->\n<!-- end of generated table -->\n", figures)
        result = self.tool("--write")
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.text()
        # The loss and the accuracy get columns where a figure of the table has them...
        self.assertIn("| row | time | rate | train loss | test accuracy | run | code of | note |",
                      text)
        self.assertIn("| `train/gpu_tiled/mlp, epoch 1 of 2` | 200 ms | 297954 images/s | 0.482 | "
                      "85.64% | r1 | abc1234 |  |", text)
        self.assertIn("| `train/gpu_naive/mlp, epoch 1 of 1` | — | — | 0.4832 | 85.5% | r1 | "
                      "abc1234 | no time written down |", text)
        # ...a range shows its unit once, or twice where the ends have their own...
        self.assertIn("| `train_step/gpu_tiled/mlp` | 196–235 µs | — | — | — | r1 |", text)
        self.assertIn("| `train_step/gpu_naive/mlp` | 287 µs–1.50 ms | — | — | — | r1 |", text)
        # ...and gives no ratio, while a time or a rate alone does.
        self.assertIn("| profile_epoch lenet | 12115 images/s | 70000–70700 images/s | — |", text)
        self.assertIn("| profile_phase lenet total | 5.25 ms | 871 µs | 6.03× |", text)
        # Tables without a loss or an accuracy keep their columns.
        self.write(NOTED_README, noted_figures())
        self.assertEqual(self.tool("--write").returncode, 0)
        self.assertNotIn("train loss", self.text())

    def test_bad_options_and_bad_figures_are_refused_by_name(self):
        cases = [
            ("rows ^gemm/", noted_figures(), "no figure's row matches '^gemm/'"),
            ("rows ^relu, sorted", noted_figures(), "not 'sorted'"),
            ("by variant", noted_figures(), "needs 'rows REGEX'"),
            ("rows ^relu, ratio gpu_tiled/gpu_naive", noted_figures(), "goes with 'by variant'"),
            ("rows ^relu, by variant, ratio gpu_tiled/gpu_vendor", noted_figures(),
             "ratio gpu_tiled/gpu_vendor: the table's variants are gpu_naive, gpu_tiled"),
            ("rows ^relu, run r2", noted_figures(), "has no run 'r2' (it has r1)"),
            ("rows ^relu", dict(noted_figures(), figures=[{"row": "relu_forward/x/1", "run": "r1"}]),
             "a figure needs a row, a run"),
            ("rows ^relu", dict(noted_figures(), figures=[
                {"row": "relu_forward/x/1", "run": "r1", "rate": 3.0}]), "needs its unit"),
            ("rows ^relu", dict(noted_figures(), figures=[
                {"row": "relu_forward/x/1", "run": "r1", "rate": 3.0, "unit": "images/min"}]),
             "needs its unit, GB/s, GFLOP/s or images/s"),
            ("rows ^relu", dict(noted_figures(), figures=[
                {"row": "relu_forward/x/1", "run": "r1", "time_us": [3, 2]}]),
             "its time_us is a number or a range [low, high]"),
            ("rows ^relu", dict(noted_figures(), figures=[
                {"row": "relu_forward/x/1", "run": "r1", "time_us": "3 us"}]),
             "its time_us is a number or a range [low, high]"),
            ("rows ^relu", dict(noted_figures(), figures=[
                {"row": "relu_forward/x/1", "run": "r1", "train_loss": "0.48"}]),
             "its train_loss is a number"),
        ]
        for options, figures, message in cases:
            with self.subTest(options=options, message=message):
                self.write("<!-- generated table: noted, source gpu.json, " + options +
                           " -->\n<!-- end of generated table -->\n", figures)
                result = self.tool("--write")
                self.assertEqual(result.returncode, 1)
                self.assertIn(message, result.stderr)
        self.write("<!-- generated table: bench, source gpu.json, rows ^relu -->\n"
                   "<!-- end of generated table -->\n", noted_figures())
        result = self.tool("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("a bench table takes no options", result.stderr)


BARRIERS_README = """# Lesson 97

<!-- generated table: barriers, source barriers.json -->
<!-- end of generated table -->
"""

# A kernel file: the comment's __syncthreads() is not a barrier, so `barrier: 2` is line 7's.
KERNEL = """// A kernel with two barriers; this __syncthreads() is a comment.
__global__ void copy_kernel(const float* in, float* out);  // a declaration, not the definition
__global__ void copy_kernel(const float* in, float* out) {
    __shared__ float s[32];
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();  /* __syncthreads() */
    __syncthreads();
    out[threadIdx.x] = s[31 - threadIdx.x];
}
"""

# A stand-in for `triptych check`: shape 1x1x1's two cases pass, 9x9x9's first $FAKE_FAILS fail
# (in reverse order, both); under --racecheck 9x9x9 is one row, a race. It announces the removed
# barrier on stderr as the simulator does, unless $FAKE_SILENT.
FAKE_CHECK = """#!/usr/bin/env python3
import os, sys
args = sys.argv[1:]
assert args[0] == "check", args
site, order = os.environ["TRIPTYCH_SIM_SKIP_SYNC"], os.environ["TRIPTYCH_SIM_ORDER"]
backend = args[args.index("--backend") + 1]
if not os.environ.get("FAKE_SILENT"):
    print(f"simulator: the barrier at {site} is removed (TRIPTYCH_SIM_SKIP_SYNC): every thread "
          "passes it without waiting", file=sys.stderr)
print("seed 5 (replay with --seed 5)\\n")
lead = f"{'copy':<23} {backend:<14} {'simulator (CPU, 2 threads)':<26.26}"
passed = failed = 0
for shape, fails in (("1x1x1", 0), ("9x9x9", 2 if order == "reverse" else
                                    int(os.environ.get("FAKE_FAILS", "1")))):
    if "--racecheck" in args and shape == "9x9x9":
        print(f"{lead} {'9,9,9':<50} FAIL: race check: 1 problem in the kernel")
        failed += 1
        continue
    for i in range(2):
        ok = i >= fails
        verdict = "PASS" if ok else "FAIL: max abs error 1 > tolerance"
        print(f"{lead} {shape + ' a=' + str(i):<50} {1e-7:10.3g} {1e-7:10.3g}  {'1e-05':<24} "
              f"{verdict}")
        passed, failed = passed + ok, failed + (not ok)
print(f"\\n{passed} passed, {failed} failed (seed 5)")
sys.exit(1 if failed else 0)
"""


class BarrierTables(LessonFolder):
    folder, readme_text = "97_test", BARRIERS_README

    def setUp(self):
        super().setUp()
        self.kernel = os.path.join(self.dir, "copy.cu")
        with open(self.kernel, "w", encoding="utf-8") as f:
            f.write(KERNEL)
        self.write_source(barrier=2)
        self.triptych = os.path.join(self.dir, "triptych")
        with open(self.triptych, "w", encoding="utf-8") as f:
            f.write(FAKE_CHECK)
        os.chmod(self.triptych, 0o755)

    def write_source(self, barrier):
        with open(os.path.join(self.lessons, "97_test", "barriers.json"), "w",
                  encoding="utf-8") as f:
            json.dump({"check": ["--op", "copy", "--seed", "5"],
                       "orders": ["forward", "reverse", "random:1"],
                       "rows": [{"file": self.kernel, "function": "copy_kernel",
                                 "barrier": barrier, "backend": "gpu_tiled@2"}]}, f)

    def tool(self, *args, fails="1", silent=""):
        return super().tool(*args, env=dict(os.environ, FAKE_FAILS=fails, FAKE_SILENT=silent))

    def test_the_checks_become_the_table_and_a_recount_that_differs_fails_the_check(self):
        self.assertEqual(self.tool("--check").returncode, 1)  # nothing counted yet
        result = self.tool("--count", self.triptych)
        self.assertEqual(result.returncode, 0, result.stderr)
        # The second barrier in code is on line 7: the comment's on line 1 and the one inside
        # /* */ on line 6 do not count. 1 of 4 cases fails forward, 2 reverse; only 1x1x1 passes
        # in every order; the race check stops 9x9x9 at its race.
        self.assertIn("| the second `__syncthreads()` of `copy_kernel` | copy.cu:7 | gpu_tiled@2 | "
                      "1 of 4 fail | 2 | 1 | 1×1×1 | a race in 1 of 2 shapes |", self.text())
        self.assertEqual(self.tool("--check", "--triptych", self.triptych).returncode, 0)
        result = self.tool("--check", "--triptych", self.triptych, fails="0")
        self.assertEqual(result.returncode, 1)
        self.assertIn("no longer counts what", result.stderr)
        # A planted digit fails without a recount.
        text = self.text()
        with open(self.readme, "w", encoding="utf-8") as f:
            f.write(text.replace("| 1 of 4 fail | 2 |", "| 1 of 4 fail | 3 |"))
        self.assertEqual(self.tool("--check").returncode, 1)

    def test_a_barrier_that_moved_shows_both_lines_and_fails_the_check(self):
        self.assertEqual(self.tool("--count", self.triptych).returncode, 0)
        with open(self.kernel, "w", encoding="utf-8") as f:
            f.write("// one more line\n" + KERNEL)
        self.assertEqual(self.tool("--check").returncode, 1)
        self.assertEqual(self.tool("--write").returncode, 0)
        self.assertIn("| copy.cu:8, counted at line 7 |", self.text())

    def test_a_barrier_that_is_not_there_or_removed_nothing_is_refused_by_name(self):
        self.write_source(barrier=3)
        result = self.tool("--count", self.triptych)
        self.assertEqual(result.returncode, 1)
        self.assertIn("copy_kernel in " + self.kernel + " has 2 barriers, not a barrier number 3",
                      result.stderr)
        self.write_source(barrier=1)
        result = self.tool("--count", self.triptych, silent="1")
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"no barrier ran at {self.kernel}:6, so nothing was removed", result.stderr)
        with open(os.path.join(self.lessons, "97_test", "barriers.json"), encoding="utf-8") as f:
            self.assertNotIn("counted", json.load(f)["rows"][0])  # nothing was recorded


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    args, rest = parser.parse_known_args()
    TOOL = args.tool
    unittest.main(argv=[sys.argv[0]] + rest)

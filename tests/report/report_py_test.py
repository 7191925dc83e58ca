"""bench/report.py on synthetic Google Benchmark JSON with known figures: the speedups and
percentages it prints (GEMM, % of copy bandwidth of the memory-bound ops, sum's two modes, what
fusion buys), "no GPU" in every GPU column without a GPU, simulator rows kept out of GPU columns,
medians rather than means, and refusal of bad input without touching an existing report.

    python3 report_py_test.py --report-py bench/report.py
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

REPORT_PY = None  # set from the command line


def gemm_rows(variant, n, gflops, op="gemm"):
    """A median aggregate at `gflops`, plus a mean aggregate far off (the report must use the
    median)."""
    name = f"{op}/{variant}/{n}x{n}x{n}/real_time"
    seconds = 2 * n**3 / (gflops * 1e9)
    return [aggregate(name, "median", seconds, flops=gflops * 1e9),
            aggregate(name, "mean", seconds / 50, flops=gflops * 50e9)]


def aggregate(run_name, kind, seconds, **counters):
    return {"name": f"{run_name}_{kind}", "run_name": run_name, "run_type": "aggregate",
            "aggregate_name": kind, "repetitions": 3, "real_time": seconds * 1e6,
            "cpu_time": seconds * 1e6, "time_unit": "us", **counters}


def stream_row(op, variant, size, gbs):
    """A memory-bound row at `gbs` GB/s; `size` is n floats or 'ROWSxCOLS'."""
    rows, _, cols = str(size).partition("x")
    n = int(rows) * int(cols or 1)
    return [aggregate(f"{op}/{variant}/{size}/real_time", "median", 8 * n / (gbs * 1e9),
                      bytes=gbs * 1e9)]


def dense_row(op, variant, batch, inputs, outputs, ms):
    """dense_forward or dense_forward_unfused taking `ms` per call, with its GFLOP/s counter."""
    name = f"{op}/{variant}/{batch}x{inputs}->{outputs}_relu/real_time"
    return [aggregate(name, "median", ms / 1e3, flops=2 * batch * inputs * outputs / (ms / 1e3))]


def new_ops_cpu():
    """The memory-bound ops, sum and the dense layer on the CPU, against copy/host rows of 20 GB/s
    (1M floats) and 10 GB/s (4096x1000)."""
    n = 1048576
    rows = stream_row("copy", "host", n, 20) + stream_row("copy", "host", 4096000, 10)
    rows += stream_row("sigmoid_forward", "cpu_naive", n, 5)       # 25% of the copy
    rows += stream_row("sigmoid_forward", "cpu_eigen_omp", n, 15)  # 75%
    rows += stream_row("softmax_forward", "cpu_eigen_omp", "4096x1000", 8)  # 80%
    rows += stream_row("bias_add", "cpu_naive", "256x4096", 30)  # 150%; cpu_eigen_omp: not run
    rows += stream_row("sum_deterministic", "cpu_eigen_omp", n, 10)
    rows += stream_row("sum_fast", "cpu_eigen_omp", n, 25)  # 2.5 times the deterministic mode
    # Y is 1024x1024: 16 MiB not moved, 0.839 ms at 20 GB/s; 2*1024^3 flops in 10 and 12.5 ms.
    rows += dense_row("dense_forward", "cpu_eigen_omp", 1024, 1024, 1024, 10)
    rows += dense_row("dense_forward_unfused", "cpu_eigen_omp", 1024, 1024, 1024, 12.5)
    rows += dense_row("dense_forward", "cpu_naive", 64, 784, 256, 20)
    rows += dense_row("dense_forward_unfused", "cpu_naive", 64, 784, 256, 20)
    return rows


def iteration(run_name, seconds, **counters):
    return {"name": run_name, "run_name": run_name, "run_type": "iteration", "repetitions": 3,
            "real_time": seconds * 1e3, "cpu_time": seconds * 1e3, "time_unit": "ms", **counters}


# The ops a run declares (triptych_ops), as triptych_bench's descriptions do.
OPS = {
    "gemm": ("flops", "2·M·N·K", "gemm"),
    "relu_forward": ("bytes", "8n", "memory"), "relu_backward": ("bytes", "12n", "memory"),
    "sigmoid_forward": ("bytes", "8n", "memory"), "sigmoid_backward": ("bytes", "12n", "memory"),
    "tanh_forward": ("bytes", "8n", "memory"), "tanh_backward": ("bytes", "12n", "memory"),
    "bias_add": ("bytes", "8·rows·cols + 4·cols", "memory"),
    "bias_backward": ("bytes", "4·rows·cols + 4·cols", "memory"),
    "softmax_forward": ("bytes", "8·rows·cols", "memory"),
    "softmax_backward": ("bytes", "12·rows·cols", "memory"),
    "mse_loss": ("bytes", "12n", "memory"),
    "softmax_cross_entropy": ("bytes", "8·rows·cols + 4·rows", "memory"),
    "sum_deterministic": ("bytes", "4n", "reduction"), "sum_fast": ("bytes", "4n", "reduction"),
    "dense_forward": ("flops", "2·batch·in·out", "dense"),
    "dense_forward_unfused": ("flops", "2·batch·in·out", "dense"),
    **{f"conv2d_{p}_{a}": ("flops", "2·N·K·P·Q·C·R·S", "conv")
       for p in ("forward", "forward_backward")
       for a in ("direct", "im2col", "fft", "implicit_gemm", "winograd")},
    **{f"{k}_pool2d_{p}": ("bytes", "4·(NCHW + NCPQ)", "pool")
       for k in ("max", "avg") for p in ("forward", "backward")},
    **{f"optimizer_step_{k}": ("bytes", "4·(3 + 2·states)·floats", "optimizer")
       for k in ("sgd", "adam", "rmsprop")},
    "train_step": ("images", "64 images", "train"),
    "train_transfer": ("bytes", "4·(64·784 + 64 + 1)", "train"),
    "copy": ("bytes", "8n", "copy"),
}


def ops_json(ops=None):
    return json.dumps({op: {"counter": c, "work": w, "table": t}
                       for op, (c, w, t) in (ops or OPS).items()})


def context(variants, gpu="no GPU (simulator build)", **extra):
    extra.setdefault("triptych_ops", ops_json())
    return {"date": "2024-06-01T12:00:00+00:00", "host_name": "testhost", "num_cpus": 2,
            "mhz_per_cpu": 2800, "load_avg": [0.1, 0.1, 0.1],
            "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 1}],
            "triptych_build": "sim", "triptych_build_type": "Release",
            "triptych_compiler": "GNU 12.2.0", "triptych_omp_threads": "2",
            "triptych_cpu": "AMD EPYC (family 25, model 17), code compiled for AVX-512",
            "triptych_cpu_round_trip": "62 ns between CPU 0 and CPU 1",
            "triptych_openblas_threads": "2", "triptych_eigen_blas": "on",
            "triptych_quick": "no", "triptych_variants": variants, "triptych_gpu": gpu, **extra}


def cpu_benchmarks():
    rows = []
    for n, naive, eigen, blas in ((64, 1, 20, 25), (128, 1, 40, 40), (1024, None, 90, 100)):
        if naive:
            rows += gemm_rows("cpu_naive", n, naive)
        rows += gemm_rows("cpu_eigen_omp", n, eigen) + gemm_rows("openblas", n, blas)
    rows += stream_row("relu_forward", "cpu_naive", 65536, 10)
    rows += stream_row("copy", "host", 65536, 20)
    rows += new_ops_cpu()
    # No aggregates for this one: the report takes the median of the three iterations (16).
    name = "relu_forward/cpu_eigen_omp/65536/real_time"
    rows += [iteration(name, 1.0, bytes=v) for v in (15e9, 16e9, 100e9)]
    rows.append({"name": "gemm/cpu_naive/2048x2048x2048/real_time",
                 "run_name": "gemm/cpu_naive/2048x2048x2048/real_time", "run_type": "iteration",
                 "error_occurred": True, "error_message": "cpu_naive does not implement gemm"})
    return rows


def simulator_run():
    """A sim build run with --include-simulator: gpu_tiled's rows are CPU timings of the simulator
    and fast enough to be mistaken for a GPU if they leaked into a GPU column."""
    rows = cpu_benchmarks() + gemm_rows("gpu_tiled_on_simulator", 64, 777)
    rows += stream_row("softmax_forward", "gpu_tiled_on_simulator", "16x256", 999)
    rows += dense_row("dense_forward", "gpu_tiled_on_simulator", 32, 128, 64, 888)
    return {"context": context("cpu_naive=cpu,cpu_eigen_omp=cpu,gpu_naive=simulator,"
                               "gpu_tiled=simulator"), "benchmarks": rows}


def gpu_run():
    rows = cpu_benchmarks()
    rows += gemm_rows("gpu_naive", 64, 80) + gemm_rows("gpu_tiled", 64, 400)
    rows += gemm_rows("gpu_naive@1", 64, 20) + gemm_rows("gpu_tiled@3", 64, 600)
    rows += gemm_rows("gpu_vendor", 64, 800)
    # Tensor cores: gpu_tiled's TF32 version against cuBLAS's TF32 (gpu_vendor@2), not its FP32.
    rows += gemm_rows("gpu_tiled@9", 64, 900) + gemm_rows("gpu_vendor@2", 64, 1200)
    rows += stream_row("relu_forward", "gpu_tiled", 65536, 1000)
    rows += stream_row("softmax_forward", "gpu_tiled", "4096x1000", 1600)
    rows += stream_row("copy", "device", 65536, 2000)
    for kind, gbs in (("h2d_pinned", 10), ("d2h_pinned", 20), ("h2d_pageable", 5),
                      ("d2h_pageable", 5)):
        rows += stream_row("copy", kind, 262144, gbs)
    # gpu_vendor (cuBLAS) has none of these ops: no rows, so no column and no fusion row.
    rows += stream_row("copy", "device", 1048576, 2000)
    rows += stream_row("sigmoid_forward", "gpu_tiled", 1048576, 1500)  # 75% of the device copy
    rows += stream_row("sum_deterministic", "gpu_tiled", 1048576, 500)
    rows += stream_row("sum_fast", "gpu_tiled", 1048576, 1000)
    # Y is 1024x4096: 64 MiB not moved, 0.0336 ms at the nearest device copy (1M floats, 2 TB/s).
    rows += dense_row("dense_forward", "gpu_tiled", 1024, 4096, 4096, 0.5)
    rows += dense_row("dense_forward_unfused", "gpu_tiled", 1024, 4096, 4096, 0.6)
    # lenet_conv1 forward: each variant's fastest algorithm counts (implicit GEMM 0.05 ms on
    # gpu_tiled, im2col 0.5 ms on cpu_eigen_omp); its sizes come from the context.
    lenet1 = 2.0 * 64 * 6 * 28 * 28 * 1 * 5 * 5
    for op, variant, ms in (("conv2d_forward_direct", "gpu_tiled", 0.2),
                            ("conv2d_forward_implicit_gemm", "gpu_tiled", 0.05),
                            ("conv2d_forward_direct", "cpu_eigen_omp", 1),
                            ("conv2d_forward_im2col", "cpu_eigen_omp", 0.5)):
        rows += conv_row(op, variant, "lenet_conv1", ms, lenet1)
    # LeNet's first pooling, x 64x6x28x28 (301056 floats), y 64x6x14x14 (75264): 0.01 ms on
    # gpu_tiled, 0.1 ms on cpu_eigen_omp; gpu_tiled alone at 8 times the batch.
    for variant, shape, ms in (("gpu_tiled", "64x6x28x28_w2s2", 0.01),
                               ("cpu_eigen_omp", "64x6x28x28_w2s2", 0.1),
                               ("gpu_tiled", "512x6x28x28_w2s2", 0.05)):
        rows += [aggregate(f"max_pool2d_forward/{variant}/{shape}/real_time", "median", ms / 1e3,
                           bytes=4 * (301056 + 75264) / (ms / 1e3))]
    rows += stream_row("mse_loss", "gpu_tiled", 1048576, 1000)  # no cpu_eigen_omp row
    variants = "cpu_naive=cpu,cpu_eigen_omp=cpu,gpu_naive=gpu,gpu_tiled=gpu,gpu_vendor=gpu"
    versions = {"gemm": {"cpu_naive": [[1, "loops", True]],
                         "gpu_naive": [[1, "uncoalesced", False], [2, "coalesced", True]],
                         "gpu_tiled": [[3, "shared_tiles", False], [8, "double_buffer", True],
                                       [9, "tensor_cores_tf32", False, "tf32"]],
                         "gpu_vendor": [[1, "cublas", True, "fp32"],
                                        [2, "cublas_tf32", False, "tf32"]]}}
    # Recorded by a triptych_bench from before it measured the CPUs' round trip: no such row.
    doc = {"context": context(variants, gpu="NVIDIA H200", triptych_gpu_sms="132",
                               triptych_gpu_memory_gib="139.8",
                               triptych_versions=json.dumps(versions),
                               triptych_conv_shapes=json.dumps(
                                   {"lenet_conv1": "64,1,28,28,6,5,5,1,1,2,2",
                                    "tiny": "1,2,8,8,2,3,3,1,1,1,1"})), "benchmarks": rows}
    del doc["context"]["triptych_cpu_round_trip"]
    return doc


def run_report(json_path, out, peer=None):
    command = [sys.executable, REPORT_PY, "--json", json_path, "--out", out]
    if peer:
        command += ["--peer", peer]
    return subprocess.run(command, capture_output=True, text=True)


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write_json(self, doc, name="run.json"):
        return write_json(self.tmp.name, doc, name)

    def make_report(self, doc, name="report"):
        return make_report(self.tmp.name, doc, name)


def write_json(directory, doc, name):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def make_report(directory, doc, name, peer=None):
    """Writes `doc` (and the peer's JSON, if any) and reports it into `directory/name`; returns
    (report dir, report.md text)."""
    out = os.path.join(directory, name)
    peer_path = write_json(directory, peer, name + ".peer.json") if peer else None
    result = run_report(write_json(directory, doc, name + ".json"), out, peer_path)
    if result.returncode != 0:
        raise AssertionError(result.stderr)
    with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
        return out, f.read()


class OneReport(unittest.TestCase):
    """Tests that read one report, made once for the class (matplotlib takes seconds to start)."""
    make_run = None
    peer = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out, cls.md = make_report(cls.tmp.name, cls.make_run(), "report", cls.peer)
        cls.tables = tables(cls.md)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class WithoutGpu(OneReport):
    make_run = staticmethod(simulator_run)

    def test_speedups_over_cpu_naive_and_cpu_eigen_omp_are_ratios_of_medians(self):
        over_naive = self.tables["GEMM speedup over cpu_naive"]
        self.assertEqual(cell(over_naive, "64", "cpu_eigen_omp"), "20.0×")
        self.assertEqual(cell(over_naive, "128", "openblas"), "40.0×")
        self.assertEqual(cell(over_naive, "1024", "cpu_eigen_omp"), "—")  # naive not run there
        over_eigen = self.tables["GEMM speedup over cpu_eigen_omp"]
        self.assertEqual(cell(over_eigen, "64", "openblas"), "1.25×")
        self.assertEqual(cell(over_eigen, "64", "cpu_naive"), "0.05×")

    def test_cpu_eigen_omp_is_shown_as_a_percentage_of_openblas(self):
        table = self.tables["cpu_eigen_omp as % of OpenBLAS"]
        self.assertEqual(cell(table, "64", "cpu_eigen_omp / openblas"), "80%")
        self.assertEqual(cell(table, "128", "cpu_eigen_omp / openblas"), "100%")
        self.assertEqual(cell(table, "1024", "cpu_eigen_omp / openblas"), "90%")

    def test_every_gpu_column_says_no_gpu(self):
        for heading in ("GEMM throughput (GFLOP/s)", "GEMM speedup over cpu_naive",
                        "GEMM speedup over cpu_eigen_omp"):
            table = self.tables[heading]
            for gpu_column in ("gpu_naive", "gpu_tiled"):
                self.assertEqual(set(column(table, gpu_column)), {"no GPU"}, heading)
        relu = self.tables["relu_forward"]
        self.assertEqual(set(column(relu, "gpu_tiled")), {"no GPU"})
        self.assertIn("no GPU (simulator build): hand-written kernels", self.md)
        self.assertIn("no GPU (simulator build): transfers", self.md)

    def test_simulator_rows_stay_out_of_gpu_columns_and_charts(self):
        before_simulator_section = self.md.split("## Simulator rows")[0]
        for figure in ("777", "999", "888"):
            self.assertNotIn(figure, before_simulator_section)
        self.assertNotIn("gpu_tiled_on_simulator", self.tables["GEMM throughput (GFLOP/s)"][0])
        sim = self.tables["Simulator rows (CPU timings, not GPU timings)"]
        self.assertEqual(cell(sim, "gemm", "variant"), "gpu_tiled_on_simulator")

    def test_relu_bandwidth_is_compared_with_the_copy_of_the_same_size(self):
        relu = self.tables["relu_forward"]
        self.assertEqual(cell(relu, "65536 (256 KiB)", "cpu_naive"), "10.0 (50%)")
        # Iterations only: the median of 15, 16 and 100 GB/s, not their mean.
        self.assertEqual(cell(relu, "65536 (256 KiB)", "cpu_eigen_omp"), "16.0 (80%)")
        self.assertEqual(cell(relu, "65536 (256 KiB)", "copy/host"), "20.0")

    def test_memory_bound_ops_are_shown_as_a_percentage_of_the_copy_of_the_same_size(self):
        percent = self.tables["Memory-bound ops: % of copy bandwidth"]
        one_m = "1048576 (4 MiB)"
        self.assertEqual(cell_where(percent, "cpu_naive", op="sigmoid_forward", size=one_m), "25%")
        self.assertEqual(cell_where(percent, "cpu_eigen_omp", op="sigmoid_forward", size=one_m),
                         "75%")
        # 4096x1000 is compared with copy/host/4096000 (10 GB/s), not with the 1M-float copy.
        self.assertEqual(cell_where(percent, "cpu_eigen_omp", op="softmax_forward",
                                    size="4096x1000 (15.6 MiB)"), "80%")
        self.assertEqual(cell_where(percent, "cpu_naive", op="bias_add",
                                    size="256x4096 (4 MiB)"), "150%")
        self.assertEqual(cell_where(percent, "cpu_eigen_omp", op="bias_add",
                                    size="256x4096 (4 MiB)"), "—")  # not run
        self.assertEqual(cell_where(percent, "cpu_eigen_omp", op="sum_fast", size=one_m), "125%")
        for gpu_column in ("gpu_naive", "gpu_tiled"):
            self.assertEqual(set(column(percent, gpu_column)), {"no GPU"})

    def test_memory_bound_gbs_sit_next_to_the_copy_columns(self):
        gbs = self.tables["Memory-bound ops: GB/s"]
        where = {"op": "sigmoid_forward", "size": "1048576 (4 MiB)"}
        self.assertEqual(cell_where(gbs, "cpu_eigen_omp", **where), "15.0")
        self.assertEqual(cell_where(gbs, "bytes per call", **where), "8n")
        self.assertEqual(cell_where(gbs, "copy/host", **where), "20.0")
        self.assertEqual(cell_where(gbs, "copy/device", **where), "no GPU")
        self.assertEqual(cell_where(gbs, "copy/host", op="softmax_forward",
                                    size="4096x1000 (15.6 MiB)"), "10.0")

    def test_sum_modes_side_by_side(self):
        table = self.tables["sum: deterministic against fast"]
        where = {"variant": "cpu_eigen_omp", "floats": "1048576 (4 MiB)"}
        self.assertEqual(cell_where(table, "deterministic GB/s", **where), "10.0")
        self.assertEqual(cell_where(table, "fast GB/s", **where), "25.0")
        self.assertEqual(cell_where(table, "fast / deterministic", **where), "2.50×")
        self.assertEqual(cell_where(table, "fast GB/s", variant="gpu_tiled"), "no GPU")

    def test_what_fusion_buys(self):
        table = self.tables["What fusion buys: dense_forward fused against unfused"]
        where = {"variant": "cpu_eigen_omp", "shape": "1024x1024->1024 relu"}
        self.assertEqual(cell_where(table, "fused ms", **where), "10")
        self.assertEqual(cell_where(table, "unfused ms", **where), "12.5")
        self.assertEqual(cell_where(table, "fused GFLOP/s", **where), "215")  # 2*1024^3 / 10 ms
        self.assertEqual(cell_where(table, "unfused GFLOP/s", **where), "172")
        self.assertEqual(cell_where(table, "time saved ms (%)", **where), "2.5 (20%)")
        self.assertEqual(cell_where(table, "fusion speedup", **where), "1.25×")
        # The unfused path writes Y and reads it back twice: 16 bytes per element of Y, which
        # take 0.839 ms at the 20 GB/s of copy/host/1048576 (Y's size).
        self.assertEqual(cell_where(table, "bytes not moved", **where), "16 MiB")
        self.assertEqual(cell_where(table, "at copy bandwidth ms", **where), "0.839")
        naive = {"variant": "cpu_naive", "shape": "64x784->256 relu"}
        self.assertEqual(cell_where(table, "fusion speedup", **naive), "1.00×")
        for gpu_variant in ("gpu_naive", "gpu_tiled"):
            self.assertEqual(set(cell_where(table, c, variant=gpu_variant)
                                 for c in table[0] if c != "variant"), {"no GPU"})

    def test_failed_rows_are_listed_not_dropped(self):
        failed = self.tables["Rows that did not run"]
        self.assertEqual(cell(failed, "gemm/cpu_naive/2048x2048x2048/real_time", "why"),
                         "cpu_naive does not implement gemm")

    def test_machine_section_and_charts_are_written(self):
        machine = self.tables["Machine"]
        self.assertEqual(cell(machine, "GPU", "value"), "no GPU (simulator build)")
        self.assertEqual(cell(machine, "host", "value"), "testhost")
        self.assertEqual(cell(machine, "CPU", "value"),
                         "AMD EPYC (family 25, model 17), code compiled for AVX-512")
        self.assertEqual(cell(machine, "a cache line's round trip", "value"),
                         "62 ns between CPU 0 and CPU 1, as the run started (tens of ns where two "
                         "cores share an L3 cache, hundreds where they do not)")
        for png in ("gemm_gflops.png", "gemm_speedup.png", "relu_bandwidth.png",
                    "memory_bandwidth.png"):
            with open(os.path.join(self.out, png), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", png)
            self.assertIn(f"]({png})", self.md)


def conv_row(op, variant, shape, ms, flops):
    return [aggregate(f"{op}/{variant}/{shape}/real_time", "median", ms / 1e3,
                      flops=flops / (ms / 1e3))]


def conv_run():
    """conv2d and pooling rows on the CPU (and one simulator row that must stay out): cpu_eigen_omp
    im2col beats its direct on lenet_conv1; the sweep has two algorithms."""
    lenet1 = 2.0 * 64 * 6 * 28 * 28 * 1 * 5 * 5  # 2·N·K·P·Q·C·R·S
    rows = cpu_benchmarks()
    rows += conv_row("conv2d_forward_direct", "cpu_naive", "lenet_conv1", 40, lenet1)
    rows += conv_row("conv2d_forward_direct", "cpu_eigen_omp", "lenet_conv1", 2, lenet1)
    rows += conv_row("conv2d_forward_im2col", "cpu_eigen_omp", "lenet_conv1", 0.5, lenet1)
    rows += conv_row("conv2d_forward_backward_im2col", "cpu_eigen_omp", "lenet_conv1", 2,
                     3 * lenet1)
    rows += conv_row("conv2d_forward_direct", "gpu_tiled_on_simulator", "lenet_conv1", 0.001,
                     lenet1)
    for r, direct, fft in ((3, 10, 2), (15, 4, 6)):
        rows += conv_row("conv2d_forward_direct", "cpu_eigen_omp", f"sweep_r{r}", 1, direct * 1e9)
        rows += conv_row("conv2d_forward_fft", "cpu_eigen_omp", f"sweep_r{r}", 1, fft * 1e9)
    for op in ("max_pool2d_forward", "avg_pool2d_forward"):
        name = f"{op}/cpu_eigen_omp/64x6x28x28_w2s2/real_time"
        rows += [aggregate(name, "median", pool_ms(op) / 1e3, bytes=10e9)]
    return {"context": context("cpu_naive=cpu,cpu_eigen_omp=cpu,gpu_naive=simulator,"
                               "gpu_tiled=simulator"), "benchmarks": rows}


def pool_ms(op):
    """The time of conv_run's pooling row for `op`: 0.301 ms for max (half PyTorch's 0.602 ms),
    0.1505 ms for avg."""
    return 0.301 if op.startswith("max") else 0.1505


def peer_json(*results):
    """What bench/pytorch_peer.py writes, holding `results`."""
    return {"peer": "PyTorch 1.13.0a0",
            "context": {"threads": 2, "host": "testhost", "date": "2024-06-01T12:00:00+00:00",
                        "cpu": "Test CPU", "quick": False},
            "results": list(results)}


def timed(op, size, seconds):
    return {"op": op, "size": size, "seconds": seconds, "repetitions": 7}


def trained(model, epoch, images_per_second, accuracy):
    return {"op": "train_epoch", "size": model, "images_per_second": images_per_second,
            "test_accuracy": accuracy, "epoch": epoch}


# PyTorch beside conv_run's cpu_eigen_omp: twice its lenet_conv1 forward (im2col, 0.5 ms) and 1.5
# times its forward+backward (2 ms); twice its pooling forwards, and a max backward that we did not
# run; GEMM at 25 GFLOP/s for N = 64 (ours: 20, so 80%) and 100 at 1024 (ours: 90), none at 128;
# sigmoid at 10 GB/s (ours: 15, so 1.5 times faster) and softmax at 4 GB/s (ours: 8).
PEER = peer_json(
    timed("conv2d_forward", "lenet_conv1", 1e-3),
    timed("conv2d_forward_backward", "lenet_conv1", 3e-3),
    timed("max_pool2d_forward", "64x6x28x28_w2s2", 2 * pool_ms("max") / 1e3),
    timed("avg_pool2d_forward", "64x6x28x28_w2s2", 2 * pool_ms("avg") / 1e3),
    timed("max_pool2d_backward", "64x6x28x28_w2s2", 1e-3),
    timed("gemm", "64x64x64", 2 * 64**3 / 25e9),
    timed("gemm", "1024x1024x1024", 2 * 1024**3 / 100e9),
    timed("sigmoid_forward", "1048576", 8 * 1048576 / 10e9),
    timed("softmax_forward", "4096x1000", 8 * 4096000 / 4e9))


class ConvolutionAndPeer(OneReport):
    make_run = staticmethod(conv_run)
    peer = PEER

    def test_every_variant_and_algorithm_gets_a_conv_row_but_no_simulator_row(self):
        table = self.tables["Convolution"]
        where = {"variant": "cpu_eigen_omp", "algorithm": "im2col", "shape": "lenet_conv1"}
        self.assertEqual(cell_where(table, "forward ms", **where), "0.5")
        self.assertEqual(cell_where(table, "forward+backward ms", **where), "2")
        self.assertEqual(cell_where(table, "forward ms", variant="cpu_naive"), "40")
        self.assertNotIn("gpu_tiled_on_simulator", column(table, "variant"))
        self.assertEqual(cell_where(table, "forward ms", variant="PyTorch (CPU)"), "1")

    def test_a_run_without_the_conv_shapes_sizes_says_so(self):
        self.assertIn("conv2d on the benchmark shapes (the run did not record their sizes: "
                      "conv_shapes in check/conv_checks.cpp lists them)", self.md)

    def test_pytorch_ratio_uses_our_fastest_algorithm(self):
        table = self.tables["cpu_eigen_omp against PyTorch on the CPU"]
        forward = {"shape": "lenet_conv1", "pass": "forward"}
        self.assertEqual(cell_where(table, "our algorithm", **forward), "im2col")
        self.assertEqual(cell_where(table, "speed ratio", **forward), "2.00×")
        self.assertEqual(cell_where(table, "speed ratio", shape="lenet_conv1",
                                    **{"pass": "forward+backward"}), "1.50×")

    def test_pooling_against_pytorch(self):
        table = self.tables["Pooling"]
        pytorch = {"variant": "PyTorch (CPU)"}
        self.assertEqual(cell_where(table, "max_pool2d_forward ms", **pytorch), "0.602")
        self.assertEqual(cell_where(table, "max_pool2d_backward ms", **pytorch), "1")
        self.assertEqual(cell_where(table, "avg_pool2d_backward ms", **pytorch), "—")
        self.assertIn("| 64x6x28x28_w2s2 | max_pool2d_forward | 0.301 | 0.602 | 2.00× |", self.md)
        self.assertIn("| 64x6x28x28_w2s2 | avg_pool2d_forward | 0.15 | 0.301 | 2.00× |", self.md)
        self.assertNotIn("| 64x6x28x28_w2s2 | max_pool2d_backward |", self.md)  # ours not run

    def test_pooling_bandwidth_against_the_copy_of_the_nearest_size(self):
        # max: 10 GB/s for 0.301 ms is 3.01 MB, about a 376k-float copy: the 1M-float copy
        # (20 GB/s) is nearest. avg: 1.505 MB, 188k floats: the 64k-float copy (20 GB/s).
        table = self.tables["Pooling: GB/s and % of copy bandwidth"]
        where = {"variant": "cpu_eigen_omp", "shape": "64x6x28x28_w2s2"}
        self.assertEqual(cell_where(table, "max_pool2d_forward GB/s (% of copy)", **where),
                         "10.0 (50%)")
        self.assertEqual(cell_where(table, "avg_pool2d_forward GB/s (% of copy)", **where),
                         "10.0 (50%)")
        self.assertEqual(cell_where(table, "max_pool2d_backward GB/s (% of copy)", **where), "—")

    def test_gemm_against_pytorch_beside_openblas(self):
        table = self.tables["cpu_eigen_omp as % of OpenBLAS"]
        self.assertEqual(cell(table, "64", "PyTorch (CPU) GFLOP/s"), "25.0")
        self.assertEqual(cell(table, "64", "cpu_eigen_omp / PyTorch (CPU)"), "80%")
        self.assertEqual(cell(table, "1024", "cpu_eigen_omp / PyTorch (CPU)"), "90%")
        self.assertEqual(cell(table, "128", "PyTorch (CPU) GFLOP/s"), "—")
        self.assertEqual(cell(table, "64", "cpu_eigen_omp / openblas"), "80%")

    def test_memory_bound_ops_against_pytorch(self):
        table = self.tables["Memory-bound ops: cpu_eigen_omp against PyTorch"]
        sigmoid = {"op": "sigmoid_forward", "size": "1048576 (4 MiB)"}
        self.assertEqual(cell_where(table, "cpu_eigen_omp GB/s", **sigmoid), "15.0")
        self.assertEqual(cell_where(table, "PyTorch GB/s", **sigmoid), "10.0")
        self.assertEqual(cell_where(table, "speed ratio", **sigmoid), "1.50×")
        softmax = {"op": "softmax_forward", "size": "4096x1000 (15.6 MiB)"}
        self.assertEqual(cell_where(table, "PyTorch GB/s", **softmax), "4.00")
        self.assertEqual(cell_where(table, "speed ratio", **softmax), "2.00×")
        self.assertEqual(len(table), 2)  # the ops PyTorch did not time get no row

    def test_the_peer_is_named_with_its_threads(self):
        self.assertIn("PyTorch 1.13.0a0, 2 threads. 'speed ratio'", self.md)

    def test_without_a_peer_the_report_says_how_to_measure_pytorch(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, md = make_report(tmp, conv_run(), "report")
        self.assertIn("No PyTorch figures: run `/usr/bin/python3 bench/pytorch_peer.py conv pool "
                      "--threads N --out peer.json`", md)
        self.assertIn("`triptych report --peer peer.json`", md)
        self.assertNotIn("PyTorch (CPU)", md)
        self.assertNotIn("Memory-bound ops: cpu_eigen_omp against PyTorch", md)

    def test_the_filter_sweep_is_charted(self):
        self.assertTrue(os.path.exists(os.path.join(self.out, "conv_sweep.png")))
        self.assertIn("conv_sweep.png", self.md)

    def test_a_peer_file_that_is_not_the_peer_json_is_refused(self):
        old_text = ("torch 1.13.0a0, 2 threads\n"
                    "pool N64 C6 H28 W28 k2 s2: max 0.602 ms, avg 0.301 ms\n")
        for name, peer, expected in (
                ("old.txt", old_text, "old.txt is not the JSON of bench/pytorch_peer.py: write "
                                      "it with `/usr/bin/python3 bench/pytorch_peer.py"),
                ("empty.json", peer_json(), "empty.json holds no results"),
                ("bad.json", peer_json(timed("gemm", "64x64x64", 1e-3), {"op": "gemm"}),
                 "bad.json: result 2 is not an op and size with its figures")):
            with tempfile.TemporaryDirectory() as tmp:
                json_path = write_json(tmp, conv_run(), "run.json")
                result = run_report(json_path, os.path.join(tmp, "report"),
                                    write_json(tmp, peer, name))
                self.assertEqual(result.returncode, 1)
                self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
                self.assertIn(expected, result.stderr)
                self.assertFalse(os.path.exists(os.path.join(tmp, "report")))


class WithGpu(OneReport):
    make_run = staticmethod(gpu_run)

    def test_a_run_that_measured_no_round_trip_has_no_such_row(self):
        self.assertNotIn("a cache line's round trip", column(self.tables["Machine"], ""))

    def test_gpu_kernels_are_shown_as_a_percentage_of_gpu_vendor(self):
        table = self.tables["GPU kernels as % of gpu_vendor (cuBLAS)"]
        self.assertEqual(cell(table, "64", "gpu_naive"), "10%")
        self.assertEqual(cell(table, "64", "gpu_tiled"), "50%")
        self.assertEqual(cell(table, "64", "gpu_vendor GFLOP/s"), "800")
        # Versions other than a variant's default belong to the ladder, not to this table.
        self.assertNotIn("gpu_tiled@3", table[0])

    def test_the_gemm_ladder_lists_every_gpu_version_in_order_with_its_share_of_cublas(self):
        table = self.tables["The GEMM ladder: every version on the GPU"]
        ladder = [row["run as"] for row in table]
        self.assertEqual(ladder, ["gpu_naive@1", "gpu_naive@2", "gpu_tiled@3", "gpu_tiled@8",
                                  "gpu_tiled@9", "gpu_vendor", "gpu_vendor@2"])
        # GFLOP/s (share of cuBLAS's 800, gain over the version before); 64 is the only size.
        self.assertEqual(cell(table, "1", "64³"), "20.0 (2.5%)")
        self.assertEqual(cell(table, "2", "64³"), "80.0 (10%, 4.00×)")
        self.assertEqual(cell(table, "3", "64³"), "600 (75%, 7.50×)")
        self.assertEqual(cell(table, "8", "64³"), "400 (50%, 0.67×)")
        # The TF32 version's share is of cuBLAS's TF32 (1200), not its FP32 (800).
        self.assertEqual(cell(table, "9", "64³"), "900 (75%, 2.25×)")
        self.assertEqual(cell_where(table, "64³", **{"run as": "gpu_vendor@2"}), "1200")

    def test_gpu_columns_hold_gpu_figures(self):
        gflops = self.tables["GEMM throughput (GFLOP/s)"]
        self.assertEqual(cell(gflops, "64", "gpu_tiled"), "400")
        self.assertEqual(cell(gflops, "128", "gpu_tiled"), "—")
        self.assertEqual(cell(self.tables["GEMM speedup over cpu_eigen_omp"], "64", "gpu_vendor"),
                         "40.0×")
        self.assertNotIn("no GPU", self.md)

    def test_gpu_relu_is_compared_with_a_device_copy(self):
        relu = self.tables["relu_forward"]
        self.assertEqual(cell(relu, "65536 (256 KiB)", "gpu_tiled"), "1000 (50%)")

    def test_gpu_memory_bound_ops_are_compared_with_a_device_copy(self):
        percent = self.tables["Memory-bound ops: % of copy bandwidth"]
        where = {"op": "sigmoid_forward", "size": "1048576 (4 MiB)"}
        self.assertEqual(cell_where(percent, "gpu_tiled", **where), "75%")
        self.assertEqual(cell_where(percent, "cpu_eigen_omp", **where), "75%")
        self.assertEqual(cell_where(self.tables["Memory-bound ops: GB/s"], "copy/device", **where),
                         "2000")

    def test_a_variant_without_the_ops_gets_no_column_and_no_row(self):
        # gpu_vendor (cuBLAS) throws Unsupported for them, so triptych_bench wrote no rows.
        self.assertNotIn("gpu_vendor", self.tables["Memory-bound ops: % of copy bandwidth"][0])
        self.assertNotIn("gpu_vendor", self.tables["Memory-bound ops: GB/s"][0])
        fusion = self.tables["What fusion buys: dense_forward fused against unfused"]
        self.assertNotIn("gpu_vendor", column(fusion, "variant"))
        self.assertNotIn("gpu_vendor", column(self.tables["sum: deterministic against fast"],
                                              "variant"))

    def test_gpu_sum_and_fusion(self):
        sums = self.tables["sum: deterministic against fast"]
        self.assertEqual(cell_where(sums, "fast / deterministic", variant="gpu_tiled"), "2.00×")
        fusion = self.tables["What fusion buys: dense_forward fused against unfused"]
        where = {"variant": "gpu_tiled", "shape": "1024x4096->4096 relu"}
        self.assertEqual(cell_where(fusion, "fusion speedup", **where), "1.20×")
        self.assertEqual(cell_where(fusion, "time saved ms (%)", **where), "0.1 (17%)")
        self.assertEqual(cell_where(fusion, "bytes not moved", **where), "64 MiB")
        self.assertEqual(cell_where(fusion, "at copy bandwidth ms", **where), "0.0336")

    def test_transfer_cost_of_a_gemm(self):
        # N=64: A and B up (8192 floats at 10 GB/s), C down (4096 at 20 GB/s) = 4.096 us,
        # against 0.655 us of cuBLAS (2*64^3 flops at 800 GFLOP/s): 86% of the total.
        table = self.tables["Transfer cost of one GEMM"]
        self.assertEqual(cell(table, "64", "transfers ms (pinned)"), "0.0041")
        self.assertEqual(cell(table, "64", "transfers share (pinned)"), "86%")
        # cpu_eigen_omp at 20 GFLOP/s takes 26.2 us: 40x the 0.655 us of cuBLAS, and
        # 26.2 / (0.655 + 4.096) = 5.52x with the transfers.
        self.assertEqual(cell(table, "64", "speedup over cpu_eigen_omp"), "40.0×")
        self.assertEqual(cell(table, "64", "with transfers (pinned)"), "5.52×")
        with open(os.path.join(self.out, "gemm_speedup.png"), "rb") as f:  # drawn with that line
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        transfers = self.tables["Host↔device transfers"]
        self.assertEqual(cell(transfers, "1 MiB", "h2d_pinned GB/s"), "10.0")

    def assert_transfer_row(self, title, size, gpu_ms, transfers_ms, share, speedup,
                            with_transfers=None):
        """The row `size` of the transfer table `title`, cell by cell (gpu_tiled's columns)."""
        table = self.tables[title]
        expected = {"gpu_tiled ms": gpu_ms, "transfers ms (pinned)": transfers_ms,
                    "transfers share (pinned)": share, "speedup over cpu_eigen_omp": speedup}
        if with_transfers is not None:
            expected["with transfers (pinned)"] = with_transfers
        for heading, value in expected.items():
            self.assertEqual(cell(table, size, heading), value, f"{title}: {heading}")

    def test_transfer_cost_of_a_relu(self):
        # 65536 floats: x up at 10 GB/s (26.2 us) and y down at 20 GB/s (13.1 us) = 39.3 us,
        # against gpu_tiled's 0.524 us (8 bytes a float at 1000 GB/s): 99% of the total.
        # cpu_eigen_omp's row (cpu_benchmarks) takes 1 s, the median of its iterations: 1 s /
        # 0.524 us = 1907349x the call alone, 1 s / (0.524 + 39.32) us = 25097x with its trips.
        self.assert_transfer_row("Transfer cost of one ReLU", "65536 (256 KiB)",
                                 gpu_ms="0.0005", transfers_ms="0.0393", share="99%",
                                 speedup="1907349×", with_transfers="25097×")

    def test_transfer_cost_of_a_softmax_and_of_a_dense_layer(self):
        # softmax 4096x1000: 4096000 floats up at 10 GB/s (1.6384 ms) and down at 20 GB/s
        # (0.8192 ms) = 2.4576 ms, against gpu_tiled's 0.02048 ms (8 bytes a float at 1600 GB/s):
        # 99% of the total. cpu_eigen_omp at 8 GB/s: 4.096 ms, 200x the call alone and
        # 4.096 / (2.4576 + 0.02048) = 1.65x with its trips.
        self.assert_transfer_row("Transfer cost of one softmax", "4096x1000 (15.6 MiB)",
                                 gpu_ms="0.0205", transfers_ms="2.46", share="99%",
                                 speedup="200×", with_transfers="1.65×")
        # dense 1024x4096->4096: x (4194304 floats), the weights (16777216) and the bias (4096)
        # up at 10 GB/s = 8.3902464 ms, y (4194304) down at 20 GB/s = 0.8388608 ms: 9.229 ms
        # against gpu_tiled's 0.5 ms, 95% of the total; no cpu_eigen_omp row of that size.
        self.assert_transfer_row("Transfer cost of one dense layer", "1024x4096->4096 relu",
                                 gpu_ms="0.5", transfers_ms="9.23", share="95%", speedup="—")

    def test_transfer_cost_of_a_convolution_at_each_variants_fastest_algorithm(self):
        # lenet_conv1 (N64 C1 H28 W28 K6 R5 S5, pad 2: P = Q = 28): x (50176 floats), the filters
        # (150) and the bias (6) up at 10 GB/s = 20.13 us, y (64*6*28*28 = 301056) down at
        # 20 GB/s = 60.21 us: 80.3 us against implicit GEMM's 50 us, 62% of the total.
        # cpu_eigen_omp's im2col (0.5 ms) is 10x that call, 0.5 / 0.1303 = 3.84x with its trips.
        self.assert_transfer_row("Transfer cost of one convolution",
                                 "lenet_conv1 (implicit_gemm)", gpu_ms="0.05",
                                 transfers_ms="0.0803", share="62%", speedup="10.0×",
                                 with_transfers="3.84×")

    def test_transfer_cost_of_the_other_ops_at_the_largest_size_both_ran(self):
        table = self.tables["Transfer cost of the other ops"]
        # sigmoid_forward, 1048576 floats: x up at 10 GB/s (0.4194 ms), y down at 20 GB/s
        # (0.2097 ms) = 0.629 ms against gpu_tiled's 0.00559 ms (8 bytes a float at 1500 GB/s):
        # 99%. cpu_eigen_omp at 15 GB/s takes 0.559 ms, 100x the call alone and 0.559 /
        # (0.629 + 0.00559) = 0.88x with its trips: slower than staying on the CPU.
        sigmoid = {"GPU variant": "gpu_tiled", "GPU ms": "0.00559", "size": "1048576 (4 MiB)",
                   "crosses": "x up; y down", "transfers ms (pinned)": "0.629",
                   "transfers share (pinned)": "99%", "speedup over cpu_eigen_omp": "100×",
                   "with transfers (pinned)": "0.88×"}
        for heading, value in sigmoid.items():
            self.assertEqual(cell(table, "sigmoid_forward", heading), value, heading)
        # max pooling at 64x6x28x28, which both ran, not gpu_tiled's larger 512x6x28x28: x up
        # (0.1204 ms) and y down (0.01505 ms) = 0.135 ms against 0.01 ms, 93%; cpu_eigen_omp's
        # 0.1 ms is 10x, 0.1 / 0.1455 = 0.69x with the trips.
        pool = {"size": "64x6x28x28_w2s2", "crosses": "x up; y down (the argmax stays)",
                "transfers ms (pinned)": "0.135", "transfers share (pinned)": "93%",
                "speedup over cpu_eigen_omp": "10.0×", "with transfers (pinned)": "0.69×"}
        for heading, value in pool.items():
            self.assertEqual(cell(table, "max_pool2d_forward", heading), value, heading)
        # mse_loss ran on gpu_tiled only: its row, without speedups. The prediction and target
        # up (2 x 4 MiB at 10 GB/s = 0.839 ms), the gradient and the loss down (0.2097 ms).
        self.assertEqual(cell(table, "mse_loss", "transfers ms (pinned)"), "1.05")
        self.assertEqual(cell(table, "mse_loss", "speedup over cpu_eigen_omp"), "—")
        # sum moves its input up and one float down; softmax_forward has its own table.
        self.assertEqual(cell(table, "sum_deterministic", "crosses"), "x up; the sum down")
        self.assertNotIn("softmax_forward", column(table, "op"))

    def test_the_conv_shapes_sizes_come_from_the_run(self):
        self.assertIn("conv2d on the benchmark shapes (lenet_conv1 N64 C1 H28 W28 K6 R5 S5 "
                      "stride 1,1 pad 2,2)", self.md)


def train_row(variant, model, images_per_second):
    """train_step/<variant>/<model>: one step of 64 images at `images_per_second`."""
    return [aggregate(f"train_step/{variant}/{model}/real_time", "median",
                      64 / images_per_second, images=images_per_second)]


def training_run():
    """Training rows on a GPU machine: gpu_naive has no lenet row; one simulator row that must stay
    out; gpu_tiled's transfer takes 32 us of its 1.6 ms mlp step (2%); its Adam step is 3 times
    faster than gpu_naive's."""
    rows = cpu_benchmarks()
    for variant, mlp, lenet in (("cpu_naive", 500, 100), ("cpu_eigen_omp", 5000, 1000),
                                ("gpu_naive", 20000, None), ("gpu_tiled", 40000, 30000)):
        rows += train_row(variant, "mlp", mlp)
        if lenet:
            rows += train_row(variant, "lenet", lenet)
    rows += train_row("gpu_tiled_on_simulator", "mlp", 999999)
    moved = 4 * (64 * 784 + 64 + 1)
    for variant, us in (("cpu_eigen_omp", 8), ("gpu_tiled", 32)):
        rows += [aggregate(f"train_transfer/{variant}/64x784/real_time", "median", us * 1e-6,
                           bytes=moved / (us * 1e-6))]
    for variant, us in (("gpu_naive", 60), ("gpu_tiled", 20)):
        rows += [aggregate(f"optimizer_step_adam/{variant}/mlp/real_time", "median", us * 1e-6,
                           bytes=1e9, tensors=6)]
    variants = "cpu_naive=cpu,cpu_eigen_omp=cpu,gpu_naive=gpu,gpu_tiled=gpu,gpu_vendor=gpu"
    return {"context": context(variants, gpu="NVIDIA H200"), "benchmarks": rows}


# PyTorch's mlp: 3000 images/s, the median of its three epochs (listed out of order: the last
# epoch's accuracy is epoch 3's).
TRAIN_PEER = peer_json(trained("mlp", 1, 3000, 0.84), trained("mlp", 3, 4000, 0.86),
                       trained("mlp", 2, 2000, 0.85))


class Training(OneReport):
    make_run = staticmethod(training_run)
    peer = TRAIN_PEER

    def test_images_per_second_per_model_and_variant(self):
        table = self.tables["Training: images/s"]
        self.assertEqual(cell(table, "mlp", "cpu_eigen_omp"), "5000")
        self.assertEqual(cell(table, "lenet", "gpu_tiled"), "30000")
        self.assertEqual(cell(table, "lenet", "gpu_naive"), "—")
        self.assertEqual(column(table, "model"), ["mlp", "lenet"])
        self.assertNotIn("gpu_tiled_on_simulator", table[0])
        self.assertNotIn("gpu_vendor", table[0])  # no train_step rows: no column

    def test_speedups_are_ratios_of_images_per_second(self):
        over_naive = self.tables["Training speedup over cpu_naive"]
        self.assertEqual(cell(over_naive, "mlp", "cpu_eigen_omp"), "10.0×")
        self.assertEqual(cell(over_naive, "lenet", "gpu_tiled"), "300×")
        self.assertNotIn("cpu_naive", over_naive[0])
        over_eigen = self.tables["Training speedup over cpu_eigen_omp"]
        self.assertEqual(cell(over_eigen, "mlp", "gpu_tiled"), "8.00×")

    def test_cpu_eigen_omp_against_the_median_pytorch_epoch(self):
        table = self.tables["Training: cpu_eigen_omp against PyTorch"]
        self.assertEqual(cell(table, "mlp", "PyTorch images/s"), "3000")
        self.assertEqual(cell(table, "mlp", "cpu_eigen_omp / PyTorch"), "1.67×")
        self.assertEqual(cell(table, "mlp", "PyTorch test accuracy (last epoch)"), "86.00%")
        self.assertNotIn("lenet", column(table, "model"))  # PyTorch trained no lenet

    def test_transfer_as_a_share_of_the_step(self):
        table = self.tables["Training: what a step moves across the bus"]
        self.assertEqual(cell(table, "gpu_tiled", "transfer µs"), "32.0")
        self.assertEqual(cell(table, "gpu_tiled", "mlp step ms"), "1.6")
        self.assertEqual(cell(table, "gpu_tiled", "mlp: transfer share"), "2.0%")
        self.assertEqual(cell(table, "gpu_naive", "transfer µs"), "—")

    def test_what_one_launch_for_all_tensors_saves(self):
        table = self.tables["Training: the optimizer step alone"]
        where = {"optimizer": "adam", "model": "mlp"}
        self.assertEqual(cell_where(table, "gpu_naive µs", **where), "60.0")
        self.assertEqual(cell_where(table, "gpu_naive / gpu_tiled", **where), "3.00×")


def counted_site(space, access, requests, units, ideal):
    return {"line": "gpu/tiled/x.cu:1", "space": space, "access": access, "requests": requests,
            "units": units, "ideal_units": ideal, "lanes": 32 * requests, "bytes": 128 * requests,
            "lane_bytes": 128 * requests}


def ladder_counts():
    """What triptych report gathers from triptych profile --json in a sim build, for two versions:
    an uncoalesced one (32 sectors per request for 4 needed) and a tiled one with 2-way conflicts."""
    occupancy = {"gpu": "H200 (sm_90)", "blocks": 2, "warps": 16, "fraction": 0.25,
                 "limit": "registers", "registers": 91}
    naive = {"kernel": "naive", "launch_site": "gpu/naive/gemm.cu:82", "launches": 1, "warps": 8,
             "dram_read_sectors": 24, "dram_write_sectors": 8,
             "barriers": 0, "warp_operations": 0, "block": [32, 8, 1],
             "occupancy": dict(occupancy, fraction=1.0, limit="threads", registers=None),
             "sites": [counted_site("global", "load", 10, 320, 40),
                       counted_site("global", "store", 2, 8, 8)]}
    tiled = {"kernel": "tiled", "launch_site": "gpu/tiled/gemm.cu:90", "launches": 1, "warps": 8,
             "barriers": 6, "warp_operations": 0, "block": [256, 1, 1], "occupancy": occupancy,
             "sites": [counted_site("global", "load", 4, 16, 16),
                       counted_site("shared", "load", 10, 20, 10),
                       counted_site("shared", "store", 4, 4, 4)]}
    # A divergent tree: 10 shared loads of 8 active lanes, 2 of 32 (global).
    divergent = dict(tiled, kernel="sum", barriers=16,
                     sites=[counted_site("global", "load", 2, 8, 8),
                            dict(counted_site("shared", "load", 10, 10, 10), lanes=80)])
    # GEMM at 2 x 2 x 2 in 4 calls: 32 multiply-adds.
    return {"ops": [{"op": "gemm", "shape": "2,2,2",
                     "versions": [{"run_as": "gpu_naive@1", "cases": 4, "kernels": [naive]},
                                  {"run_as": "gpu_tiled@8", "cases": 4, "kernels": [tiled]}]},
                    {"op": "sum", "shape": "4096",
                     "versions": [{"run_as": "gpu_tiled@2", "cases": 5, "kernels": [divergent]},
                                  {"run_as": "gpu_tiled", "cases": 5, "kernels": []}]}]}


class CountedLadder(ReportTest):
    def test_the_ladder_counted_on_the_simulator_has_each_version_s_requests_and_occupancy(self):
        json_path = self.write_json(simulator_run())
        counts = self.write_json(ladder_counts(), "counts.json")
        out = os.path.join(self.tmp.name, "report")
        result = subprocess.run([sys.executable, REPORT_PY, "--json", json_path, "--out", out,
                                 "--counts", counts], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        table = tables(md)["The GEMM ladder counted on the simulator (no GPU time)"]
        self.assertEqual(cell(table, "gpu_naive@1", "global load sectors/request"), "32.0")
        self.assertEqual(cell(table, "gpu_naive@1", "ideal"), "4.00")
        self.assertEqual(cell(table, "gpu_naive@1", "shared load wavefronts/request"), "—")
        self.assertEqual(cell(table, "gpu_naive@1", "occupancy on H200 (sm_90)"), "100% (threads)")
        self.assertEqual(cell(table, "gpu_tiled@8", "shared load wavefronts/request"), "2.00")
        self.assertEqual(cell(table, "gpu_tiled@8", "shared bank conflicts"), "10")
        self.assertEqual(cell(table, "gpu_tiled@8", "barriers (per warp)"), "6")
        self.assertEqual(cell(table, "gpu_tiled@8", "occupancy on H200 (sm_90)"),
                         "25% (registers, 91 registers)")
        # 10 global requests of 128 bytes = 320 floats over 32 multiply-adds; the tiled one
        # loads 128 floats from global memory and 320 from shared memory.
        self.assertEqual(cell(table, "gpu_naive@1", "global floats/FMA"), "10.0")
        self.assertEqual(cell(table, "gpu_naive@1", "shared floats/FMA"), "0")
        self.assertEqual(cell(table, "gpu_tiled@8", "global floats/FMA"), "4.00")
        self.assertEqual(cell(table, "gpu_tiled@8", "shared floats/FMA"), "10.0")
        self.assertEqual(cell(table, "gpu_naive@1", "DRAM sectors (modelled)"), "32")
        self.assertIn("Counted, not measured", md)
        # The other ops, one row per version that launched a kernel: (2 x 32 + 80) lanes over 12
        # requests.
        others = tables(md)["Every GPU kernel counted on the simulator (no GPU time)"]
        divergent = {"op": "sum", "run as": "gpu_tiled@2"}
        self.assertEqual(cell_where(others, "lanes/request", **divergent), "12.0")
        self.assertEqual(cell_where(others, "shared load wavefronts/request", **divergent),
                         "1.00")
        self.assertEqual(cell_where(others, "barriers (per warp)", **divergent), "16")
        self.assertEqual([row["run as"] for row in others], ["gpu_tiled@2"])

    def test_counts_that_are_not_the_simulator_s_are_refused(self):
        json_path = self.write_json(simulator_run())
        counts = self.write_json({"versions": "none"}, "counts.json")
        out = os.path.join(self.tmp.name, "report")
        result = subprocess.run([sys.executable, REPORT_PY, "--json", json_path, "--out", out,
                                 "--counts", counts], capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("is not the simulator's counts that triptych report writes", result.stderr)
        self.assertFalse(os.path.exists(out))


class NewOp(ReportTest):
    """An op the descriptions declare appears in its table, formula included, with no line of
    report.py naming it."""

    def test_a_newly_declared_memory_bound_op_appears_in_the_memory_tables(self):
        doc = simulator_run()
        doc["context"]["triptych_ops"] = ops_json({**OPS, "gelu_forward": ("bytes", "8n", "memory")})
        doc["benchmarks"] += stream_row("gelu_forward", "cpu_eigen_omp", 1048576, 10)  # 50%
        _, md = self.make_report(doc)
        gbs = tables(md)["Memory-bound ops: GB/s"]
        self.assertEqual(cell_where(gbs, "cpu_eigen_omp", op="gelu_forward"), "10.0")
        self.assertEqual(cell_where(gbs, "bytes per call", op="gelu_forward"), "8n")
        percent = tables(md)["Memory-bound ops: % of copy bandwidth"]
        self.assertEqual(cell_where(percent, "cpu_eigen_omp", op="gelu_forward"), "50%")


class BadInput(ReportTest):
    def assert_fails_in_one_line(self, result, expected):
        self.assertNotEqual(result.returncode, 0)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(expected, lines[0])

    def test_a_row_whose_op_no_description_declares_stops_the_report(self):
        doc = simulator_run()
        doc["benchmarks"] += stream_row("gelu_forward", "cpu_naive", 65536, 10)
        result = run_report(self.write_json(doc), os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "op 'gelu_forward' is not declared")

    def test_an_op_declared_for_a_table_the_report_lacks_stops_it(self):
        doc = simulator_run()
        doc["context"]["triptych_ops"] = ops_json({**OPS, "relu_forward": ("bytes", "8n", "misc")})
        result = run_report(self.write_json(doc), os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "table 'misc', which this report does not have")

    def test_a_run_without_declared_ops_is_refused(self):
        doc = simulator_run()
        del doc["context"]["triptych_ops"]
        result = run_report(self.write_json(doc), os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "declares no ops")

    def test_times_and_rates_that_are_no_measurement_are_refused_by_row(self):
        # NaN, infinite, negative or zero times were printed as "nan (nan%)" or "-inf" cells.
        for field, value in (("real_time", float("nan")), ("real_time", float("inf")),
                             ("real_time", -5.0), ("real_time", 0.0),
                             ("bytes", float("nan"))):
            doc = simulator_run()
            median = next(e for e in doc["benchmarks"] if e.get("aggregate_name") == "median"
                          and field in e)
            median[field] = value
            result = run_report(self.write_json(doc), os.path.join(self.tmp.name, "out"))
            self.assert_fails_in_one_line(result, f"benchmark '{median['run_name']}'")

    def test_a_row_with_two_medians_is_refused(self):
        # The second used to replace the first without a word.
        doc = simulator_run()
        median = next(e for e in doc["benchmarks"] if e.get("aggregate_name") == "median")
        doc["benchmarks"].append(dict(median, real_time=median["real_time"] * 100))
        result = run_report(self.write_json(doc), os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, f"'{median['run_name']}' has two medians")

    def test_an_aggregate_without_its_run_name_is_named_as_such(self):
        # Its name ends in "_median": it used to be refused as not <op>/<variant>/<size>.
        doc = simulator_run()
        median = next(e for e in doc["benchmarks"] if e.get("aggregate_name") == "median")
        del median["run_name"]
        result = run_report(self.write_json(doc), os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(
            result, f"benchmark '{median['name']}' is an aggregate without its run_name")

    def test_an_out_under_a_file_is_refused_before_any_work(self):
        blocker = self.write_json("a file", name="file.txt")
        result = subprocess.run([sys.executable, REPORT_PY, "--check-out",
                                 os.path.join(blocker, "report")], capture_output=True, text=True)
        self.assert_fails_in_one_line(result, "file.txt is not a directory")

    def test_missing_json(self):
        result = run_report(os.path.join(self.tmp.name, "nothing.json"),
                            os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "cannot read")

    def test_invalid_json(self):
        result = run_report(self.write_json('{"benchmarks": [ truncated'),
                            os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "not valid JSON")

    def test_json_nested_too_deeply_is_refused_not_a_traceback(self):
        # Python's parser recursed into each '[' and raised RecursionError, a traceback.
        deep = "[" * 100000 + "]" * 100000
        result = run_report(self.write_json(deep), os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "nested too deeply")
        result = run_report(self.write_json(simulator_run()), os.path.join(self.tmp.name, "out"),
                            self.write_json(deep, "peer.json"))
        self.assert_fails_in_one_line(result, "is not the JSON of bench/pytorch_peer.py")

    def test_context_fields_of_the_wrong_kind_are_refused_by_name(self):
        # They went into report.md (and the lessons' tables) as they stood: "x × 2800 MHz".
        for field, value, kind in (("num_cpus", "x", "a whole number"),
                                   ("mhz_per_cpu", True, "a number"),
                                   ("host_name", 7, "a string"),
                                   ("triptych_cpu", ["AMD"], "a string"),
                                   ("load_avg", ["high"], "a list of numbers")):
            doc = simulator_run()
            doc["context"][field] = value
            path = self.write_json(doc)
            result = run_report(path, os.path.join(self.tmp.name, "out"))
            self.assert_fails_in_one_line(
                result, f"{path}: the context's {field} is {json.dumps(value)}, not {kind}")
        peer = peer_json(timed("gemm", "64x64x64", 1e-3))
        peer["context"]["threads"] = "two"
        peer_path = self.write_json(peer, "peer.json")
        result = run_report(self.write_json(simulator_run()), os.path.join(self.tmp.name, "out"),
                            peer_path)
        self.assert_fails_in_one_line(
            result, f"{peer_path}: the context's threads is \"two\", not a whole number")

    def test_json_not_from_triptych_bench(self):
        result = run_report(self.write_json({"context": {}, "benchmarks": []}),
                            os.path.join(self.tmp.name, "out"))
        self.assert_fails_in_one_line(result, "not written by triptych_bench")

    def test_failed_run_leaves_the_previous_report_intact(self):
        out, _ = self.make_report(simulator_run())
        before = snapshot(out)
        result = run_report(self.write_json("not json"), out)
        self.assert_fails_in_one_line(result, "not valid JSON")
        self.assertEqual(snapshot(out), before)
        self.assertEqual(sorted(os.listdir(self.tmp.name)),
                         sorted(["report", "report.json", "run.json"]))  # no temporary left

    def test_a_run_failing_halfway_leaves_the_previous_report_intact(self):
        out, _ = self.make_report(simulator_run())
        before = snapshot(out)
        broken = simulator_run()
        broken["context"]["caches"] = "L1"  # fails after the charts are staged
        result = run_report(self.write_json(broken), out)
        self.assert_fails_in_one_line(result, "unexpected content")
        self.assertEqual(snapshot(out), before)
        self.assertEqual(sorted(os.listdir(self.tmp.name)),
                         sorted(["report", "report.json", "run.json"]))

    def test_a_new_report_replaces_the_previous_one(self):
        out, _ = self.make_report(simulator_run())
        _, md = self.make_report(gpu_run())
        self.assertIn("NVIDIA H200", md)
        self.assertEqual(sorted(n for n in os.listdir(self.tmp.name) if n.startswith(".")), [])

    def test_a_directory_that_is_not_a_report_is_never_replaced(self):
        out = os.path.join(self.tmp.name, "precious")
        os.mkdir(out)
        with open(os.path.join(out, "notes.txt"), "w") as f:
            f.write("keep me")
        result = run_report(self.write_json(simulator_run()), out)
        self.assert_fails_in_one_line(result, "not a triptych report directory")
        self.assertEqual(snapshot(out), {"notes.txt": b"keep me"})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--report-py", required=True)
    args, rest = parser.parse_known_args()
    REPORT_PY = os.path.abspath(args.report_py)
    unittest.main(argv=[sys.argv[0]] + rest)

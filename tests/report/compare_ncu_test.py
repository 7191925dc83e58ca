#!/usr/bin/env python3
"""tools/compare_ncu.py on a real profile and ncu logs written like ncu's: the simulator's counts of
a kernel (`triptych profile --json`, gemm on gpu_tiled@3) against a log that splits them over two
launches, groups thousands with commas and has ncu's own lines and another kernel around the table:
every count equal, exit 0. The kernel's name as NVIDIA's demangler writes it (`<(int)1>`), or bare
as ncu prints it by default: matched all the same. A count 1% off: within the 2% goal, exit 0.
A count of 0 off by one, one 3% off, a metric ncu did not measure, the kernel missing from the
log: exit 1, naming it. A log with no table, or a figure that is not a number: exit 2.

    compare_ncu_test.py --tool tools/compare_ncu.py --triptych build/tools/triptych
"""
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOL = None  # set from the command line
TRIPTYCH = None

COLUMNS = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
           "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
           "Metric Value"]


def ncu_log(launches, preamble=True):
    """ncu's --csv log: launches is a list of (kernel, {metric: value})."""
    text = io.StringIO()
    if preamble:
        text.write("==PROF== Connected to process 4242 (/build/tools/triptych)\n")
        text.write("==PROF== Profiling \"gemm_shared_tiles_kernel\": 0%....50%....100% - 3 passes\n")
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(COLUMNS)
    for launch_id, (kernel, metrics) in enumerate(launches):
        for metric, value in metrics.items():
            writer.writerow([launch_id, 4242, "triptych", "127.0.0.1", kernel, 1, 7,
                             "(32, 32, 1)", "(2, 2, 1)", 0, "9.0", "Command line profiler metrics",
                             metric, "", value if isinstance(value, str) else f"{value:,}"])
    if preamble:
        text.write("==PROF== Disconnected from process 4242\n")
    return text.getvalue()


class CompareNcu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp()
        cls.sim = os.path.join(cls.root, "sim.json")
        done = subprocess.run([TRIPTYCH, "profile", "--op", "gemm", "--backend", "gpu_tiled@3",
                               "--shape", "40,33,17,NN", "--seed", "1", "--json", cls.sim],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        with open(cls.sim) as f:
            cls.kernel = json.load(f)["kernels"][0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def two_launches(self, change=None, name=None):
        """The profile's counts split over two launches, the kernel called name (by default the
        simulator's name for it); change(first, second) may edit the counts."""
        first = {m: v // 2 for m, v in self.kernel["metrics"].items()}
        second = {m: v - first[m] for m, v in self.kernel["metrics"].items()}
        if change:
            change(first, second)
        name = name or self.kernel["kernel"]
        return [(name, first), ("void fill_kernel(float*, long)", {"x": 1}), (name, second)]

    def run_tool(self, log_text, sim=None):
        log = os.path.join(self.root, "ncu.csv")
        with open(log, "w") as f:
            f.write(log_text)
        done = subprocess.run([sys.executable, TOOL, "--sim", sim or self.sim, "--ncu", log],
                              capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr

    def test_the_profile_has_every_counter_the_table_prints(self):
        self.assertEqual(len(self.kernel["metrics"]), 10)
        self.assertGreater(self.kernel["metrics"]["smsp__inst_executed_op_shared_ld.sum"], 1000)

    def test_ncu_is_asked_for_every_counter_the_profile_writes(self):
        # tools/measure-gpu.sh passes `triptych profile --ncu-metrics` to ncu --metrics
        done = subprocess.run([TRIPTYCH, "profile", "--ncu-metrics"], capture_output=True,
                              text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip().split(","), list(self.kernel["metrics"]))

    def test_equal_counts_over_two_launches_pass(self):
        code, output = self.run_tool(ncu_log(self.two_launches()))
        self.assertEqual(code, 0, output)
        self.assertIn("gemm_shared_tiles_kernel<1>", output)
        self.assertEqual(output.count("  equal\n"), 10, output)
        self.assertIn("every count within 2% of ncu's", output)
        self.assertIn("not compared): fill_kernel", output)

    def test_nvidia_spellings_of_the_name_are_matched(self):
        # The simulator's name is GCC's: 'void triptych::gpu_tiled::(anonymous namespace)::
        # gemm_shared_tiles_kernel<1>(long, ...)'. NVIDIA's demangler casts template arguments.
        self.assertIn("gemm_shared_tiles_kernel<1>(", self.kernel["kernel"])
        nvidia = self.kernel["kernel"].replace("<1>(", "<(int)1>(")
        code, output = self.run_tool(ncu_log(self.two_launches(name=nvidia)))
        self.assertEqual(code, 0, output)
        self.assertEqual(output.count("  equal\n"), 10, output)
        self.assertNotIn("matched by name alone", output)
        # ncu's default, --print-kernel-base function: no namespaces, template arguments or
        # parameters. One kernel of that name on each side: matched, and the table says how.
        code, output = self.run_tool(ncu_log(self.two_launches(name="gemm_shared_tiles_kernel")))
        self.assertEqual(code, 0, output)
        self.assertEqual(output.count("  equal\n"), 10, output)
        self.assertIn("(ncu's gemm_shared_tiles_kernel, matched by name alone)", output)
        # Another instantiation of the same template is not this kernel.
        code, output = self.run_tool(ncu_log(self.two_launches(name=nvidia.replace("(int)1",
                                                                                   "(int)0"))))
        self.assertEqual(code, 1, output)
        self.assertIn("not in ncu's log", output)

    def test_names_agree_across_the_two_demanglers(self):
        # The rule itself, on forms the profiled kernels have: casts, bools, unsigned suffixes,
        # enum arguments, '> >'.
        sys.path.insert(0, os.path.dirname(TOOL))
        import compare_ncu
        pairs = [("gemm_vectorized_kernel<false, false>", "gemm_vectorized_kernel<(bool)0,(bool)0>"),
                 ("gemm_warptile_kernel<64, 64, 16, 32, 16, true, false>",
                  "gemm_warptile_kernel<(int)64, (int)64, (int)16, (int)32, (int)16, (bool)1, (bool)0>"),
                 ("k<256u, 3ul>", "k<(unsigned int)256, (unsigned long)3>"),
                 ("pool2d_forward_kernel<(triptych::gpu_tiled::Pool)0, triptych::gpu_tiled::Fixed<3, 2> >",
                  "pool2d_forward_kernel<(triptych::gpu_tiled::Pool)0, triptych::gpu_tiled::Fixed<(int)3, (int)2>>")]
        for gcc, nvidia in pairs:
            self.assertEqual(compare_ncu.same_name_key(gcc), compare_ncu.same_name_key(nvidia))
        self.assertNotEqual(compare_ncu.same_name_key("k<1>"), compare_ncu.same_name_key("k<10>"))
        self.assertNotEqual(compare_ncu.same_name_key("gemm_v3_kernel<1>"),
                            compare_ncu.same_name_key("gemm_v31_kernel<1>"))

    def test_counts_within_two_percent_pass_and_say_so(self):
        metric = "smsp__inst_executed_op_shared_ld.sum"  # 16384 in this profile
        def one_percent(first, second):
            second[metric] += self.kernel["metrics"][metric] // 100
        code, output = self.run_tool(ncu_log(self.two_launches(one_percent)))
        self.assertEqual(code, 0, output)
        line = next(l for l in output.splitlines() if metric in l)
        self.assertIn("within 2% (-1.0%)", line)
        def three_percent(first, second):
            second[metric] += 3 * self.kernel["metrics"][metric] // 100
        code, output = self.run_tool(ncu_log(self.two_launches(three_percent)))
        self.assertEqual(code, 1, output)
        line = next(l for l in output.splitlines() if metric in l)
        self.assertIn("DIFFERS (-2.9%)", line)
        self.assertIn("1 counts differ by more than 2%", output)

    def test_uneven_requests_are_named_with_their_lines(self):
        code, output = self.run_tool(ncu_log(self.two_launches()))
        self.assertNotIn("uneven requests", output)  # this profile has none
        with open(self.sim) as f:
            profile = json.load(f)
        profile["kernels"][0]["sites"][0]["uneven_requests"] = 7
        uneven_sim = os.path.join(self.root, "uneven.json")
        with open(uneven_sim, "w") as f:
            json.dump(profile, f)
        code, output = self.run_tool(ncu_log(self.two_launches()), sim=uneven_sim)
        self.assertEqual(code, 0, output)  # a note, not a difference
        line = profile["kernels"][0]["sites"][0]["line"]
        self.assertIn(f"uneven requests, which ncu may count differently: 7 at {line}", output)

    def test_one_count_off_by_one_fails_naming_it(self):
        def conflict(first, second):
            second["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] += 1
        code, output = self.run_tool(ncu_log(self.two_launches(conflict)))
        self.assertEqual(code, 1, output)
        line = next(l for l in output.splitlines() if "bank_conflicts_pipe_lsu_mem_shared_op_ld" in l)
        self.assertIn("DIFFERS", line)
        self.assertIn("DIFFERS (-100.0%)", line)  # ncu counts a conflict, the simulator none
        self.assertIn("1 counts differ by more than 2%", output)

    def test_a_metric_ncu_did_not_measure_fails(self):
        def drop(first, second):
            for launch in (first, second):
                del launch["smsp__inst_executed_op_global_st.sum"]
        code, output = self.run_tool(ncu_log(self.two_launches(drop)))
        self.assertEqual(code, 1, output)
        self.assertIn("MISSING", output)

    def test_a_kernel_missing_from_the_log_fails(self):
        code, output = self.run_tool(ncu_log([("void other_kernel(int)", {"x": 1})]))
        self.assertEqual(code, 1, output)
        self.assertIn("not in ncu's log (it has: other_kernel)", output)

    def test_unreadable_logs_are_refused(self):
        code, output = self.run_tool("the program ran, but ncu wrote nothing\n")
        self.assertEqual(code, 2, output)
        self.assertIn("no ncu CSV table", output)
        def not_a_number(first, second):
            first["smsp__inst_executed_op_shared_ld.sum"] = "n/a"
        code, output = self.run_tool(ncu_log(self.two_launches(not_a_number)))
        self.assertEqual(code, 2, output)
        self.assertIn("not a number: 'n/a'", output)
        # NaN and infinities were a traceback.
        for value in ("nan", "inf", "1e400"):
            def non_finite(first, second):
                first["smsp__inst_executed_op_shared_ld.sum"] = value
            code, output = self.run_tool(ncu_log(self.two_launches(non_finite)))
            self.assertEqual(code, 2, output)
            self.assertIn(f"not a number: '{value}'", output)
            self.assertNotIn("Traceback", output)
        # A negative count was compared as if it were one.
        def negative(first, second):
            first["smsp__inst_executed_op_shared_ld.sum"] = "-5"
        code, output = self.run_tool(ncu_log(self.two_launches(negative)))
        self.assertEqual(code, 2, output)
        self.assertIn("a negative value, '-5'", output)

    def test_inputs_that_were_tracebacks_are_refused(self):
        # JSON nested deeper than Python's parser recurses, a count past 64 bits (a float overflow
        # when compared), and a CSV field longer than the csv module's limit.
        deep = os.path.join(self.root, "deep.json")
        with open(deep, "w") as f:
            f.write("[" * 100000 + "]" * 100000)
        code, output = self.run_tool(ncu_log(self.two_launches()), sim=deep)
        self.assertEqual(code, 2, output)
        self.assertIn("nested too deeply", output)
        with open(self.sim) as f:
            profile = json.load(f)
        profile["kernels"][0]["metrics"]["smsp__inst_executed_op_shared_ld.sum"] = 10**400
        huge = os.path.join(self.root, "huge.json")
        with open(huge, "w") as f:
            json.dump(profile, f)
        code, output = self.run_tool(ncu_log(self.two_launches()), sim=huge)
        self.assertEqual(code, 2, output)
        self.assertIn("is not a whole count", output)
        long_name = ncu_log([("k" * 200000, {"x": 1})])
        code, output = self.run_tool(long_name)
        self.assertEqual(code, 2, output)
        self.assertIn("not an ncu CSV table", output)
        self.assertNotIn("Traceback", output)

    def test_a_profile_of_the_wrong_form_is_refused(self):
        # A fractional count was truncated (148.7 compared equal to ncu's 148); a kernel name that
        # is not a string, or metrics that are not an object, were a traceback.
        with open(self.sim) as f:
            good = json.load(f)
        metric = "smsp__inst_executed_op_shared_ld.sum"
        edits = [(lambda k: k["metrics"].__setitem__(metric, k["metrics"][metric] + 0.7),
                  "is not a whole count"),
                 (lambda k: k.__setitem__("kernel", 5), "not a `triptych profile --json` file"),
                 (lambda k: k.__setitem__("metrics", [1, 2]), "not a `triptych profile --json`"),
                 # A kernel without metrics read as "the profile has no kernels"; true as 1.
                 (lambda k: k.__setitem__("metrics", {}), "has no metrics"),
                 (lambda k: k["metrics"].__setitem__(metric, True), "is not a whole count")]
        for edit, why in edits:
            profile = json.loads(json.dumps(good))
            edit(profile["kernels"][0])
            bad_sim = os.path.join(self.root, "bad.json")
            with open(bad_sim, "w") as f:
                json.dump(profile, f)
            code, output = self.run_tool(ncu_log(self.two_launches()), sim=bad_sim)
            self.assertEqual(code, 2, output)
            self.assertIn(why, output)
            self.assertNotIn("Traceback", output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--triptych", required=True)
    args, rest = parser.parse_known_args()
    TOOL = os.path.abspath(args.tool)
    TRIPTYCH = os.path.abspath(args.triptych)
    unittest.main(argv=[sys.argv[0], *rest])

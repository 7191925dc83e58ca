// `triptych profile`: runs one op on one GPU variant in the simulator with the access recorder on
// (gpu/runtime/sim/recorder.hpp) and prints, per kernel, what Nsight Compute would count: global
// requests and sectors, shared-memory wavefronts and bank conflicts, lanes per request, barriers,
// warp operations and atomics, each under its Nsight Compute metric name. --lines prints them per
// source line, --json for tools.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "check/crosscheck.hpp"
#include "common/errors.hpp"
#include "common/json.hpp"
#include "common/random.hpp"
#include "common/registry.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/process.hpp"
#include "triptych_config.hpp"

#if TRIPTYCH_GPU_SIM
#include "gpu/runtime/sim/occupancy.hpp"
#include "gpu/runtime/sim/recorder.hpp"
#elif TRIPTYCH_GPU_CUDA
#include "gpu/runtime/launch_log.hpp"
#endif

namespace triptych::tools {
namespace {

void print_help() {
    std::puts(
        "usage: triptych profile --op NAME [--backend V] [--version N] [--shape SIZES] [--lines]\n"
        "                        [--gpu h200|a100] [--json FILE] [--seed S]\n"
        "       triptych profile --ncu-metrics\n"
        "\n"
        "Runs one op on a GPU variant in the simulator, recording every global and shared memory\n"
        "access of every CUDA thread, and prints per kernel what Nsight Compute would count for\n"
        "the same launch: requests, 32-byte sectors and their ideal (coalescing), shared-memory\n"
        "wavefronts and bank conflicts, lanes per request, barriers, warp operations, atomics.\n"
        "The counts follow from the addresses each warp touches; no time is measured. Also\n"
        "modelled, and labelled so: the DRAM sectors of an L2 that starts empty at each launch.\n"
        "\n"
        "  --op NAME       the op (triptych check --help lists them)\n"
        "  --backend V     gpu_naive or gpu_tiled (default), or one version, e.g. gpu_tiled@3\n"
        "  --version N     the same as --backend <variant>@N\n"
        "  --shape SIZES   the op's shape (default: one of its check's shapes that fills\n"
        "                  whole warps and several blocks; the first line says which)\n"
        "  --lines         also print the counts of each source line that accesses memory;\n"
        "                  ~ marks the lines whose counts may be approximate (it says why)\n"
        "  --gpu NAME      the GPU whose theoretical occupancy is computed: h200 (default),\n"
        "                  a100; registers per thread come from nvcc's report of the nvcc\n"
        "                  compile check\n"
        "  --json FILE     also write every launch's counts as JSON\n"
        "  --seed S        the inputs' seed\n"
        "  --ncu-metrics   print the Nsight Compute names of the counters above, comma-separated,\n"
        "                  for `ncu --metrics` (every build)\n"
        "\n"
        "In a cuda build it runs the op on the GPU instead and prints each kernel's launches with\n"
        "the occupancy the CUDA occupancy API computes for them (registers and shared memory as\n"
        "compiled for that GPU), and the ncu command that measures the counters above.");
}

// The Nsight Compute metrics behind the table: the cuda build's advice, --ncu-metrics (which
// tools/measure-gpu.sh passes to ncu) and, in the same order, counted_metrics' names (a test in
// tests/report/compare_ncu_test.py holds the two equal).
const char* ncu_metrics =
    "smsp__inst_executed_op_global_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
    "smsp__inst_executed_op_global_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,"
    "smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,"
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,"
    "smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,"
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";

#if TRIPTYCH_GPU_SIM

using sim::AccessCounts;
using sim::LaunchProfile;
using sim::Space;

// One kernel at one launch site, summed over its launches.
struct KernelRow {
    LaunchProfile sum;
    int launches = 0;
};

std::vector<KernelRow> by_kernel(const std::vector<LaunchProfile>& launches) {
    std::vector<KernelRow> rows;
    for (const LaunchProfile& p : launches) {
        auto it = std::find_if(rows.begin(), rows.end(), [&](const KernelRow& r) {
            return r.sum.kernel == p.kernel && r.sum.launch_site == p.launch_site;
        });
        if (it == rows.end()) {
            rows.push_back({p, 1});
            continue;
        }
        it->launches += 1;
        it->sum.warps += p.warps;
        it->sum.barriers += p.barriers;
        it->sum.warp_operations += p.warp_operations;
        it->sum.dram_read_sectors += p.dram_read_sectors;  // each launch with an empty L2
        it->sum.dram_write_sectors += p.dram_write_sectors;
        for (const sim::SiteCounts& s : p.sites) {
            auto same = std::find_if(it->sum.sites.begin(), it->sum.sites.end(), [&](auto& t) {
                return t.site == s.site && t.space == s.space && t.store == s.store &&
                       t.atomic == s.atomic;
            });
            if (same == it->sum.sites.end())
                it->sum.sites.push_back(s);
            else
                same->counts += s.counts;
        }
    }
    return rows;
}

// "gemm_v3_kernel<32>" from "void triptych::gpu::tiled::gemm_v3_kernel<32>(int, int, ...)".
std::string short_name(const std::string& function) {
    std::string name = function;
    const std::string anonymous = "(anonymous namespace)::";
    for (std::size_t at; (at = name.find(anonymous)) != std::string::npos;)
        name.erase(at, anonymous.size());
    int depth = 0;  // strip the parameter list: the last '(' at template depth 0
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '<') ++depth;
        if (name[i] == '>') --depth;
        if (name[i] == '(' && depth == 0 && i > 0) {
            name.erase(i);
            break;
        }
    }
    depth = 0;
    std::size_t start = 0;  // drop the return type and the namespaces, outside template arguments
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '<') ++depth;
        if (name[i] == '>') --depth;
        if (depth == 0 &&
            (name[i] == ' ' || (name[i] == ':' && i + 1 < name.size() && name[i + 1] == ':')))
            start = name[i] == ' ' ? i + 1 : i + 2;
    }
    return name.substr(start);
}

std::string per(std::uint64_t a, std::uint64_t b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", b == 0 ? 0.0 : double(a) / double(b));
    return text;
}

void metric(const std::string& name, std::uint64_t value, const std::string& words) {
    std::printf("  %-58s %12llu  %s\n", name.c_str(), (unsigned long long)value, words.c_str());
}

// The counts Nsight Compute measures under these names (ncu_metrics), with what they mean here.
struct CountedMetric {
    std::string name;
    std::uint64_t value;
    std::string words;
};

std::vector<CountedMetric> counted_metrics(const LaunchProfile& p) {
    std::vector<CountedMetric> metrics;
    // Nsight Compute names loads "ld" and stores "st" in every metric.
    for (const bool store : {false, true}) {
        const std::string ld_st = store ? "st" : "ld", word = store ? "store" : "load";
        const AccessCounts g = total(p, Space::global, store);
        metrics.push_back(
            {"smsp__inst_executed_op_global_" + ld_st + ".sum", g.requests,
             "global " + word + " requests, " + per(g.lanes, g.requests) + " lanes each"});
        metrics.push_back({"l1tex__t_sectors_pipe_lsu_mem_global_op_" + ld_st + ".sum", g.units,
                           "global " + word + " sectors: " + per(g.units, g.requests) +
                               " per request, ideal " + per(g.ideal_units, g.requests) + " (" +
                               per(100 * g.ideal_units, g.units) +
                               "% of the sectors fetched are needed)"});
    }
    for (const bool store : {false, true}) {
        const std::string ld_st = store ? "st" : "ld", word = store ? "store" : "load";
        const AccessCounts s = total(p, Space::shared, store);
        metrics.push_back(
            {"smsp__inst_executed_op_shared_" + ld_st + ".sum", s.requests,
             "shared " + word + " requests, " + per(s.lanes, s.requests) + " lanes each"});
        metrics.push_back(
            {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_" + ld_st + ".sum", s.units,
             "shared " + word + " wavefronts, " + per(s.units, s.requests) + " per request"});
        metrics.push_back({"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_" + ld_st + ".sum",
                           s.units - s.ideal_units,
                           "shared " + word + " bank conflicts (wavefronts beyond one per phase)"});
    }
    return metrics;
}

// Modelled, not counted (recorder.hpp): the DRAM sectors of an L2 that starts empty at each launch.
void print_modelled(const LaunchProfile& p) {
    metric("dram__sectors_read.sum (modelled)", p.dram_read_sectors,
           "distinct global sectors loaded: DRAM reads if the L2 starts empty and holds them");
    metric("dram__sectors_write.sum (modelled)", p.dram_write_sectors,
           "distinct global sectors stored");
}

// The launch's theoretical occupancy on `gpu`, with what nvcc reported for the kernel (if any).
struct KernelOccupancy {
    std::optional<sim::KernelResources> resources;
    sim::Occupancy occupancy;
};
KernelOccupancy occupancy_of(const LaunchProfile& p, const sim::GpuLimits& gpu) {
    KernelOccupancy k;
    k.resources = sim::kernel_resources(p.kernel, gpu.arch);
    const int threads = int(p.block[0] * p.block[1] * p.block[2]);
    k.occupancy = sim::theoretical_occupancy(gpu, threads, p.dynamic_shared_bytes,
                                             k.resources.value_or(sim::KernelResources{}));
    return k;
}

void print_occupancy(const LaunchProfile& p, const sim::GpuLimits& gpu) {
    const KernelOccupancy k = occupancy_of(p, gpu);
    const std::optional<sim::KernelResources>& found = k.resources;
    const sim::KernelResources kernel = found.value_or(sim::KernelResources{});
    const int threads = int(p.block[0] * p.block[1] * p.block[2]);
    const sim::Occupancy& o = k.occupancy;
    std::printf(
        "  theoretical occupancy on %s: %d block%s of %d warps per SM = %d of %d warps "
        "(%.1f%%), limited by %s\n",
        gpu.name.c_str(), o.blocks, o.blocks == 1 ? "" : "s", (threads + 31) / 32, o.warps,
        gpu.warps_per_sm(), 100 * o.fraction, o.limit.c_str());
    if (found)
        std::printf(
            "    (nvcc for %s: %d registers per thread, %zu bytes of static shared memory, "
            "%zu bytes of stack)\n",
            gpu.arch.c_str(), kernel.registers, kernel.static_shared, kernel.stack_bytes);
    else
        std::printf(
            "    (registers and static shared memory unknown: no nvcc report names this "
            "kernel for %s; the nvcc compile check of a build with nvcc makes them)\n",
            gpu.arch.c_str());
}

void print_kernel(const KernelRow& row, const sim::GpuLimits& gpu) {
    const LaunchProfile& p = row.sum;
    std::printf(
        "\n%s  (launched at %s, %d launch%s; last grid (%u,%u,%u), block (%u,%u,%u), "
        "%zu bytes of dynamic shared memory)\n",
        short_name(p.kernel).c_str(), p.launch_site.c_str(), row.launches,
        row.launches == 1 ? "" : "es", p.grid[0], p.grid[1], p.grid[2], p.block[0], p.block[1],
        p.block[2], p.dynamic_shared_bytes);
    for (const CountedMetric& m : counted_metrics(p)) metric(m.name, m.value, m.words);
    const AccessCounts ga = total(p, Space::global, true, true);
    const AccessCounts sa = total(p, Space::shared, true, true);
    metric("atomics (global)", ga.requests,
           "warp-level atomic requests on global memory, " + std::to_string(ga.lanes) +
               " lane operations");
    metric("atomics (shared)", sa.requests,
           "warp-level atomic requests on shared memory, " + std::to_string(sa.lanes) +
               " lane operations");
    metric("barriers", p.barriers, "__syncthreads() executed, counted per warp");
    metric("warp operations", p.warp_operations, "shuffles, votes and __syncwarp(), per warp");
    metric("warps", p.warps, "warps launched");
    print_modelled(p);
    print_occupancy(p, gpu);
}

void print_lines(const KernelRow& row) {
    std::vector<std::uintptr_t> sites;
    for (const sim::SiteCounts& s : row.sum.sites) sites.push_back(s.site);
    const std::vector<sim::SourceLine> lines = sim::source_lines(sites);
    // Sites of one line (an unrolled loop has several) are summed.
    std::map<std::tuple<std::string, int, bool, bool>, AccessCounts> per_line;
    for (std::size_t i = 0; i < sites.size(); ++i) {
        const sim::SiteCounts& s = row.sum.sites[i];
        per_line[{lines[i].file_line, int(s.space), s.store, s.atomic}] += s.counts;
    }
    std::printf("\n  %-44s %-14s %10s %9s %9s %8s\n", "line", "access", "requests", "units/req",
                "ideal/req", "lanes");
    bool uneven = false;
    for (const auto& [key, c] : per_line) {
        const auto& [file_line, space, store, atomic] = key;
        const std::string access =
            std::string(space == int(Space::shared) ? "shared" : "global") + (atomic  ? " atomic"
                                                                              : store ? " store"
                                                                                      : " load");
        std::printf("  %-44s %-14s %10llu %9s %9s %8s%s\n", file_line.c_str(), access.c_str(),
                    (unsigned long long)c.requests, per(c.units, c.requests).c_str(),
                    per(c.ideal_units, c.requests).c_str(), per(c.lanes, c.requests).c_str(),
                    c.uneven_requests ? "  ~" : "");
        uneven = uneven || c.uneven_requests;
    }
    std::puts("  (units: 32-byte sectors for global memory, wavefronts for shared memory)");
    if (uneven)
        std::puts(
            "  ~ the lanes of a warp ran this line different numbers of times between two\n"
            "    barriers, and the simulator groups each lane's k-th run into one request. Exact\n"
            "    where some lanes only stopped early (the last round of a grid-stride loop);\n"
            "    approximate where some skipped iterations in between (`continue` in a loop): a\n"
            "    GPU issues one request per iteration, so ncu counts at least as many requests,\n"
            "    usually with fewer sectors each.");
}

// `cases`: how many cases of the op's check ran (for GEMM, one call each), so that a reader can
// put the counts per FMA; `nvcc`: the version whose ptxas reported the registers the occupancy
// rests on (another version may use other registers), null where no nvcc checks the kernels.
void write_json(const std::filesystem::path& target, const std::vector<KernelRow>& rows,
                const sim::GpuLimits& gpu, std::size_t cases) {
    const std::string nvcc = TRIPTYCH_NVCC_VERSION;
    std::string text = "{\"cases\": " + std::to_string(cases) +
                       ", \"nvcc\": " + (nvcc.empty() ? "null" : json_string(nvcc)) +
                       ", \"kernels\": [";
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const LaunchProfile& p = rows[k].sum;
        const KernelOccupancy o = occupancy_of(p, gpu);
        std::vector<std::uintptr_t> sites;
        for (const sim::SiteCounts& s : p.sites) sites.push_back(s.site);
        const std::vector<sim::SourceLine> lines = sim::source_lines(sites);
        text +=
            std::string(k ? ", " : "") + "{\"kernel\": " + json_string(p.kernel) +
            ", \"launch_site\": " + json_string(p.launch_site) +
            ", \"launches\": " + std::to_string(rows[k].launches) +
            ", \"warps\": " + std::to_string(p.warps) +
            ", \"barriers\": " + std::to_string(p.barriers) +
            ", \"warp_operations\": " + std::to_string(p.warp_operations) +
            ", \"dram_read_sectors\": " + std::to_string(p.dram_read_sectors) +
            ", \"dram_write_sectors\": " + std::to_string(p.dram_write_sectors) + ", \"block\": [" +
            std::to_string(p.block[0]) + ", " + std::to_string(p.block[1]) + ", " +
            std::to_string(p.block[2]) + "], \"occupancy\": {\"gpu\": " + json_string(gpu.name) +
            ", \"blocks\": " + std::to_string(o.occupancy.blocks) +
            ", \"warps\": " + std::to_string(o.occupancy.warps) +
            ", \"fraction\": " + std::to_string(o.occupancy.fraction) +
            ", \"limit\": " + json_string(o.occupancy.limit) +
            ", \"registers\": " + (o.resources ? std::to_string(o.resources->registers) : "null") +
            "}, \"metrics\": {";
        const std::vector<CountedMetric> metrics = counted_metrics(p);
        for (std::size_t i = 0; i < metrics.size(); ++i)
            text += std::string(i ? ", " : "") + json_string(metrics[i].name) + ": " +
                    std::to_string(metrics[i].value);
        text += "}, \"sites\": [";
        for (std::size_t i = 0; i < p.sites.size(); ++i) {
            const sim::SiteCounts& s = p.sites[i];
            text += std::string(i ? ", " : "") + "{\"line\": " + json_string(lines[i].file_line) +
                    ", \"space\": \"" + (s.space == Space::shared ? "shared" : "global") +
                    "\", \"access\": \"" +
                    (s.atomic  ? "atomic"
                     : s.store ? "store"
                               : "load") +
                    "\", \"requests\": " + std::to_string(s.counts.requests) +
                    ", \"units\": " + std::to_string(s.counts.units) +
                    ", \"ideal_units\": " + std::to_string(s.counts.ideal_units) +
                    ", \"lanes\": " + std::to_string(s.counts.lanes) +
                    ", \"bytes\": " + std::to_string(s.counts.bytes) +
                    ", \"lane_bytes\": " + std::to_string(s.counts.lane_bytes) +
                    ", \"uneven_requests\": " + std::to_string(s.counts.uneven_requests) + "}";
        }
        text += "]}";
    }
    text += "]}\n";
    // Written whole under a temporary name, then renamed: never left half-written.
    TemporaryFile file(target.parent_path(), target.filename().string(), ".json");
    FILE* out = std::fopen(file.path().c_str(), "w");
    if (out == nullptr) throw DataError("cannot write " + target.string());
    const bool written = std::fputs(text.c_str(), out) >= 0;
    if (std::fclose(out) != 0 || !written) throw DataError("cannot write " + target.string());
    file.keep_as(target);
}

#endif

// What to profile: the op, the backend (by its name as given), the shape and the inputs' seed.
struct Request {
    const check::OpDescription* op = nullptr;
    std::string name;
    const Backend* backend = nullptr;
    std::string shape;
    std::uint64_t seed = 0;
};

Request read_request(const Options& options) {
    if (!options.has("--op"))
        throw InvalidArgument("profile needs --op (see triptych profile --help)");
    Request r;
    r.op = &check::op(options.get("--op"));
    // A malformed seed is refused first, on every machine: before a backend that this one cannot
    // run (a cuda build without a GPU) would be.
    r.seed = options.has("--seed") ? parse_seed("--seed", options.get("--seed")) : fresh_seed();
    r.name = options.get("--backend", "gpu_tiled");
    if (options.has("--version")) {
        if (r.name.find('@') != std::string::npos)
            throw InvalidArgument("--version and a version in --backend (" + r.name +
                                  ") cannot both be given");
        r.name += "@" + options.get("--version");
    }
    r.backend = &backend(r.name);  // throws for an unknown variant or version
    if (r.backend->variant() != "gpu_naive" && r.backend->variant() != "gpu_tiled")
        throw InvalidArgument(
            "profile counts the GPU kernels of our own panels: --backend must be gpu_naive or "
            "gpu_tiled (or a version of one), not " +
            r.name);
    check::require_version_of(*r.op, *r.backend);
    r.shape = options.get("--shape", r.op->profile_shape);
    return r;
}

// Runs the request's check; returns whether every case passed, and how many ran.
bool run_cases(const Request& r, std::size_t& cases) {
    bool passed = true;
    cases = 0;
    for (const check::CaseResult& result : r.op->run(*r.backend, r.shape, r.seed))
        if (result.not_run.empty()) {
            passed = passed && result.comparison.passed;
            ++cases;
        }
    return passed;
}

#if TRIPTYCH_GPU_CUDA

// A cuda build: each kernel's launches with the occupancy the CUDA runtime computes for them,
// then the Nsight Compute command that measures the simulator's counters.
int profile_on_gpu(const Options& options) {
    const Request r = read_request(options);
    gpu::start_launch_log();
    std::size_t cases = 0;
    bool passed = false;
    try {
        passed = run_cases(r, cases);
    } catch (...) {
        gpu::stop_launch_log();
        throw;
    }
    const std::vector<gpu::LaunchOccupancy> launches = gpu::stop_launch_log();
    std::printf("%s on %s, shape %s (seed %llu), on %s: %zu kernel launch%s%s\n",
                r.op->name.c_str(), r.name.c_str(), r.shape.c_str(), (unsigned long long)r.seed,
                r.backend->device().c_str(), launches.size(), launches.size() == 1 ? "" : "es",
                passed ? "" : " (THE RESULT FAILED ITS CHECK)");
    for (const gpu::LaunchOccupancy& l : launches) {
        std::printf(
            "\n%s\n  launched at %s, %d time%s: grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of "
            "dynamic shared memory\n  %d registers per thread, %zu bytes of static shared memory\n"
            "  occupancy (the CUDA occupancy API): %d block%s of %d warps per SM = %d of %d warps "
            "(%.0f%%)\n",
            l.kernel.c_str(), l.site.c_str(), l.launches, l.launches == 1 ? "" : "s", l.grid[0],
            l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.dynamic_shared, l.registers,
            l.static_shared, l.blocks_per_sm, l.blocks_per_sm == 1 ? "" : "s",
            l.blocks_per_sm > 0 ? l.warps_per_sm / l.blocks_per_sm : 0, l.warps_per_sm,
            l.max_warps_per_sm, 100.0 * l.warps_per_sm / std::max(l.max_warps_per_sm, 1));
    }
    std::printf(
        "\nThe memory counters `triptych profile` counts in a sim build, measured on this GPU:\n\n"
        "  ncu --metrics %s \\\n      triptych check --op %s --backend %s\n",
        ncu_metrics, r.op->name.c_str(), r.name.c_str());
    return passed ? 0 : 1;
}

#endif

}  // namespace

// Nsight Compute has no one metric for the rows print_kernel names in plain words only; what it
// counts instead, per warp-level instruction (its metrics reference and nvprof-to-ncu table).
void print_ncu_names_of_plain_rows() {
    std::puts(
        "\nThe rows in plain words, as Nsight Compute counts them (per warp-level instruction):\n"
        "  atomics (global)   smsp__inst_executed_op_global_red.sum (an atomic whose result is\n"
        "                     unused compiles to RED) + "
        "smsp__inst_executed_op_generic_atom_dot_alu.sum\n"
        "                     + smsp__inst_executed_op_generic_atom_dot_cas.sum (atomicCAS)\n"
        "  atomics (shared)   smsp__inst_executed_op_shared_atom.sum\n"
        "                     + smsp__inst_executed_op_shared_atom_dot_alu.sum\n"
        "                     + smsp__inst_executed_op_shared_atom_dot_cas.sum (a "
        "compare-and-swap\n"
        "                     loop, where nvcc makes one, counts each try)\n"
        "  barriers, warp operations: no metric of their own; ncu's Instruction Statistics\n"
        "                     section (sass__inst_executed_per_opcode) counts the BAR, SHFL, VOTE\n"
        "                     and WARPSYNC instructions, and nvcc may drop a __syncwarp() it can\n"
        "                     prove needless");
}

int profile_main(const Args& args) {
    Options options("profile", args,
                    {"--op", "--backend", "--version", "--shape", "--json", "--seed", "--gpu"},
                    {"--help", "--lines", "--ncu-metrics"});
    if (options.has("--help")) {
        print_help();
        return 0;
    }
    if (options.has("--ncu-metrics")) {
        for (const char* other :
             {"--op", "--backend", "--version", "--shape", "--json", "--seed", "--gpu", "--lines"})
            if (options.has(other))
                throw InvalidArgument(std::string("--ncu-metrics prints the metric names alone; ") +
                                      other + " goes with a profile");
        std::puts(ncu_metrics);
        return 0;
    }
#if TRIPTYCH_GPU_CUDA
    return profile_on_gpu(options);
#elif !TRIPTYCH_GPU_SIM
    if (options.has("--seed")) parse_seed("--seed", options.get("--seed"));  // refused everywhere
    std::printf(
        "triptych profile counts in the CUDA simulator or measures on a GPU, and this is a '%s'\n"
        "build, with neither. On a GPU, Nsight Compute measures the same counters:\n\n"
        "  ncu --metrics %s \\\n      triptych check --op gemm --backend gpu_tiled@3\n",
        TRIPTYCH_GPU_FLAVOR, ncu_metrics);
    return 2;
#else
    const Request r = read_request(options);
    const sim::GpuLimits& gpu = sim::gpu_limits(options.get("--gpu", "h200"));
    const std::filesystem::path json =  // refused before the run when it cannot be written
        options.has("--json") ? output_file("--json", options.get("--json"))
                              : std::filesystem::path();
    sim::RecordMode mode = sim::record_mode();
    mode.profile = true;
    sim::ensure_recorder(mode);  // in a plain program: runs its instrumented copy instead
    sim::take_profiles();
    std::size_t cases = 0;
    const bool passed = run_cases(r, cases);
    const std::vector<KernelRow> rows = by_kernel(sim::take_profiles());
    std::printf("%s on %s, shape %s (seed %llu): %zu kernel%s, counted by the simulator%s\n",
                r.op->name.c_str(), r.name.c_str(), r.shape.c_str(), (unsigned long long)r.seed,
                rows.size(), rows.size() == 1 ? "" : "s",
                passed ? "" : " (THE RESULT FAILED ITS CHECK)");
    for (const KernelRow& row : rows) {
        print_kernel(row, gpu);
        if (options.has("--lines")) print_lines(row);
    }
    print_ncu_names_of_plain_rows();
    if (!json.empty()) write_json(json, rows, gpu, cases);
    return passed ? 0 : 1;
#endif
}

}  // namespace triptych::tools

// Theoretical occupancy and the kernels' resources (see occupancy.hpp).
#include "gpu/runtime/sim/occupancy.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include "common/errors.hpp"
#include "triptych_config.hpp"

namespace triptych::sim {
namespace {

std::string demangle(const std::string& mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(
        abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 ? std::string(text.get()) : mangled;
}

// nvcc names each file's anonymous namespace after the file ("_GLOBAL__N__3b1c..._gemm_cu"),
// which demangles to "(anonymous namespace)" as g++'s does; spaces differ in nothing else.
std::string comparable(std::string name) {
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    return name;
}

}  // namespace

const GpuLimits& h200() {
    static const GpuLimits limits{"H200 (sm_90)", "sm_90", 2048, 32, 65536, 256, 228 * 1024, 1024};
    return limits;
}

const GpuLimits& a100() {
    static const GpuLimits limits{"A100 (sm_80)", "sm_80", 2048, 32, 65536, 256, 164 * 1024, 1024};
    return limits;
}

const GpuLimits& gpu_limits(const std::string& name) {
    if (name == "h200") return h200();
    if (name == "a100") return a100();
    throw InvalidArgument("unknown GPU '" + name + "' for occupancy; known: h200, a100");
}

Occupancy theoretical_occupancy(const GpuLimits& gpu, int threads_per_block,
                                std::size_t dynamic_shared, const KernelResources& kernel) {
    const int warps_per_block = (threads_per_block + 31) / 32;
    struct Limit {
        int blocks;
        const char* name;
    };
    std::vector<Limit> limits = {{gpu.warps_per_sm() / warps_per_block, "threads"},
                                 {gpu.blocks_per_sm, "blocks"}};
    if (kernel.registers > 0) {
        // Each warp gets registers * 32 rounded up to the allocation unit.
        const int per_warp =
            (kernel.registers * 32 + gpu.register_unit - 1) / gpu.register_unit * gpu.register_unit;
        limits.push_back({gpu.registers_per_sm / per_warp / warps_per_block, "registers"});
    }
    const std::size_t shared = kernel.static_shared + dynamic_shared;
    if (shared > 0)
        limits.push_back(
            {int(gpu.shared_per_sm / (shared + gpu.shared_reserved_per_block)), "shared memory"});
    const Limit binding =
        *std::min_element(limits.begin(), limits.end(),
                          [](const Limit& a, const Limit& b) { return a.blocks < b.blocks; });
    Occupancy o;
    o.blocks = std::max(binding.blocks, 0);
    o.warps = o.blocks * warps_per_block;
    o.fraction = double(o.warps) / gpu.warps_per_sm();
    o.limit = binding.name;
    return o;
}

std::vector<ResourceLine> parse_resource_usage(const std::string& text) {
    // ptxas info    : Compiling entry function '_Z...' for 'sm_90'
    // ptxas info    : Function properties for _Z...
    //     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    // ptxas info    : Used 32 registers, used 1 barriers, 8448 bytes smem, 400 bytes cmem[0]
    static const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)')");
    static const std::regex stack(R"(([0-9]+) bytes stack frame)");
    static const std::regex used(R"(Used ([0-9]+) registers)");
    static const std::regex smem(R"(([0-9]+) bytes smem)");
    std::vector<ResourceLine> lines;
    std::istringstream in(text);
    std::string line;
    ResourceLine* open = nullptr;  // the entry whose "Used" line is still to come
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, entry)) {
            lines.push_back({demangle(m[1]), m[2], {}});
            open = &lines.back();
        } else if (open != nullptr && std::regex_search(line, m, stack)) {
            open->resources.stack_bytes = std::stoul(m[1]);
        } else if (open != nullptr && std::regex_search(line, m, used)) {
            open->resources.registers = std::stoi(m[1]);
            if (std::regex_search(line, m, smem)) open->resources.static_shared = std::stoul(m[1]);
            open = nullptr;
        }
    }
    return lines;
}

std::optional<KernelResources> kernel_resources(const std::string& kernel,
                                                const std::string& arch) {
    static const std::vector<ResourceLine> reports = [] {
        std::vector<ResourceLine> all;
        const std::filesystem::path dir =
            std::filesystem::path(TRIPTYCH_BINARY_DIR) / "kernel_resources";
        std::error_code error;
        for (const auto& file : std::filesystem::directory_iterator(dir, error)) {
            std::ifstream in(file.path());
            std::stringstream text;
            text << in.rdbuf();
            for (ResourceLine& line : parse_resource_usage(text.str()))
                all.push_back(std::move(line));
        }
        return all;
    }();
    const std::string wanted = comparable(kernel);
    for (const ResourceLine& line : reports)
        if (line.arch == arch && comparable(line.kernel) == wanted) return line.resources;
    return std::nullopt;
}

}  // namespace triptych::sim

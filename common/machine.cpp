#include "common/machine.hpp"

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

namespace triptych {

namespace {

// "  AMD EPYC   " -> "AMD EPYC": the words of a /proc/cpuinfo value, one space apart.
std::string words(const std::string& value) {
    std::string out;
    std::size_t i = 0;
    while (i < value.size()) {
        while (i < value.size() && std::isspace(static_cast<unsigned char>(value[i]))) ++i;
        std::size_t end = i;
        while (end < value.size() && !std::isspace(static_cast<unsigned char>(value[end]))) ++end;
        if (end > i) out += (out.empty() ? "" : " ") + value.substr(i, end - i);
        i = end;
    }
    return out;
}

}  // namespace

std::string cpu_model() {
    // The first processor's fields: every core of these machines is the same model.
    std::map<std::string, std::string> fields;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = words(line.substr(0, colon));
        if (key == "model name" || key == "cpu family" || key == "model")
            fields.emplace(key, words(line.substr(colon + 1)));  // the first one is kept
    }
    std::string model = fields.count("model name") ? fields["model name"] : "unknown CPU";
    if (fields.count("cpu family") && fields.count("model"))
        model += " (family " + fields["cpu family"] + ", model " + fields["model"] + ")";
    return model;
}

const char* compiled_vector_isa() {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__)
    return "AVX2";
#elif defined(__AVX__)
    return "AVX";
#elif defined(__SSE2__)
    return "SSE2";
#else
    return "no x86 vectors";
#endif
}

std::string cpu_description() {
    return cpu_model() + ", code compiled for " + compiled_vector_isa();
}

std::int64_t proc_kilobytes(const char* file, const std::string& key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) {  // "MemAvailable:   22817516 kB"
            std::istringstream fields(line.substr(key.size() + 1));
            std::int64_t kilobytes = -1;
            std::string unit;
            return fields >> kilobytes >> unit && unit == "kB" && kilobytes >= 0 ? kilobytes : -1;
        }
    return -1;
}

std::int64_t available_memory() {
    const std::int64_t kilobytes = proc_kilobytes("/proc/meminfo", "MemAvailable");
    return kilobytes < 0 ? -1 : kilobytes * 1024;
}

}  // namespace triptych

#include "common/registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "common/errors.hpp"

namespace triptych {
namespace {

struct Entry {
    int rank;
    BackendFactory factory;
    std::function<bool()> available;
    std::unique_ptr<Backend> instance;
    std::map<int, std::unique_ptr<Backend>> versions;  // "<name>@N", made on first use
};

// A function-local static, so registration from other translation units' static initialisers
// never sees an unconstructed map.
struct Registry {
    std::mutex mutex;
    std::map<std::string, Entry> entries;
};

Registry& registry() {
    static Registry r;
    return r;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

bool register_backend(const std::string& name, int rank, BackendFactory factory,
                      std::function<bool()> available) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.entries[name] = Entry{rank, std::move(factory), std::move(available), nullptr, {}};
    return true;
}

namespace {
std::vector<std::string> ranked_names(bool only_available) {
    Registry& r = registry();
    std::vector<std::pair<int, std::string>> ranked;
    {
        std::lock_guard lock(r.mutex);
        for (auto& [name, entry] : r.entries)
            if (!only_available || entry.available()) ranked.emplace_back(entry.rank, name);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::string> names;
    for (auto& [rank, name] : ranked) names.push_back(name);
    return names;
}
}  // namespace

std::vector<std::string> backend_names() { return ranked_names(true); }

std::vector<std::string> built_backend_names() { return ranked_names(false); }

namespace {

// "gpu_tiled@5" -> {"gpu_tiled", 5}; "gpu_tiled" -> {"gpu_tiled", 0}.
std::pair<std::string, int> split_version(const std::string& name) {
    const std::size_t at = name.find('@');
    if (at == std::string::npos) return {name, 0};
    const std::string number = name.substr(at + 1);
    const bool digits =
        !number.empty() && number.size() <= 4 &&
        std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (at == 0 || !digits || std::stoi(number) < 1)
        throw InvalidArgument("backend '" + name + "': a version is written <variant>@<number>, " +
                              "the number from 1 to 9999 (triptych versions lists them)");
    return {name.substr(0, at), std::stoi(number)};
}

}  // namespace

Backend& backend(const std::string& name) {
    const auto [variant, version] = split_version(name);
    Registry& r = registry();
    bool known = false;
    {
        std::lock_guard lock(r.mutex);
        auto it = r.entries.find(variant);
        known = it != r.entries.end();
        if (known && it->second.available()) {
            Entry& entry = it->second;
            if (!entry.instance) entry.instance = entry.factory();
            if (version == 0) return *entry.instance;
            std::unique_ptr<Backend>& pinned = entry.versions[version];
            if (!pinned) {
                bool exists = false;
                for (Op op : all_ops())
                    for (const KernelVersion& v : kernel_versions(variant, op))
                        exists = exists || v.number == version;
                if (!exists)
                    throw InvalidArgument("backend '" + name + "': " + variant +
                                          " has no version " + std::to_string(version) +
                                          " of any op (triptych versions lists them)");
                pinned = entry.factory();
                pinned->pin_version(version, *entry.instance);
            }
            return *pinned;
        }
    }
    const std::string available = joined(backend_names());
    if (known)
        throw Unsupported("backend " + variant + " cannot run on this machine (no GPU visible); " +
                          "available: " + available);
    throw InvalidArgument("unknown backend '" + variant + "'; available: " + available);
}

}  // namespace triptych

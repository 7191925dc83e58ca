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
    r.entries[name] = Entry{rank, std::move(factory), std::move(available), nullptr};
    return true;
}

std::vector<std::string> backend_names() {
    Registry& r = registry();
    std::vector<std::pair<int, std::string>> ranked;
    {
        std::lock_guard lock(r.mutex);
        for (auto& [name, entry] : r.entries)
            if (entry.available()) ranked.emplace_back(entry.rank, name);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::string> names;
    for (auto& [rank, name] : ranked) names.push_back(name);
    return names;
}

Backend& backend(const std::string& name) {
    Registry& r = registry();
    bool known = false;
    {
        std::lock_guard lock(r.mutex);
        auto it = r.entries.find(name);
        known = it != r.entries.end();
        if (known && it->second.available()) {
            if (!it->second.instance) it->second.instance = it->second.factory();
            return *it->second.instance;
        }
    }
    const std::string available = joined(backend_names());
    if (known)
        throw Unsupported("backend " + name + " cannot run on this machine (no GPU visible); " +
                          "available: " + available);
    throw InvalidArgument("unknown backend '" + name + "'; available: " + available);
}

}  // namespace triptych

// A small command-line option reader shared by the subcommands: `--name value` pairs and flags,
// with an error naming the subcommand for anything unknown or missing its value (an empty value,
// as `--backend ""` gives, is missing too: it would otherwise read as the option's absence; so is
// another option, as in `--backend --shape 4`), and for an option given twice, whose second value
// would otherwise replace the first unseen. A subcommand that takes --help takes -h for it.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/errors.hpp"
#include "tools/commands.hpp"

namespace triptych::tools {

class Options {
public:
    // `valued`: options that take a value; `flags`: options that do not.
    Options(const std::string& command, const Args& args, std::set<std::string> valued,
            std::set<std::string> flags = {}) {
        for (std::size_t i = 0; i < args.size(); ++i) {
            // -h is --help, as `triptych -h` takes it.
            const std::string& arg = args[i] == "-h" && flags.count("--help") > 0 ? help : args[i];
            if ((flags.count(arg) > 0 || valued.count(arg) > 0) && values_.count(arg) > 0)
                throw InvalidArgument("option " + arg + " is given twice (see triptych " + command +
                                      " --help)");
            if (flags.count(arg) > 0) {
                values_[arg] = "";
            } else if (valued.count(arg) > 0) {
                if (i + 1 >= args.size())
                    throw InvalidArgument("option " + arg + " needs a value (see triptych " +
                                          command + " --help)");
                const std::string& value = args[i + 1];
                if (value.empty())
                    throw InvalidArgument("option " + arg + " needs a value, got an empty one");
                if (flags.count(value) > 0 || valued.count(value) > 0)
                    throw InvalidArgument("option " + arg + " needs a value, got the option " +
                                          value);
                values_[arg] = args[++i];
            } else {
                throw InvalidArgument("unknown option '" + arg + "' (see triptych " + command +
                                      " --help)");
            }
        }
    }
    bool has(const std::string& name) const { return values_.count(name) > 0; }
    std::string get(const std::string& name, const std::string& fallback = "") const {
        auto it = values_.find(name);
        return it == values_.end() ? fallback : it->second;
    }

private:
    inline static const std::string help = "--help";
    std::map<std::string, std::string> values_;
};

}  // namespace triptych::tools

// Writing JSON by hand, for the few files triptych writes in it (the benchmarks' op declarations,
// `triptych profile --json`): one helper, a string as a JSON string literal.
#pragma once

#include <string>

namespace triptych {

// `text` between double quotes, with its quotes and backslashes escaped (the texts written are
// names, formulas and file:line, with no control characters).
inline std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

}  // namespace triptych

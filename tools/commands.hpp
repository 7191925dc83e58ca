// The `triptych` subcommands. Each takes the arguments after its name, prints its own --help,
// and returns the process exit status; errors are thrown as triptych exceptions and printed by
// main() as one line on stderr.
#pragma once

#include <string>
#include <vector>

namespace triptych::tools {

using Args = std::vector<std::string>;

int info_main(const Args& args);      // tools/info.cpp
int check_main(const Args& args);     // tools/check.cpp
int bench_main(const Args& args);     // tools/report.cpp
int report_main(const Args& args);    // tools/report.cpp
int train_main(const Args& args);     // tools/train.cpp
int versions_main(const Args& args);  // tools/versions.cpp
int profile_main(const Args& args);   // tools/profile.cpp

}  // namespace triptych::tools

// The memory `triptych` may take: no more than the machine can give it.
#pragma once

namespace triptych::tools {

// Caps this process's data (its heap and private mappings, RLIMIT_DATA) at what it holds now plus
// the memory the machine has available (MemAvailable in /proc/meminfo). Linux hands out memory
// it does not have and then ends a process that touches too much of it with SIGKILL, without a
// word: a `check --shape` too large for the machine ran for a minute and vanished. Under the cap
// the allocation that would not fit fails at once, as std::bad_alloc, which the commands report
// ("out of memory"). Nothing is capped in a sanitizer build (AddressSanitizer maps terabytes of
// shadow memory) nor in a CUDA build (the driver maps memory of its own), or where /proc cannot
// be read.
void cap_memory_at_available();

// This process's cap on its data in bytes (RLIMIT_DATA), or 0 if it has none: what
// `triptych info` shows.
unsigned long long memory_cap();

}  // namespace triptych::tools

// The simulator's streams, events and graphs (the model behind gpu/runtime/stream.hpp in a sim
// build), and its stream-order race check.
//
// How work runs. Every operation runs on the host when it is issued, the kernel's grid through
// run_grid, a copy as a memcpy. That is one of the orders a GPU may choose: it too must finish a
// stream's operations in issue order, and may run two streams' operations in any order unless an
// event or a synchronisation orders them. While a stream is being captured into a graph, its
// operations are recorded instead, and the graph's launch runs them.
//
// How the race check knows what is ordered (vector clocks, as ThreadSanitizer keeps for threads).
// The host and every stream are participants, each with a clock that counts its operations; each
// also keeps, for every other participant, the last of its operations it is known to come after:
//   - an operation issued to stream s comes after the host's past (what the host had waited for
//     when it issued it) and after s's own earlier operations;
//   - Event::record copies s's knowledge into the event; Stream::wait merges an event's into the
//     stream's; the host's synchronize() of an event, a stream or the device merges into the
//     host's.
// Every device buffer (and pinned host buffer) remembers its last write and its last read by each
// participant. An operation that reads a buffer whose last write it is not known to come after,
// or writes one with such a write or read, is a stream-order race: CudaError naming both
// operations, their streams and their file:line, before the second one runs. It is reported
// whatever order the simulator happened to run them in, so a program that is right only by luck
// fails here every time.
//
// The host's writes to pinned memory. An asynchronous copy reads (or writes) pinned host memory
// while the host runs on, so the host must not write such a buffer until it has waited for the
// last operation that used it. The host's stores are not seen one by one; instead a pinned
// buffer keeps, after each operation on it, a hash of its bytes, and checks them again at the
// buffer's next use by an operation and when the host first waits for that operation (a
// synchronize of its event, its stream or the device). Bytes changed by then were changed by the
// host before it waited: CudaError naming the operation and where the change was found. A write
// of the same bytes goes unseen, and so does a read by the host of a buffer an operation is still
// writing (the simulator has already written it).
//
// What an operation touches. A copy or a fill: exactly its buffers. A kernel: every device buffer
// its arguments point into, read through a `const T*` argument and written through a `T*`; the
// pointers inside a struct argument as the struct declares them (its `accesses` member, see
// note_argument in sim.hpp), or, if it declares none, each counted as written, since its
// constness is not known. A whole allocation counts as one buffer.
//
// Graph capture follows CUDA's global mode. While any capture runs, an operation that would wait
// for the device or change its memory map (a blocking copy, a synchronize, device_malloc,
// device_free) is refused with CudaError and spoils the capture, whose end then fails too. A
// stream joins a capture by waiting for an event recorded on a capturing stream (a fork), and
// must be joined back (the capturing stream waits for an event recorded on it after its last
// operation) before the capture ends. A graph's launch is checked as one operation of the stream
// it is launched on, touching every buffer its operations touch.
#pragma once

#include <cstddef>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

namespace triptych::sim::streams {

struct Stream;  // a stream's state; null stands for the legacy default stream
struct Event;
struct Graph;

Stream* create_stream(const std::string& name);
void destroy_stream(Stream* stream);

Event* create_event();
void destroy_event(Event* event);
void record(Event* event, Stream* stream, std::source_location where);
void wait(Stream* stream, const Event* event, std::source_location where);
void synchronize_event(const Event* event, std::source_location where);
// Host seconds from `start`'s record to `end`'s.
double seconds_between(const Event* start, const Event* end, std::source_location where);

void synchronize_stream(Stream* stream, std::source_location where);
void synchronize_device(std::source_location where);

// One buffer an operation uses: the device allocation (or registered pinned host buffer) that
// holds `pointer`. Pointers into other host memory are not tracked.
struct Access {
    const void* pointer;
    bool write;
};

// Issues an operation to `stream`: `what` names it in messages ("kernel", "copy host to device of
// 256 bytes"). It is checked against the unfinished work of other streams, then `run` runs it; on
// a capturing stream it is recorded into the graph instead.
void issue(Stream* stream, const std::string& what, std::vector<Access> accesses,
           std::function<void()> run, std::source_location where);

// CudaError naming `what` and the capture if any stream is being captured: for the calls CUDA
// refuses during a global-mode capture. It spoils every running capture. `where` is the line of
// the call; without it, `what` alone describes the call (a device allocation, which a variant's
// allocate makes for any caller, so that its own line would tell nothing).
void refuse_while_capturing(const std::string& what, std::source_location where);
void refuse_while_capturing(const std::string& what);
// A device buffer is freed: its record of readers and writers goes with it.
void forget_buffer(const void* start);
// Page-locked host buffers, tracked as device buffers are.
void register_pinned(const void* start, std::size_t bytes);
void unregister_pinned(const void* start);

void begin_capture(Stream* stream, std::source_location where);
Graph* end_capture(Stream* stream, std::source_location where);
// Ends a capture and throws its recording away (a capture left by an exception); never throws.
void abandon_capture(Stream* stream) noexcept;
void launch_graph(const Graph* graph, Stream* stream, std::source_location where);
std::size_t graph_operations(const Graph* graph);
void destroy_graph(Graph* graph);

// The trace: one line per operation, record and wait, in the order they were issued, while it is
// on (for lessons and tests; off by default).
struct TraceLine {
    std::string stream;  // its name; "host" for the host's waits
    std::string what;    // "kernel", "copy host to device of 200704 bytes", "wait for event ..."
    std::string where;   // file:line of the call
};
void start_trace();
std::vector<TraceLine> stop_trace();

}  // namespace triptych::sim::streams

// The simulator's streams, events and graphs, and the stream-order race check: streams.hpp says
// what they do; this file is the bookkeeping.
//
//   Clock        a vector clock: entry p is the last operation of participant p known to come
//                before (participant 0 is the host, 1 the legacy default stream).
//   BufferState  per device or pinned buffer: its last write and each participant's last read;
//                for a pinned buffer also the last operation the host has not waited for, and a
//                hash of the bytes that operation left there (the host's writes are not seen
//                one by one: a change of the bytes before the host waits is one).
//   Capture      a graph being recorded: its operations, the streams that joined it, and why it
//                failed, if something refused during it.
#include "gpu/runtime/sim/streams.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "common/errors.hpp"
#include "gpu/runtime/sim/sim.hpp"

namespace triptych::sim::streams {

using Clock = std::vector<std::uint64_t>;

namespace {

constexpr int host = 0;

std::uint64_t at(const Clock& clock, int participant) {
    return std::size_t(participant) < clock.size() ? clock[std::size_t(participant)] : 0;
}

void merge(Clock& into, const Clock& from) {
    if (into.size() < from.size()) into.resize(from.size(), 0);
    for (std::size_t p = 0; p < from.size(); ++p) into[p] = std::max(into[p], from[p]);
}

// One issued operation, as a buffer remembers it.
struct Operation {
    int participant = host;
    std::uint64_t tick = 0;  // its participant's clock when it was issued
    std::string stream;
    std::string what;
    std::string where;
};

struct BufferState {
    std::size_t bytes = 0;
    bool pinned = false;
    std::optional<Operation> write;
    std::vector<Operation> reads;  // the last read by each participant
    // Pinned only: the last operation that used the buffer and that the host has not waited for,
    // and the hash of the buffer's bytes just after it ran.
    std::optional<Operation> unfinished;
    std::uint64_t content = 0;
};

// FNV-1a over the buffer's bytes: a change of the bytes changes it but for a chance of 2^-64.
std::uint64_t content_hash(std::uintptr_t start, std::size_t bytes) {
    std::uint64_t hash = 14695981039346656037ull;
    const auto* byte = reinterpret_cast<const unsigned char*>(start);
    for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ byte[i]) * 1099511628211ull;
    return hash;
}

// A recorded operation of a graph.
struct Node {
    std::string what;
    std::vector<Access> accesses;
    std::function<void()> run;
};

struct Capture;

}  // namespace

struct Stream {
    int participant = 0;
    std::string name;
    Clock clock;
    Capture* capture = nullptr;
    std::size_t captured = 0;  // its operations in the capture it is part of
};

struct Event {
    bool recorded = false;
    Clock clock;
    std::chrono::steady_clock::time_point time;
    std::string where;   // file:line of its last record
    std::string stream;  // the stream of its last record
    // Recorded on a capturing stream: a point in that capture (its number), which another stream
    // of the capture may wait for.
    std::uint64_t capture = 0;
    Stream* capture_stream = nullptr;
    std::size_t capture_position = 0;
};

struct Graph {
    std::shared_ptr<const std::vector<Node>> nodes;
    std::string where;  // of the capture's begin
};

namespace {

struct Capture {
    std::uint64_t number = 0;
    Stream* origin = nullptr;
    std::string where;
    std::vector<Node> nodes;
    std::vector<Stream*> forked;                  // streams that joined it by waiting
    std::map<const Stream*, std::size_t> joined;  // each one's operations waited for so far
    std::string spoiled;                          // why it failed; empty while it is good
};

struct State {
    std::mutex mutex;
    Stream legacy{1, "default", {}, nullptr, 0};
    int next_participant = 2;
    std::vector<Stream*> live;
    Clock retired;  // what every destroyed stream had done, merged
    Clock host_clock;
    std::unordered_map<std::uintptr_t, BufferState> buffers;
    std::map<std::uintptr_t, std::size_t> pinned;  // start -> bytes
    std::vector<Capture*> captures;
    std::uint64_t next_capture = 1;
    bool tracing = false;
    std::vector<TraceLine> trace;
};

State& state() {
    static State s;
    return s;
}

Stream& resolve(State& s, Stream* stream) { return stream != nullptr ? *stream : s.legacy; }

void trace(State& s, const std::string& stream, const std::string& what,
           std::source_location where) {
    if (s.tracing) s.trace.push_back({stream, what, where_str(where)});
}

// The buffer holding `pointer`, and its start, or null for untracked host memory.
BufferState* buffer_of(State& s, const void* pointer, std::uintptr_t& start) {
    const auto [device_start, device_bytes] = device_allocation_of(pointer);
    if (device_bytes > 0) {
        start = device_start;
        BufferState& buffer = s.buffers[start];
        buffer.bytes = device_bytes;
        return &buffer;
    }
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    auto it = s.pinned.upper_bound(address);
    if (it == s.pinned.begin()) return nullptr;
    --it;
    if (address >= it->first + it->second) return nullptr;
    start = it->first;
    BufferState& buffer = s.buffers[start];
    buffer.bytes = it->second;
    buffer.pinned = true;
    return &buffer;
}

std::string buffer_words(const BufferState& buffer) {
    return std::string(buffer.pinned ? "a pinned host buffer" : "a device buffer") + " of " +
           std::to_string(buffer.bytes) + " bytes";
}

std::string describe(const Operation& op) {
    return op.what + " on stream '" + op.stream + "' (" + op.where + ")";
}

[[noreturn]] void report_race(const BufferState& buffer, const Operation& now, bool now_writes,
                              const Operation& earlier, bool earlier_writes) {
    throw CudaError("stream-order race on " + buffer_words(buffer) + ": " + describe(now) +
                    (now_writes ? " writes" : " reads") + " it, while " + describe(earlier) +
                    ", issued before it, " + (earlier_writes ? "writes" : "reads") +
                    " it, and nothing orders the two: on a GPU they may run in either order, or "
                    "at once. Record an Event after the first and make the second's stream "
                    "wait() for it, or synchronize the first before issuing the second");
}

[[noreturn]] void report_host_write(const BufferState& buffer, const Operation& unfinished,
                                    const std::string& found_at) {
    throw CudaError(
        "stream-order race on " + buffer_words(buffer) + ": the host changed it while " +
        describe(unfinished) + ", issued before, may still have been using it (found at " +
        found_at +
        ", the buffer's next use or the host's first wait for that operation). On a GPU an "
        "asynchronous copy moves pinned memory while the host runs on: it may see the old bytes, "
        "the new, or a mix. Wait for the operation (synchronize its stream, or an Event recorded "
        "after it) before the host writes the buffer");
}

// Throws if a pinned buffer's bytes changed since its unfinished operation ran: the host wrote it
// before waiting for that operation. Reported once: the buffer is no longer watched.
void check_host_write(BufferState& buffer, std::uintptr_t start, const std::string& found_at) {
    if (!buffer.unfinished || content_hash(start, buffer.bytes) == buffer.content) return;
    const Operation unfinished = *buffer.unfinished;
    buffer.unfinished.reset();
    report_host_write(buffer, unfinished, found_at);
}

// After the host's clock moved on: the pinned buffers whose unfinished operation the host now
// knows to have finished are checked once more, then no longer watched.
void host_waited(State& s, std::source_location where) {
    for (auto& [start, buffer] : s.buffers) {
        if (!buffer.unfinished ||
            buffer.unfinished->tick > at(s.host_clock, buffer.unfinished->participant))
            continue;
        check_host_write(buffer, start, where_str(where));
        buffer.unfinished.reset();
    }
}

// Throws for the first access of `op` (made by a stream whose knowledge is `clock`) that the
// buffer's earlier users on other streams are not known to have finished.
void check_order(State& s, const Operation& op, const Clock& clock,
                 const std::vector<std::pair<std::uintptr_t, bool>>& uses) {
    const auto finished = [&](const Operation& earlier) {
        return earlier.participant == op.participant ||
               earlier.tick <= at(clock, earlier.participant);
    };
    for (const auto& [start, writes] : uses) {
        const BufferState& buffer = s.buffers.at(start);
        if (buffer.write && !finished(*buffer.write))
            report_race(buffer, op, writes, *buffer.write, true);
        if (!writes) continue;
        for (const Operation& read : buffer.reads)
            if (!finished(read)) report_race(buffer, op, true, read, false);
    }
}

void remember(State& s, const Operation& op,
              const std::vector<std::pair<std::uintptr_t, bool>>& uses) {
    for (const auto& [start, writes] : uses) {
        BufferState& buffer = s.buffers.at(start);
        if (writes) {
            buffer.write = op;
            buffer.reads.clear();
            continue;
        }
        auto same = std::find_if(buffer.reads.begin(), buffer.reads.end(), [&](const Operation& r) {
            return r.participant == op.participant;
        });
        if (same != buffer.reads.end())
            *same = op;
        else
            buffer.reads.push_back(op);
    }
}

// Each tracked buffer once, written if any access writes it.
std::vector<std::pair<std::uintptr_t, bool>> buffers_used(State& s,
                                                          const std::vector<Access>& accesses) {
    std::vector<std::pair<std::uintptr_t, bool>> uses;
    for (const Access& access : accesses) {
        std::uintptr_t start = 0;
        if (buffer_of(s, access.pointer, start) == nullptr) continue;
        auto same = std::find_if(uses.begin(), uses.end(),
                                 [&](const auto& use) { return use.first == start; });
        if (same != uses.end())
            same->second = same->second || access.write;
        else
            uses.push_back({start, access.write});
    }
    return uses;
}

// "an event of stream 'copy'": which stream's work a wait is for.
std::string event_words(const Event& event) {
    return event.recorded ? "an event of stream '" + event.stream + "'" : "an event never recorded";
}

void end_capture_of_streams(State& s, Capture* capture) {
    capture->origin->capture = nullptr;
    for (Stream* stream : capture->forked) stream->capture = nullptr;
    s.captures.erase(std::find(s.captures.begin(), s.captures.end(), capture));
}

}  // namespace

// ---- streams and events ------------------------------------------------------------------------

Stream* create_stream(const std::string& name) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    auto* stream = new Stream{s.next_participant++, name, s.host_clock, nullptr, 0};
    s.live.push_back(stream);
    return stream;
}

void destroy_stream(Stream* stream) {
    if (stream == nullptr) return;
    abandon_capture(stream);
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (Capture* capture = stream->capture) {
        // It joined a capture that another stream began. Work of it that was not joined back
        // never can be now (on CUDA the capture ends in cudaErrorStreamCaptureUnjoined): the
        // capture fails, and says so with the stream's name, which is gone by its end.
        const auto joined = capture->joined.find(stream);
        if ((joined == capture->joined.end() || joined->second < stream->captured) &&
            capture->spoiled.empty())
            capture->spoiled = "stream '" + stream->name +
                               "' joined it and was destroyed before its last operations were "
                               "waited for (cudaErrorStreamCaptureUnjoined)";
        capture->forked.erase(std::find(capture->forked.begin(), capture->forked.end(), stream));
        if (joined != capture->joined.end()) capture->joined.erase(joined);
    }
    merge(s.retired, stream->clock);  // its work still counts for a device-wide synchronize
    s.live.erase(std::find(s.live.begin(), s.live.end(), stream));
    delete stream;
}

Event* create_event() { return new Event; }
void destroy_event(Event* event) { delete event; }

void record(Event* event, Stream* stream, std::source_location where) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    Stream& on = resolve(s, stream);
    event->recorded = true;
    event->where = where_str(where);
    event->stream = on.name;
    event->time = std::chrono::steady_clock::now();
    if (on.capture != nullptr) {
        event->capture = on.capture->number;
        event->capture_stream = &on;
        event->capture_position = on.captured;
    } else {
        merge(on.clock, s.host_clock);
        event->clock = on.clock;
        event->capture = 0;
    }
    trace(s, on.name, "record event", where);
}

// A fork or a join inside a capture: `waiter` waits for a point of `capture`.
void wait_in_capture(Stream& waiter, Capture& capture, const Event& event, State& s,
                     std::source_location where) {
    if (waiter.capture == nullptr) {
        if (&waiter == &s.legacy)
            throw CudaError("Stream::wait at " + where_str(where) +
                            ": the legacy default stream cannot join a graph capture");
        waiter.capture = &capture;  // a fork: its work from now on is recorded too
        waiter.captured = 0;
        capture.forked.push_back(&waiter);
    } else if (waiter.capture != &capture) {
        throw CudaError("Stream::wait at " + where_str(where) + ": stream '" + waiter.name +
                        "' is capturing one graph and waits for an event of another");
    }
    std::size_t& joined = capture.joined[event.capture_stream];
    joined = std::max(joined, event.capture_position);
}

void wait(Stream* stream, const Event* event, std::source_location where) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    Stream& waiter = resolve(s, stream);
    const auto capture = std::find_if(s.captures.begin(), s.captures.end(), [&](const Capture* c) {
        return c->number == event->capture;
    });
    if (capture != s.captures.end()) {
        wait_in_capture(waiter, **capture, *event, s, where);
    } else if (event->capture != 0) {
        // Recorded in a capture that has ended: it marks nothing that runs, so nothing to wait for.
    } else if (waiter.capture != nullptr && event->recorded) {
        throw CudaError(
            "Stream::wait at " + where_str(where) + ": stream '" + waiter.name +
            "' is being captured and waits for an event recorded outside the capture (" +
            event->where +
            "); a graph cannot depend on work outside it "
            "(cudaErrorStreamCaptureIsolation)");
    } else if (event->recorded) {
        merge(waiter.clock, event->clock);
    }
    trace(s, waiter.name, "wait for " + event_words(*event), where);
}

void synchronize_event(const Event* event, std::source_location where) {
    refuse_while_capturing("Event::synchronize", where);
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (event->recorded) merge(s.host_clock, event->clock);
    trace(s, "host", "wait for " + event_words(*event), where);
    host_waited(s, where);
}

double seconds_between(const Event* start, const Event* end, std::source_location where) {
    if (!start->recorded || !end->recorded)
        throw CudaError("Event::milliseconds_since at " + where_str(where) + ": the " +
                        (start->recorded ? "end" : "start") +
                        " event was never recorded; both must be");
    return std::chrono::duration<double>(end->time - start->time).count();
}

void synchronize_stream(Stream* stream, std::source_location where) {
    refuse_while_capturing("Stream::synchronize", where);
    State& s = state();
    std::lock_guard lock(s.mutex);
    Stream& on = resolve(s, stream);
    merge(s.host_clock, on.clock);
    trace(s, "host", "wait for stream '" + on.name + "'", where);
    host_waited(s, where);
}

void synchronize_device(std::source_location where) {
    refuse_while_capturing("synchronize (cudaDeviceSynchronize)", where);
    State& s = state();
    std::lock_guard lock(s.mutex);
    merge(s.host_clock, s.legacy.clock);
    for (const Stream* stream : s.live) merge(s.host_clock, stream->clock);
    merge(s.host_clock, s.retired);
    trace(s, "host", "wait for the whole device", where);
    host_waited(s, where);
}

// ---- operations --------------------------------------------------------------------------------

void issue(Stream* stream, const std::string& what, std::vector<Access> accesses,
           std::function<void()> run, std::source_location where) {
    State& s = state();
    std::optional<Operation> op;
    std::vector<std::pair<std::uintptr_t, bool>> uses;
    {
        std::lock_guard lock(s.mutex);
        Stream& on = resolve(s, stream);
        if (on.capture != nullptr) {
            on.capture->nodes.push_back({what, std::move(accesses), std::move(run)});
            ++on.captured;
            trace(s, on.name, "capture " + what, where);
            return;
        }
        merge(on.clock, s.host_clock);
        if (on.clock.size() <= std::size_t(on.participant))
            on.clock.resize(std::size_t(on.participant) + 1, 0);
        op = Operation{on.participant, ++on.clock[std::size_t(on.participant)], on.name, what,
                       where_str(where)};
        uses = buffers_used(s, accesses);
        for (const auto& use : uses)
            check_host_write(s.buffers.at(use.first), use.first, op->where);
        check_order(s, *op, on.clock, uses);
        remember(s, *op, uses);
        trace(s, on.name, what, where);
    }
    run();
    // The bytes this operation left in its pinned buffers, which the host must not change until
    // it has waited for the operation.
    std::lock_guard lock(s.mutex);
    for (const auto& use : uses) {
        const auto buffer = s.buffers.find(use.first);
        if (buffer == s.buffers.end() || !buffer->second.pinned) continue;
        buffer->second.unfinished = op;
        buffer->second.content = content_hash(use.first, buffer->second.bytes);
    }
}

void refuse_while_capturing(const std::string& what, std::source_location where) {
    refuse_while_capturing(what + " at " + where_str(where));
}

void refuse_while_capturing(const std::string& what) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.captures.empty()) return;
    const Capture& first = *s.captures.front();
    const std::string message =
        what + " while stream '" + first.origin->name +
        "' is being captured into a graph (begun at " + first.where +
        "): CUDA refuses it (cudaErrorStreamCaptureUnsupported) and the capture fails. Allocate "
        "and synchronize before the capture begins, or after it ends";
    for (Capture* capture : s.captures)
        if (capture->spoiled.empty()) capture->spoiled = message;
    throw CudaError(message);
}

void forget_buffer(const void* start) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.buffers.erase(reinterpret_cast<std::uintptr_t>(start));
}

void register_pinned(const void* start, std::size_t bytes) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.pinned[reinterpret_cast<std::uintptr_t>(start)] = bytes;
}

void unregister_pinned(const void* start) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.pinned.erase(reinterpret_cast<std::uintptr_t>(start));
    s.buffers.erase(reinterpret_cast<std::uintptr_t>(start));
}

// ---- graphs ------------------------------------------------------------------------------------

void begin_capture(Stream* stream, std::source_location where) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (stream == nullptr)
        throw CudaError("GraphCapture at " + where_str(where) +
                        ": the legacy default stream cannot be captured "
                        "(cudaErrorStreamCaptureUnsupported); capture a Stream of its own");
    if (stream->capture != nullptr)
        throw CudaError("GraphCapture at " + where_str(where) + ": stream '" + stream->name +
                        "' is already being captured");
    auto* capture = new Capture;
    capture->number = s.next_capture++;
    capture->origin = stream;
    capture->where = where_str(where);
    stream->capture = capture;
    stream->captured = 0;
    s.captures.push_back(capture);
    trace(s, stream->name, "begin capture", where);
}

Graph* end_capture(Stream* stream, std::source_location where) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    Capture* capture = stream != nullptr ? stream->capture : nullptr;
    if (capture == nullptr || capture->origin != stream)
        throw CudaError("GraphCapture::finish at " + where_str(where) + ": stream '" +
                        resolve(s, stream).name + "' did not begin a capture");
    const std::unique_ptr<Capture> owned(capture);
    end_capture_of_streams(s, capture);
    trace(s, stream->name, "end capture", where);
    if (!capture->spoiled.empty())
        throw CudaError("the graph capture begun at " + capture->where +
                        " failed (cudaErrorStreamCaptureInvalidated): " + capture->spoiled);
    for (const Stream* forked : capture->forked) {
        const auto joined = capture->joined.find(forked);
        if (joined == capture->joined.end() || joined->second < forked->captured)
            throw CudaError(
                "GraphCapture::finish at " + where_str(where) + ": stream '" + forked->name +
                "' joined the capture begun at " + capture->where +
                " but its last operations were never waited for "
                "(cudaErrorStreamCaptureUnjoined): record an Event on it after its work and "
                "make stream '" +
                stream->name + "' wait() for it before the capture ends");
    }
    auto* graph = new Graph;
    graph->nodes = std::make_shared<const std::vector<Node>>(std::move(capture->nodes));
    graph->where = capture->where;
    return graph;
}

void abandon_capture(Stream* stream) noexcept {
    State& s = state();
    std::lock_guard lock(s.mutex);
    Capture* capture = stream != nullptr ? stream->capture : nullptr;
    if (capture == nullptr || capture->origin != stream) return;
    end_capture_of_streams(s, capture);
    delete capture;
}

void launch_graph(const Graph* graph, Stream* stream, std::source_location where) {
    std::vector<Access> accesses;
    for (const Node& node : *graph->nodes)
        accesses.insert(accesses.end(), node.accesses.begin(), node.accesses.end());
    issue(
        stream, "graph of " + std::to_string(graph->nodes->size()) + " operations",
        std::move(accesses),
        [nodes = graph->nodes] {
            for (const Node& node : *nodes) node.run();
        },
        where);
}

std::size_t graph_operations(const Graph* graph) { return graph->nodes->size(); }
void destroy_graph(Graph* graph) { delete graph; }

// ---- the trace ---------------------------------------------------------------------------------

void start_trace() {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.trace.clear();
    s.tracing = true;
}

std::vector<TraceLine> stop_trace() {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.tracing = false;
    return std::move(s.trace);
}

}  // namespace triptych::sim::streams

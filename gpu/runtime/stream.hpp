// Streams, events, asynchronous copies and CUDA graphs: how host code orders a GPU's work, and lets
// copies and kernels overlap. Host code only; the same API in both GPU builds.
//
// A stream is a queue. The GPU runs a stream's operations (kernels, copies) one after another, in
// the order they were issued, while the host goes on with its own work. Operations of two streams
// may run at the same time, in either order, unless an event joins them:
//
//   copy_to_device_async(images, pinned_images, count, copy_stream);  // issued, not yet done
//   uploaded.record(copy_stream);        // marks "everything copy_stream was given so far"
//   compute_stream.wait(uploaded);       // compute_stream's later work starts after that
//
// Every kernel launch (launch.hpp) and every copy or fill the ops make goes to the calling host
// thread's *current stream*: the legacy default stream (CUDA's stream 0) unless a StreamScope
// names another. So the ops of common/backend.hpp need no stream argument, and a whole training
// step moves to another stream with one line.
//
// On a GPU these are cudaStream_t (created non-blocking: no hidden synchronisation with the legacy
// default stream), cudaEvent_t, cudaMemcpyAsync and cudaGraph_t. In the simulator
// (gpu/runtime/sim/streams.hpp) every operation runs when it is issued, which is one of the orders
// a GPU may choose, and the simulator checks that the program does not depend on that choice: a
// buffer that one stream uses while another stream's unfinished work writes it (or reads it, for a
// write), with no event or synchronisation ordering the two, is a CudaError naming both operations'
// file:line. No other tool reports that race; on a GPU it shows up, now and then, as a wrong
// result.
//
// A CUDA graph (Graph, GraphCapture) records the work issued to a stream instead of running it,
// then replays all of it with one launch: for a training step of many small kernels, one launch
// instead of dozens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>

namespace triptych::gpu {

class Event;

// A stream of its own, created non-blocking, destroyed (after its work) with the object.
class Stream {
public:
    // `name` labels the stream in the simulator's messages and trace ("copy", "compute").
    explicit Stream(std::string name, std::source_location where = std::source_location::current());
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // The stream legacy CUDA code uses when it names none (stream 0). Not owned: never destroyed.
    static const Stream& legacy_default();

    // cudaStream_t on a GPU, the simulator's stream in a sim build; null for the legacy default.
    void* handle() const { return handle_; }
    const std::string& name() const { return name_; }

    // The work issued to this stream from now on waits until the work `event` marks has finished
    // (cudaStreamWaitEvent). The host does not wait. An event never recorded is waited for at once.
    void wait(const Event& event,
              std::source_location where = std::source_location::current()) const;
    // Blocks the host until everything issued to this stream so far has finished.
    void synchronize(std::source_location where = std::source_location::current()) const;

private:
    struct Legacy {};
    explicit Stream(Legacy);

    void* handle_ = nullptr;
    std::string name_;
};

// A marker in a stream: record() places it after the work issued so far; a stream's wait() and
// the host's synchronize() wait for that work.
class Event {
public:
    explicit Event(std::source_location where = std::source_location::current());
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    void* handle() const { return handle_; }
    // Marks the work issued to `stream` so far; a later record() moves the mark.
    void record(const Stream& stream, std::source_location where = std::source_location::current());
    // Blocks the host until the marked work has finished (at once if never recorded).
    void synchronize(std::source_location where = std::source_location::current()) const;
    // Milliseconds from `start`'s mark to this one's, both recorded and finished
    // (cudaEventElapsedTime). In the simulator: host time between the two records, which says
    // nothing about a GPU.
    double milliseconds_since(const Event& start,
                              std::source_location where = std::source_location::current()) const;

private:
    void* handle_ = nullptr;
};

// Makes `stream` the calling host thread's current stream until the end of the scope, then
// restores the one before. Kernel launches and the ops' copies go to the current stream.
class StreamScope {
public:
    explicit StreamScope(const Stream& stream);
    ~StreamScope();
    StreamScope(const StreamScope&) = delete;
    StreamScope& operator=(const StreamScope&) = delete;

private:
    const Stream* previous_;
};

// The calling host thread's current stream (Stream::legacy_default() unless a StreamScope says).
const Stream& current_stream();

// Copies issued to `stream`, returning at once. The host buffer must stay unchanged (to the device)
// or unread (to the host) until the stream has done the copy: wait for an event recorded after
// it. Only page-locked host memory (pinned_allocate) is copied while the host goes on; from
// ordinary memory CUDA first copies into its own pinned buffer, and the copy does not overlap.
void copy_to_device_async(float* device_dst, const float* host_src, std::int64_t count,
                          const Stream& stream,
                          std::source_location where = std::source_location::current());
void copy_to_host_async(float* host_dst, const float* device_src, std::int64_t count,
                        const Stream& stream,
                        std::source_location where = std::source_location::current());
// Sets `bytes` bytes of device memory to `value`, on the current stream (cudaMemsetAsync).
void fill_bytes_async(void* device_dst, unsigned char value, std::size_t bytes,
                      std::source_location where = std::source_location::current());

// A captured graph, instantiated and ready to launch (cudaGraphExec_t).
class Graph {
public:
    Graph(Graph&&) noexcept;
    Graph& operator=(Graph&&) noexcept;
    ~Graph();

    // Runs every operation the capture recorded, on `stream`, in an order the capture allows; the
    // kernels see the arguments they were captured with (the same buffers, the same sizes).
    // A graph that was moved from holds nothing: launching it is a CudaError.
    void launch(const Stream& stream,
                std::source_location where = std::source_location::current()) const;
    // The operations it holds: kernels, copies, fills (none once moved from).
    std::size_t operations() const;

private:
    friend class GraphCapture;
    struct State;
    explicit Graph(std::unique_ptr<State> state);
    const State& state(std::source_location where) const;  // throws once moved from
    std::unique_ptr<State> state_;
};

// While it lives, the work issued to `stream` is recorded, not run (cudaStreamBeginCapture, in the
// global mode: an operation that would wait for the device, a cudaMalloc or a cudaFree, anywhere
// in the program, is refused with CudaError). finish() ends the capture and returns the graph; a
// capture left unfinished (an exception) is ended and thrown away.
class GraphCapture {
public:
    explicit GraphCapture(const Stream& stream,
                          std::source_location where = std::source_location::current());
    ~GraphCapture();
    GraphCapture(const GraphCapture&) = delete;
    GraphCapture& operator=(const GraphCapture&) = delete;

    Graph finish(std::source_location where = std::source_location::current());

private:
    const Stream* stream_;
    bool capturing_ = true;
};

}  // namespace triptych::gpu

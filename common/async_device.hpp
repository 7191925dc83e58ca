// AsyncDevice: streams, events, pinned memory and graphs, as a GPU backend offers them to code in
// common/ (the trainer), which cannot name the GPU runtime. A thin layer over
// gpu/runtime/stream.hpp, where they are explained; the GPU backends return one from
// Backend::async(), the CPU backends none (their ops finish before they return, so there is
// nothing to overlap).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "common/tensor.hpp"

namespace triptych {

class AsyncDevice {
public:
    // What the calls below hand back and take: a gpu::Stream, gpu::Event or gpu::Graph inside.
    class Stream {
    public:
        virtual ~Stream() = default;
    };
    class Event {
    public:
        virtual ~Event() = default;
    };
    class Graph {
    public:
        virtual ~Graph() = default;
        // The operations it holds (kernels, copies, fills).
        virtual std::size_t operations() const = 0;
    };

    virtual ~AsyncDevice() = default;

    virtual std::unique_ptr<Stream> stream(const std::string& name) const = 0;
    virtual std::unique_ptr<Event> event() const = 0;
    // Page-locked host memory for `count` floats, which upload() copies while the host goes on.
    virtual std::shared_ptr<float> pinned(std::int64_t count) const = 0;

    // Each call below that issues or waits takes its caller's file:line, which the simulator's
    // messages and trace name.
    using Where = std::source_location;

    // Marks the work issued to `stream` so far.
    virtual void record(Event& event, const Stream& stream,
                        Where where = Where::current()) const = 0;
    // `stream`'s later work waits for the work `event` marks; the host does not wait.
    virtual void wait(const Stream& stream, const Event& event,
                      Where where = Where::current()) const = 0;
    // The host waits for the work `event` marks.
    virtual void synchronize(const Event& event, Where where = Where::current()) const = 0;
    // Copies dst.elements() floats from `pinned_source` into `dst`, on `stream`, returning at once.
    virtual void upload(Tensor& dst, const float* pinned_source, const Stream& stream,
                        Where where = Where::current()) const = 0;

    // Calls `work` with `stream` as the current stream: the ops it calls are issued there.
    virtual void run_on(const Stream& stream, const std::function<void()>& work) const = 0;
    // Calls `work` as run_on does, recording the ops it issues into a graph instead of running
    // them. `work` must not allocate or wait for the device (the backend refuses, with CudaError).
    virtual std::unique_ptr<Graph> capture(const Stream& stream, const std::function<void()>& work,
                                           Where where = Where::current()) const = 0;
    // Runs everything `graph` recorded, on `stream`.
    virtual void launch(const Graph& graph, const Stream& stream,
                        Where where = Where::current()) const = 0;

    // The simulator's record of the operations, records and waits issued, in order, with their
    // streams (gpu/runtime/sim/streams.hpp). On a GPU there is none (empty): Nsight Systems
    // (`nsys profile`) records the real timeline there.
    struct TraceLine {
        std::string stream, what, where;
    };
    virtual void start_trace() const = 0;
    virtual std::vector<TraceLine> stop_trace() const = 0;
};

}  // namespace triptych

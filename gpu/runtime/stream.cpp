#include "gpu/runtime/stream.hpp"

#include <cstring>

#include "common/errors.hpp"
#include "triptych_config.hpp"

#if TRIPTYCH_GPU_CUDA
#include <cuda_runtime.h>
#else
#include "gpu/runtime/sim/sim.hpp"
#endif

namespace triptych::gpu {

namespace {
thread_local const Stream* current = nullptr;

std::string size_words(std::int64_t count) {
    return std::to_string(std::int64_t(sizeof(float)) * count) + " bytes";
}
}  // namespace

Stream::Stream(Legacy) : name_("default") {}

const Stream& Stream::legacy_default() {
    static const Stream legacy{Legacy{}};
    return legacy;
}

StreamScope::StreamScope(const Stream& stream) : previous_(current) { current = &stream; }
StreamScope::~StreamScope() { current = previous_; }

const Stream& current_stream() { return current != nullptr ? *current : Stream::legacy_default(); }

GraphCapture::~GraphCapture() {
    if (!capturing_) return;
#if TRIPTYCH_GPU_CUDA
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(static_cast<cudaStream_t>(stream_->handle()), &graph) == cudaSuccess &&
        graph != nullptr)
        cudaGraphDestroy(graph);
    cudaGetLastError();  // the failed capture's error is not the next call's
#else
    sim::streams::abandon_capture(static_cast<sim::streams::Stream*>(stream_->handle()));
#endif
}

#if TRIPTYCH_GPU_CUDA

namespace {
void check(cudaError_t status, const std::string& what, std::source_location where) {
    if (status != cudaSuccess)
        throw CudaError(what + " at " + where.file_name() + ":" + std::to_string(where.line()) +
                        ": " + cudaGetErrorString(status));
}
cudaStream_t cuda(const Stream& stream) { return static_cast<cudaStream_t>(stream.handle()); }
}  // namespace

struct Graph::State {
    cudaGraphExec_t exec = nullptr;
    std::size_t operations = 0;
    ~State() {
        if (exec != nullptr) cudaGraphExecDestroy(exec);
    }
};

Stream::Stream(std::string name, std::source_location where) : name_(std::move(name)) {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", where);
    handle_ = stream;
}
Stream::~Stream() {
    if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
}
void Stream::wait(const Event& event, std::source_location where) const {
    check(cudaStreamWaitEvent(cuda(*this), static_cast<cudaEvent_t>(event.handle()), 0),
          "cudaStreamWaitEvent", where);
}
void Stream::synchronize(std::source_location where) const {
    check(cudaStreamSynchronize(cuda(*this)), "cudaStreamSynchronize on stream '" + name_ + "'",
          where);
}

Event::Event(std::source_location where) {
    cudaEvent_t event = nullptr;
    check(cudaEventCreate(&event), "cudaEventCreate", where);
    handle_ = event;
}
Event::~Event() { cudaEventDestroy(static_cast<cudaEvent_t>(handle_)); }
void Event::record(const Stream& stream, std::source_location where) {
    check(cudaEventRecord(static_cast<cudaEvent_t>(handle_), cuda(stream)), "cudaEventRecord",
          where);
}
void Event::synchronize(std::source_location where) const {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)), "cudaEventSynchronize", where);
}
double Event::milliseconds_since(const Event& start, std::source_location where) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.handle_),
                               static_cast<cudaEvent_t>(handle_)),
          "cudaEventElapsedTime", where);
    return ms;
}

void copy_to_device_async(float* dst, const float* src, std::int64_t count, const Stream& stream,
                          std::source_location where) {
    check(cudaMemcpyAsync(dst, src, sizeof(float) * count, cudaMemcpyHostToDevice, cuda(stream)),
          "copy to device of " + size_words(count), where);
}
void copy_to_host_async(float* dst, const float* src, std::int64_t count, const Stream& stream,
                        std::source_location where) {
    check(cudaMemcpyAsync(dst, src, sizeof(float) * count, cudaMemcpyDeviceToHost, cuda(stream)),
          "copy to host of " + size_words(count), where);
}
void fill_bytes_async(void* dst, unsigned char value, std::size_t bytes,
                      std::source_location where) {
    check(cudaMemsetAsync(dst, value, bytes, cuda(current_stream())), "cudaMemsetAsync", where);
}

void Graph::launch(const Stream& stream, std::source_location where) const {
    check(cudaGraphLaunch(state(where).exec, cuda(stream)), "cudaGraphLaunch", where);
}
std::size_t Graph::operations() const { return state_ ? state_->operations : 0; }

GraphCapture::GraphCapture(const Stream& stream, std::source_location where) : stream_(&stream) {
    check(cudaStreamBeginCapture(cuda(stream), cudaStreamCaptureModeGlobal),
          "cudaStreamBeginCapture on stream '" + stream.name() + "'", where);
}

Graph GraphCapture::finish(std::source_location where) {
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(cuda(*stream_), &graph), "cudaStreamEndCapture", where);
    auto state = std::make_unique<Graph::State>();
    const cudaError_t nodes = cudaGraphGetNodes(graph, nullptr, &state->operations);
    const cudaError_t made = cudaGraphInstantiate(&state->exec, graph, 0);
    cudaGraphDestroy(graph);  // the executable graph keeps what it needs
    check(nodes, "cudaGraphGetNodes", where);
    check(made, "cudaGraphInstantiate", where);
    return Graph(std::move(state));
}

#else  // the simulator: gpu/runtime/sim/streams.hpp

namespace {
sim::streams::Stream* sim_stream(const Stream& stream) {
    return static_cast<sim::streams::Stream*>(stream.handle());
}
sim::streams::Event* sim_event(const Event& event) {
    return static_cast<sim::streams::Event*>(event.handle());
}
}  // namespace

struct Graph::State {
    sim::streams::Graph* graph = nullptr;
    ~State() { sim::streams::destroy_graph(graph); }
};

Stream::Stream(std::string name, std::source_location) : name_(std::move(name)) {
    handle_ = sim::streams::create_stream(name_);
}
Stream::~Stream() { sim::streams::destroy_stream(sim_stream(*this)); }
void Stream::wait(const Event& event, std::source_location where) const {
    sim::streams::wait(sim_stream(*this), sim_event(event), where);
}
void Stream::synchronize(std::source_location where) const {
    sim::streams::synchronize_stream(sim_stream(*this), where);
}

Event::Event(std::source_location) { handle_ = sim::streams::create_event(); }
Event::~Event() { sim::streams::destroy_event(sim_event(*this)); }
void Event::record(const Stream& stream, std::source_location where) {
    sim::streams::record(sim_event(*this), sim_stream(stream), where);
}
void Event::synchronize(std::source_location where) const {
    sim::streams::synchronize_event(sim_event(*this), where);
}
double Event::milliseconds_since(const Event& start, std::source_location where) const {
    return 1e3 * sim::streams::seconds_between(sim_event(start), sim_event(*this), where);
}

void copy_to_device_async(float* dst, const float* src, std::int64_t count, const Stream& stream,
                          std::source_location where) {
    if (!sim::is_device_pointer(dst))
        throw CudaError("copy to device at " + sim::where_str(where) +
                        ": the destination is not device memory");
    sim::streams::issue(
        sim_stream(stream), "copy host to device of " + size_words(count),
        {{src, false}, {dst, true}},
        [=] { std::memcpy(dst, src, sizeof(float) * std::size_t(count)); }, where);
}
void copy_to_host_async(float* dst, const float* src, std::int64_t count, const Stream& stream,
                        std::source_location where) {
    if (!sim::is_device_pointer(src))
        throw CudaError("copy to host at " + sim::where_str(where) +
                        ": the source is not device memory");
    sim::streams::issue(
        sim_stream(stream), "copy device to host of " + size_words(count),
        {{src, false}, {dst, true}},
        [=] { std::memcpy(dst, src, sizeof(float) * std::size_t(count)); }, where);
}
void fill_bytes_async(void* dst, unsigned char value, std::size_t bytes,
                      std::source_location where) {
    if (!sim::is_device_pointer(dst))
        throw CudaError("fill at " + sim::where_str(where) + ": the buffer is not device memory");
    sim::streams::issue(
        sim_stream(current_stream()), "fill of " + std::to_string(bytes) + " bytes", {{dst, true}},
        [=] { std::memset(dst, value, bytes); }, where);
}

void Graph::launch(const Stream& stream, std::source_location where) const {
    sim::streams::launch_graph(state(where).graph, sim_stream(stream), where);
}
std::size_t Graph::operations() const {
    return state_ ? sim::streams::graph_operations(state_->graph) : 0;
}

GraphCapture::GraphCapture(const Stream& stream, std::source_location where) : stream_(&stream) {
    sim::streams::begin_capture(sim_stream(stream), where);
}

Graph GraphCapture::finish(std::source_location where) {
    capturing_ = false;
    auto state = std::make_unique<Graph::State>();
    state->graph = sim::streams::end_capture(sim_stream(*stream_), where);
    return Graph(std::move(state));
}

#endif

Graph::Graph(std::unique_ptr<State> state) : state_(std::move(state)) {}
const Graph::State& Graph::state(std::source_location where) const {
    if (!state_)
        throw CudaError(std::string("Graph::launch at ") + where.file_name() + ":" +
                        std::to_string(where.line()) +
                        ": this Graph was moved from and holds no graph; launch the one it was "
                        "moved to");
    return *state_;
}
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

}  // namespace triptych::gpu

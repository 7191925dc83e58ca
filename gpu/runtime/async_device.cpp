// The GPU backends' AsyncDevice (common/async_device.hpp): each call is the gpu/runtime/stream.hpp
// call of the same name.
#include <type_traits>

#include "common/errors.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/gpu_backend.hpp"
#include "gpu/runtime/stream.hpp"
#include "triptych_config.hpp"

#if !TRIPTYCH_GPU_CUDA
#include "gpu/runtime/sim/streams.hpp"
#endif

namespace triptych::gpu {
namespace {

struct OwnStream final : AsyncDevice::Stream {
    explicit OwnStream(const std::string& name) : stream(name) {}
    gpu::Stream stream;
};
struct OwnEvent final : AsyncDevice::Event {
    gpu::Event event;
};
struct OwnGraph final : AsyncDevice::Graph {
    explicit OwnGraph(gpu::Graph g) : graph(std::move(g)) {}
    std::size_t operations() const override { return graph.operations(); }
    gpu::Graph graph;
};

// The objects passed in were made by this device: anything else is a programming error.
template <typename Own, typename Base>
auto& own(Base& object) {
    using Result = std::conditional_t<std::is_const_v<Base>, const Own, Own>;
    auto* mine = dynamic_cast<Result*>(&object);
    if (mine == nullptr) throw InvalidArgument("AsyncDevice: an object of another device");
    return *mine;
}

class GpuAsyncDevice final : public AsyncDevice {
public:
    std::unique_ptr<AsyncDevice::Stream> stream(const std::string& name) const override {
        return std::make_unique<OwnStream>(name);
    }
    std::unique_ptr<AsyncDevice::Event> event() const override {
        return std::make_unique<OwnEvent>();
    }
    std::shared_ptr<float> pinned(std::int64_t count) const override {
        return pinned_allocate(count);
    }
    void record(AsyncDevice::Event& event, const AsyncDevice::Stream& stream,
                Where where) const override {
        own<OwnEvent>(event).event.record(own<OwnStream>(stream).stream, where);
    }
    void wait(const AsyncDevice::Stream& stream, const AsyncDevice::Event& event,
              Where where) const override {
        own<OwnStream>(stream).stream.wait(own<OwnEvent>(event).event, where);
    }
    void synchronize(const AsyncDevice::Event& event, Where where) const override {
        own<OwnEvent>(event).event.synchronize(where);
    }
    void upload(Tensor& dst, const float* pinned_source, const AsyncDevice::Stream& stream,
                Where where) const override {
        copy_to_device_async(dst.data(), pinned_source, dst.elements(),
                             own<OwnStream>(stream).stream, where);
    }
    void run_on(const AsyncDevice::Stream& stream,
                const std::function<void()>& work) const override {
        const StreamScope scope(own<OwnStream>(stream).stream);
        work();
    }
    std::unique_ptr<AsyncDevice::Graph> capture(const AsyncDevice::Stream& stream,
                                                const std::function<void()>& work,
                                                Where where) const override {
        const gpu::Stream& on = own<OwnStream>(stream).stream;
        GraphCapture capture(on, where);
        {
            const StreamScope scope(on);
            work();
        }
        return std::make_unique<OwnGraph>(capture.finish(where));
    }
    void launch(const AsyncDevice::Graph& graph, const AsyncDevice::Stream& stream,
                Where where) const override {
        own<OwnGraph>(graph).graph.launch(own<OwnStream>(stream).stream, where);
    }
#if TRIPTYCH_GPU_CUDA
    void start_trace() const override {}
    std::vector<TraceLine> stop_trace() const override { return {}; }
#else
    void start_trace() const override { sim::streams::start_trace(); }
    std::vector<TraceLine> stop_trace() const override {
        std::vector<TraceLine> lines;
        for (const sim::streams::TraceLine& line : sim::streams::stop_trace())
            lines.push_back({line.stream, line.what, line.where});
        return lines;
    }
#endif
};

}  // namespace

const AsyncDevice& gpu_async_device() {
    static const GpuAsyncDevice device;
    return device;
}

}  // namespace triptych::gpu

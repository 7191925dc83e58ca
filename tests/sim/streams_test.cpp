// Streams, events and graphs in the simulator (gpu/runtime/stream.hpp,
// gpu/runtime/sim/streams.hpp): work runs in stream order; two streams' uses of one buffer that
// nothing orders are a stream-order race, reported with both file:lines whatever order the
// simulator ran them in; a graph capture records instead of running, refuses what CUDA refuses, and
// its graph replays the kernels.
#include <catch2/catch.hpp>
#include <vector>

#include "common/errors.hpp"
#include "gpu/runtime/device.hpp"
#include "gpu/runtime/sim/streams.hpp"
#include "gpu/runtime/stream.hpp"
#include "tests/sim/kernels.hpp"
#include "tests/sim/test_support.hpp"

namespace triptych::sim_tests {
namespace {

using Catch::Matchers::Contains;

constexpr std::int64_t n = 100;  // not a multiple of the kernels' 64-thread blocks

std::vector<float> download(const std::shared_ptr<float>& device) {
    std::vector<float> host(n);
    gpu::copy_to_host(host.data(), device.get(), n);
    return host;
}

std::shared_ptr<float> upload(float value) {
    std::shared_ptr<float> device = gpu::device_allocate(n);
    const std::vector<float> host(n, value);
    gpu::copy_to_device(device.get(), host.data(), n);
    return device;
}

// A pinned host buffer holding `value` n times.
std::shared_ptr<float> pinned(float value) {
    std::shared_ptr<float> host = gpu::pinned_allocate(n);
    std::fill(host.get(), host.get() + n, value);
    return host;
}

// A graph of `adds` add_one launches on x, captured on `stream` (nothing runs yet).
gpu::Graph captured_add_ones(const gpu::Stream& stream, float* x, int adds) {
    gpu::GraphCapture capture(stream);
    {
        const gpu::StreamScope scope(stream);
        for (int i = 0; i < adds; ++i) add_one(x, n);
    }
    return capture.finish();
}

// How the simulator names a line: its path from the source tree's root.
std::string kernel_site(int line) { return "tests/sim/streams.cu:" + std::to_string(line); }
std::string test_site(int line) { return "tests/sim/streams_test.cpp:" + std::to_string(line); }

}  // namespace

TEST_CASE("a stream runs its work in issue order, and a blocking download waits for it",
          "[sim][streams]") {
    const gpu::Stream stream("work");
    const std::shared_ptr<float> x = upload(1.0f);
    {
        const gpu::StreamScope scope(stream);
        for (int i = 0; i < 3; ++i) add_one(x.get(), n);
        CHECK(download(x) == std::vector<float>(n, 4.0f));  // on the current stream: after them
    }
    CHECK(&gpu::current_stream() == &gpu::Stream::legacy_default());
}

TEST_CASE(
    "a kernel reading a buffer another stream's copy may still be writing is a stream-order "
    "race naming both operations",
    "[sim][streams]") {
    const gpu::Stream copy("copy"), compute("compute");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> x = gpu::device_allocate(n);
    const int copy_line = __LINE__ + 1;
    gpu::copy_to_device_async(x.get(), host.get(), n, copy);
    const gpu::StreamScope scope(compute);
    const std::string message = message_of<CudaError>([&] { add_one(x.get(), n); });
    CHECK_THAT(message, Contains("stream-order race on a device buffer of 400 bytes"));
    CHECK_THAT(message, Contains("kernel on stream 'compute' (" + kernel_site(add_one_launch_line) +
                                 ") writes it"));
    CHECK_THAT(message, Contains("copy host to device of 400 bytes on stream 'copy' (" +
                                 test_site(copy_line) + "), issued before it, writes it"));
}

TEST_CASE("a copy overwriting a buffer that a kernel on another stream may still read is a race",
          "[sim][streams]") {
    const gpu::Stream copy("copy"), compute("compute");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> in = upload(1.0f), out = gpu::device_allocate(n);
    {
        const gpu::StreamScope scope(compute);
        double_into(in.get(), out.get(), n);
    }
    const std::string message =
        message_of<CudaError>([&] { gpu::copy_to_device_async(in.get(), host.get(), n, copy); });
    CHECK_THAT(message, Contains("on stream 'copy'"));
    CHECK_THAT(message,
               Contains("writes it, while kernel on stream 'compute' (" +
                        kernel_site(double_into_launch_line) + "), issued before it, reads it"));
}

TEST_CASE("the same work ordered by an event, or by the host's synchronize, is no race",
          "[sim][streams]") {
    const gpu::Stream copy("copy"), compute("compute");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> x = gpu::device_allocate(n), y = gpu::device_allocate(n);
    const gpu::StreamScope scope(compute);

    SECTION("an event recorded after the copy, waited for by the kernel's stream") {
        gpu::Event uploaded;
        gpu::copy_to_device_async(x.get(), host.get(), n, copy);
        uploaded.record(copy);
        compute.wait(uploaded);
        add_one(x.get(), n);
        CHECK(download(x) == std::vector<float>(n, 3.0f));
    }
    SECTION("the host waiting for the copy's stream before it issues the kernel") {
        gpu::copy_to_device_async(x.get(), host.get(), n, copy);
        copy.synchronize();
        add_one(x.get(), n);
        CHECK(download(x) == std::vector<float>(n, 3.0f));
    }
    SECTION("the host waiting for the whole device") {
        gpu::copy_to_device_async(x.get(), host.get(), n, copy);
        gpu::synchronize();
        add_one(x.get(), n);
        CHECK(download(x) == std::vector<float>(n, 3.0f));
    }
    SECTION("two streams reading one buffer at once") {
        gpu::copy_to_device_async(x.get(), host.get(), n, copy);
        copy.synchronize();
        std::vector<float> back(n);
        gpu::copy_to_host_async(back.data(), x.get(), n, copy);
        double_into(x.get(), y.get(), n);  // reads x on compute while the copy reads it too
        copy.synchronize();
        CHECK(back == std::vector<float>(n, 2.0f));
        CHECK(download(y) == std::vector<float>(n, 4.0f));
    }
}

TEST_CASE(
    "pointers inside a struct argument count as the struct declares them, or as written when it "
    "declares nothing",
    "[sim][streams]") {
    const gpu::Stream first("first"), second("second");
    const std::shared_ptr<float> x = upload(1.0f);
    const std::shared_ptr<float> y = gpu::device_allocate(n), z = gpu::device_allocate(n);
    {
        const gpu::StreamScope scope(first);
        double_into(x.get(), y.get(), n);  // reads x
    }
    const gpu::StreamScope scope(second);
    SECTION("a table that says it only reads x: two streams reading x at once is no race") {
        CHECK_NOTHROW(double_through_table(x.get(), z.get(), n, true));
        gpu::synchronize();
        CHECK(download(z) == std::vector<float>(n, 2.0f));
    }
    SECTION("a table that says nothing: x counts as written, a race with the first read") {
        CHECK_THAT(message_of<CudaError>([&] { double_through_table(x.get(), z.get(), n, false); }),
                   Contains("on stream 'second'"));
    }
    gpu::synchronize();
}

TEST_CASE("an event waited for before it is recorded orders nothing", "[sim][streams]") {
    const gpu::Stream copy("copy"), compute("compute");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> x = gpu::device_allocate(n);
    gpu::Event uploaded;
    compute.wait(uploaded);  // never recorded yet: waits for nothing
    gpu::copy_to_device_async(x.get(), host.get(), n, copy);
    uploaded.record(copy);
    const gpu::StreamScope scope(compute);
    CHECK_THAT(message_of<CudaError>([&] { add_one(x.get(), n); }), Contains("stream-order race"));
}

TEST_CASE(
    "the host refilling a pinned buffer before it waits for the copy from it is a race, found at "
    "its wait or at the buffer's next use",
    "[sim][streams]") {
    const gpu::Stream copy("copy");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> x = gpu::device_allocate(n);
    const int copy_line = __LINE__ + 1;
    gpu::copy_to_device_async(x.get(), host.get(), n, copy);
    host.get()[n - 1] = 3.0f;  // the next batch, written while the copy may still read this one

    SECTION("found when the host waits for the copy's stream") {
        const int wait_line = __LINE__ + 1;
        const std::string message = message_of<CudaError>([&] { copy.synchronize(); });
        CHECK_THAT(message, Contains("stream-order race on a pinned host buffer of 400 bytes: the "
                                     "host changed it while copy host to device of 400 bytes on "
                                     "stream 'copy' (" +
                                     test_site(copy_line) + ")"));
        CHECK_THAT(message, Contains("(found at " + test_site(wait_line)));
    }
    SECTION("found when the buffer is copied again") {
        const int next_line = __LINE__ + 1;
        const auto next = [&] { gpu::copy_to_device_async(x.get(), host.get(), n, copy); };
        CHECK_THAT(message_of<CudaError>(next), Contains("(found at " + test_site(next_line)));
    }
    gpu::synchronize();  // a failed check leaves nothing behind for the next test: no throw now
}

TEST_CASE("the host may refill a pinned buffer once it has waited for the copy from it",
          "[sim][streams]") {
    const gpu::Stream copy("copy");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> x = gpu::device_allocate(n);
    gpu::Event uploaded;
    for (float batch = 1.0f; batch <= 3.0f; ++batch) {
        std::fill(host.get(), host.get() + n, batch);
        gpu::copy_to_device_async(x.get(), host.get(), n, copy);
        uploaded.record(copy);
        uploaded.synchronize();  // before the host writes the buffer again
        CHECK(download(x) == std::vector<float>(n, batch));
    }
    SECTION("and a copy back into pinned memory, read after the wait, is no race either") {
        gpu::copy_to_host_async(host.get(), x.get(), n, copy);
        copy.synchronize();
        host.get()[0] = 0.0f;
        CHECK_NOTHROW(gpu::copy_to_device_async(x.get(), host.get(), n, copy));
        copy.synchronize();
    }
}

TEST_CASE("a captured graph runs nothing until launched, then its kernels at every launch",
          "[sim][streams][graphs]") {
    const gpu::Stream stream("step");
    const std::shared_ptr<float> x = upload(0.0f);
    const gpu::Graph graph = captured_add_ones(stream, x.get(), 2);
    CHECK(graph.operations() == 2);
    CHECK(download(x) == std::vector<float>(n, 0.0f));
    for (int i = 0; i < 3; ++i) graph.launch(stream);
    stream.synchronize();
    CHECK(download(x) == std::vector<float>(n, 6.0f));
}

TEST_CASE("a graph's launch is one operation of its stream for the race check",
          "[sim][streams][graphs]") {
    const gpu::Stream step("step"), other("other");
    const std::shared_ptr<float> x = upload(0.0f);
    gpu::GraphCapture capture(step);
    {
        const gpu::StreamScope scope(step);
        add_one(x.get(), n);
    }
    const gpu::Graph graph = capture.finish();
    graph.launch(step);
    const gpu::StreamScope scope(other);
    CHECK_THAT(message_of<CudaError>([&] { add_one(x.get(), n); }),
               Contains("while graph of 1 operations"));
}

TEST_CASE("a blocking call during a capture is refused, and the capture fails at its end",
          "[sim][streams][graphs]") {
    const gpu::Stream stream("step");
    const std::shared_ptr<float> x = upload(0.0f);
    std::vector<float> back(n);
    gpu::GraphCapture capture(stream);
    const int begin_line = __LINE__ - 1;
    {
        const gpu::StreamScope scope(stream);
        add_one(x.get(), n);
        const std::string refused =
            message_of<CudaError>([&] { gpu::copy_to_host(back.data(), x.get(), n); });
        CHECK_THAT(refused, Contains("Stream::synchronize"));
        CHECK_THAT(refused,
                   Contains("while stream 'step' is being captured into a graph (begun at " +
                            test_site(begin_line) + ")"));
        CHECK_THAT(refused, Contains("cudaErrorStreamCaptureUnsupported"));
        CHECK_THAT(message_of<CudaError>([] { gpu::device_allocate(4); }),
                   Contains("a device allocation (cudaMalloc) of 16 bytes while stream 'step'"));
    }
    CHECK_THAT(message_of<CudaError>([&] { capture.finish(); }),
               Contains("cudaErrorStreamCaptureInvalidated"));
    // The stream works as before.
    {
        const gpu::StreamScope scope(stream);
        add_one(x.get(), n);
    }
    stream.synchronize();
    CHECK(download(x) == std::vector<float>(n, 1.0f));
}

TEST_CASE("a stream that joins a capture by waiting must be joined back before it ends",
          "[sim][streams][graphs]") {
    const gpu::Stream main_stream("main"), side("side");
    const std::shared_ptr<float> x = upload(0.0f), y = upload(10.0f);
    gpu::Event fork, join;
    gpu::GraphCapture capture(main_stream);
    fork.record(main_stream);
    side.wait(fork);  // side's work is recorded into the graph from here on
    {
        const gpu::StreamScope scope(main_stream);
        add_one(x.get(), n);
    }
    {
        const gpu::StreamScope scope(side);
        add_one(y.get(), n);
    }
    SECTION("joined back: the graph holds both streams' kernels") {
        join.record(side);
        main_stream.wait(join);
        const gpu::Graph graph = capture.finish();
        CHECK(graph.operations() == 2);
        graph.launch(main_stream);
        main_stream.synchronize();
        CHECK(download(x) == std::vector<float>(n, 1.0f));
        CHECK(download(y) == std::vector<float>(n, 11.0f));
    }
    SECTION("not joined back") {
        CHECK_THAT(message_of<CudaError>([&] { capture.finish(); }),
                   Contains("stream 'side' joined the capture"));
    }
}

TEST_CASE(
    "a stream destroyed inside a capture it joined fails the capture unless its work was joined "
    "back",
    "[sim][streams][graphs]") {
    const gpu::Stream main_stream("main");
    const std::shared_ptr<float> x = upload(0.0f), y = upload(10.0f);
    gpu::Event fork, join;
    gpu::GraphCapture capture(main_stream);
    fork.record(main_stream);
    const bool joined_back = GENERATE(false, true);
    {
        const gpu::Stream side("side");
        side.wait(fork);
        const gpu::StreamScope scope(side);
        add_one(y.get(), n);
        if (joined_back) {
            join.record(side);
            main_stream.wait(join);
        }
    }  // side is destroyed here, the capture still open
    if (joined_back) {
        const gpu::Graph graph = capture.finish();
        CHECK(graph.operations() == 1);
        graph.launch(main_stream);
        main_stream.synchronize();
        CHECK(download(y) == std::vector<float>(n, 11.0f));
    } else {
        const std::string failed = message_of<CudaError>([&] { capture.finish(); });
        CHECK_THAT(failed, Contains("cudaErrorStreamCaptureInvalidated"));
        CHECK_THAT(failed, Contains("stream 'side' joined it and was destroyed before its last "
                                    "operations were waited for"));
    }
}

TEST_CASE("the legacy default stream cannot be captured", "[sim][streams][graphs]") {
    CHECK_THAT(
        message_of<CudaError>([] { gpu::GraphCapture capture(gpu::Stream::legacy_default()); }),
        Contains("the legacy default stream cannot be captured"));
}

TEST_CASE("a capture left by an exception is thrown away and the stream runs work again",
          "[sim][streams][graphs]") {
    const gpu::Stream stream("step");
    const std::shared_ptr<float> x = upload(0.0f);
    try {
        gpu::GraphCapture capture(stream);
        const gpu::StreamScope scope(stream);
        add_one(x.get(), n);
        throw InvalidArgument("something went wrong mid-capture");
    } catch (const InvalidArgument&) {
    }
    {
        const gpu::StreamScope scope(stream);
        add_one(x.get(), n);
    }
    stream.synchronize();
    CHECK(download(x) == std::vector<float>(n, 1.0f));  // the captured add_one never ran
}

TEST_CASE("a graph launched after a buffer it uses was freed fails instead of touching it",
          "[sim][streams][graphs]") {
    const gpu::Stream stream("step");
    std::shared_ptr<float> x = upload(0.0f);
    const gpu::Graph graph = captured_add_ones(stream, x.get(), 1);
    x.reset();
    CHECK_THAT(message_of<CudaError>([&] { graph.launch(stream); }),
               Contains("argument 0 is a host pointer"));
}

TEST_CASE("a graph that was moved from refuses to launch, naming the caller's line",
          "[sim][streams][graphs]") {
    const gpu::Stream stream("step");
    const std::shared_ptr<float> x = upload(0.0f);
    gpu::Graph graph = captured_add_ones(stream, x.get(), 1);
    const gpu::Graph moved = std::move(graph);
    CHECK(graph.operations() == 0);  // a moved-from graph: what this test is about
    const int line = __LINE__ + 1;
    const std::string message = message_of<CudaError>([&] { graph.launch(stream); });
    CHECK_THAT(message, Contains(file_and_line(__FILE__, line)) && Contains("was moved from"));
    moved.launch(stream);
    stream.synchronize();
    CHECK(download(x) == std::vector<float>(n, 1.0f));
}

TEST_CASE("the time between two events needs both recorded, and names the caller's line",
          "[sim][streams]") {
    const gpu::Stream stream("step");
    gpu::Event start, end;
    start.record(stream);
    const int line = __LINE__ + 1;
    const std::string message = message_of<CudaError>([&] { end.milliseconds_since(start); });
    CHECK_THAT(message, Contains(file_and_line(__FILE__, line)) &&
                            Contains("the end event was never recorded"));
    end.record(stream);
    CHECK(end.milliseconds_since(start) >= 0.0);
}

TEST_CASE("the trace lists every operation, record and wait with its stream, in issue order",
          "[sim][streams]") {
    const gpu::Stream copy("copy"), compute("compute");
    const std::shared_ptr<float> host = pinned(2.0f);
    const std::shared_ptr<float> x = gpu::device_allocate(n);
    gpu::Event uploaded;
    sim::streams::start_trace();
    gpu::copy_to_device_async(x.get(), host.get(), n, copy);
    const int record_line = __LINE__ + 1;
    uploaded.record(copy);
    compute.wait(uploaded);
    {
        const gpu::StreamScope scope(compute);
        add_one(x.get(), n);
    }
    compute.synchronize();
    const std::vector<sim::streams::TraceLine> trace = sim::streams::stop_trace();
    REQUIRE(trace.size() == 5);
    CHECK(trace[0].stream == "copy");
    CHECK(trace[0].what == "copy host to device of 400 bytes");
    CHECK(trace[1].what == "record event");
    CHECK(trace[1].where == test_site(record_line));
    CHECK(trace[2].stream == "compute");
    CHECK(trace[2].what == "wait for an event of stream 'copy'");
    CHECK(trace[2].where == test_site(record_line + 1));
    CHECK(trace[3].what == "kernel");
    CHECK(trace[3].where == kernel_site(add_one_launch_line));
    CHECK(trace[4].stream == "host");
    CHECK(trace[4].what == "wait for stream 'compute'");
}

}  // namespace triptych::sim_tests

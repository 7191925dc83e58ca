// Lesson 16: transfers, streams and CUDA graphs (see README.md next to this file).
//
// On gpu_tiled (in the simulator when there is no GPU):
//   1. host -> device copies of 64 KiB to 16 MiB, from ordinary (pageable) host memory and from
//      pinned memory;
//   2. LeNet trained for six steps of batch 16 four ways (the plain loop, overlapped uploads, graph
//      replay, both): each way's losses against the plain loop's, which must be the same bit for
//      bit, its time per step, and, in the simulator, the operations its fifth step issued to
//      each stream, in order (the trace);
//   3. two planted stream-order races, each first with what orders it, then without, and what the
//      simulator reports then: the next batch uploaded into the buffer a kernel on another
//      stream may still be reading; the host writing the next batch into the pinned buffer an
//      upload may still be reading.
// Exits 1 if a way's losses differ from the plain loop's (the table names the first step that
// differs), or the simulator misses a race.
//
//   lesson_16_streams_graphs [SEED]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/idx.hpp"
#include "common/nn/models.hpp"
#include "common/nn/trainer.hpp"
#include "common/registry.hpp"
#include "common/timer.hpp"
#include "lessons/lesson.hpp"

using namespace triptych;

namespace {

constexpr std::int64_t batch = 16, steps = 6;
constexpr std::int64_t traced_step = 4;  // counting from 0: a step in the steady state

// ---- 1. pinned against pageable ----------------------------------------------------------------

void print_copies(const Backend& b, const AsyncDevice& device) {
    std::printf("\nhost -> device copies on %s (%s)\n", b.name().c_str(), b.device().c_str());
    std::printf("%-10s %12s %10s %12s %10s\n", "size", "pageable", "GB/s", "pinned", "GB/s");
    const auto stream = device.stream("copy");
    const auto done = device.event();
    for (const std::int64_t kib : {64, 1024, 16384}) {
        const std::int64_t count = kib * 1024 / 4;
        const std::vector<float> pageable(std::size_t(count), 1.0f);
        const std::shared_ptr<float> pinned = device.pinned(count);
        std::fill(pinned.get(), pinned.get() + count, 1.0f);
        Tensor on_device = b.allocate(Shape{count});
        const int repeats = 5;
        b.upload(on_device, pageable);  // the first copy pays for setting up, not copying
        const Timer pageable_timer;
        for (int r = 0; r < repeats; ++r) b.upload(on_device, pageable);
        const double pageable_seconds = pageable_timer.seconds() / repeats;
        device.upload(on_device, pinned.get(), *stream);
        device.record(*done, *stream);
        device.synchronize(*done);
        const Timer pinned_timer;
        for (int r = 0; r < repeats; ++r) device.upload(on_device, pinned.get(), *stream);
        device.record(*done, *stream);
        device.synchronize(*done);
        const double pinned_seconds = pinned_timer.seconds() / repeats;
        const double bytes = 4.0 * double(count);
        std::printf(
            "%-10s %12s %10s %12s %10s\n",
            (kib < 1024 ? std::to_string(kib) + " KiB" : std::to_string(kib / 1024) + " MiB")
                .c_str(),
            lessons::time_text(pageable_seconds, b.device_kind()).c_str(),
            lessons::rate_text(bytes, pageable_seconds, b.device_kind()).c_str(),
            lessons::time_text(pinned_seconds, b.device_kind()).c_str(),
            lessons::rate_text(bytes, pinned_seconds, b.device_kind()).c_str());
    }
}

// ---- 2. one training loop, four ways -----------------------------------------------------------

struct Way {
    const char* name;
    bool overlap, graph;
};
constexpr Way ways[] = {{"plain", false, false},
                        {"overlap", true, false},
                        {"graph", false, true},
                        {"overlap+graph", true, true}};

struct Run {
    std::vector<float> losses;
    double seconds = 0;                         // the epoch's
    std::vector<AsyncDevice::TraceLine> trace;  // of step traced_step
};

Run train(const Backend& b, const Way& way, const ImageSet& data, std::uint64_t seed) {
    const auto model = nn::make_model("lenet", b, seed);
    nn::Optimizer optimizer(b, model->parameters(), {.kind = OptimizerKind::adam, .lr = 1e-3f});
    nn::Trainer trainer(*model, optimizer,
                        {.batch = batch, .seed = seed, .overlap = way.overlap, .graph = way.graph});
    const AsyncDevice& device = *b.async();
    Run run;
    // The progress callback runs after each step's loss has come back: the trace between two
    // calls is one step as the host issued it.
    std::int64_t step = 0;
    const nn::EpochResult epoch =
        trainer.train_epoch(data, 1, [&](std::int64_t, std::int64_t, float) {
            if (step == traced_step - 1) device.start_trace();
            if (step == traced_step) run.trace = device.stop_trace();
            ++step;
        });
    run.losses = epoch.losses;
    run.seconds = epoch.seconds;
    return run;
}

// A trace line's file, without its line number: the code's lines move, the files stay.
std::string file_of(const std::string& where) { return where.substr(0, where.rfind(':')); }

// The trace, each run of the same operation on the same stream from the same file on one line
// ("kernel x 9   gpu/tiled/conv2d.cu").
void print_trace(const std::vector<AsyncDevice::TraceLine>& trace) {
    const auto same_as = [](const AsyncDevice::TraceLine& a, const AsyncDevice::TraceLine& b) {
        return a.stream == b.stream && a.what == b.what && file_of(a.where) == file_of(b.where);
    };
    for (std::size_t i = 0; i < trace.size();) {
        std::size_t next = i + 1;
        while (next < trace.size() && same_as(trace[next], trace[i])) ++next;
        const std::string what =
            trace[i].what + (next - i > 1 ? " x " + std::to_string(next - i) : "");
        std::printf("  %-8s %-44s %s\n", trace[i].stream.c_str(), what.c_str(),
                    file_of(trace[i].where).c_str());
        i = next;
    }
}

bool print_ways(const Backend& b, const ImageSet& data, std::uint64_t seed) {
    std::printf("\nLeNet on %s, Adam lr 1e-3, %lld steps of batch %lld from seed %llu, four ways\n",
                b.name().c_str(), (long long)steps, (long long)batch, (unsigned long long)seed);
    std::vector<Run> runs;
    for (const Way& way : ways) runs.push_back(train(b, way, data, seed));
    std::printf("%-14s %-28s %12s  %s\n", "way", "device", "step", "losses vs the plain loop");
    bool all_same = true;
    for (std::size_t w = 0; w < runs.size(); ++w) {
        const std::vector<float>& losses = runs[w].losses;
        const std::vector<float>& plain = runs[0].losses;
        const bool same = losses == plain;
        all_same = all_same && same;
        // The first step (counted from 1) whose loss is not the plain loop's.
        const auto first = std::mismatch(losses.begin(), losses.end(), plain.begin(), plain.end());
        const std::string verdict = w == 0 ? "(the plain loop)"
                                    : same ? "PASS  the same bits at every step"
                                           : "FAIL  the losses differ from step " +
                                                 std::to_string(first.first - losses.begin() + 1) +
                                                 " on";
        std::printf("%-14s %-28s %12s  %s\n", ways[w].name, b.device().c_str(),
                    lessons::time_text(runs[w].seconds / double(steps), b.device_kind()).c_str(),
                    verdict.c_str());
    }
    std::printf("Step %lld of %lld as the host issued it, stream by stream:\n",
                (long long)traced_step + 1, (long long)steps);
    for (std::size_t w = 0; w < runs.size(); ++w) {
        std::printf("%s:\n", ways[w].name);
        if (runs[w].trace.empty())
            std::printf("  (no trace on a GPU: `nsys profile` records the real timeline)\n");
        print_trace(runs[w].trace);
    }
    return all_same;
}

// ---- 3. a planted stream-order race ------------------------------------------------------------

// Uploads a batch on a copy stream while a ReLU on the compute stream reads the previous one from
// the same buffer; `ordered` makes the copy stream wait for the ReLU first. Returns what the
// simulator reported, or "".
std::string upload_during_a_step(const Backend& b, bool ordered) {
    const AsyncDevice& device = *b.async();
    const auto compute = device.stream("compute"), copy = device.stream("copy");
    const auto uploaded = device.event(), consumed = device.event();
    const std::int64_t count = batch * 28 * 28;
    const std::shared_ptr<float> pinned = device.pinned(count);
    std::fill(pinned.get(), pinned.get() + count, 0.5f);
    Tensor images = b.allocate(Shape{count}), activations = b.allocate(Shape{count});
    b.synchronize();  // the allocations' fills are done before either stream starts

    device.upload(images, pinned.get(), *copy);  // batch i
    device.record(*uploaded, *copy);
    device.wait(*compute, *uploaded);
    device.run_on(*compute, [&] { b.activation_forward(Activation::relu, images, activations); });
    device.record(*consumed, *compute);
    try {
        if (ordered) device.wait(*copy, *consumed);
        device.upload(images, pinned.get(), *copy);  // batch i + 1, into the same buffer
    } catch (const CudaError& error) {
        b.synchronize();
        return error.what();
    }
    b.synchronize();
    return "";
}

// Uploads a batch from pinned memory, then the host gathers the next batch into the same pinned
// buffer; `ordered` makes the host wait for the upload's event first. Returns what the simulator
// reported, or "".
std::string refill_during_an_upload(const Backend& b, bool ordered) {
    const AsyncDevice& device = *b.async();
    const auto copy = device.stream("copy");
    const auto uploaded = device.event();
    const std::int64_t count = batch * 28 * 28;
    const std::shared_ptr<float> pinned = device.pinned(count);
    std::fill(pinned.get(), pinned.get() + count, 0.5f);
    Tensor images = b.allocate(Shape{count});
    b.synchronize();
    try {
        device.upload(images, pinned.get(), *copy);  // batch i
        device.record(*uploaded, *copy);
        if (ordered) device.synchronize(*uploaded);
        std::fill(pinned.get(), pinned.get() + count, 0.25f);  // batch i + 1, gathered by the host
        device.synchronize(*uploaded);
    } catch (const CudaError& error) {
        b.synchronize();
        return error.what();
    }
    return "";
}

// Prints one planted race's two runs; true when only the unordered one was reported.
bool print_planted(const Backend& b, const char* title, const char* ordered_by,
                   const std::string& with_order, const std::string& without) {
    std::printf("\n%s\n", title);
    std::printf("with %s: %s\n", ordered_by,
                with_order.empty() ? "no race reported" : with_order.c_str());
    if (b.device_kind() != DeviceKind::Simulator) {
        std::printf("without it: nothing reports the race on a GPU\n");
        return true;
    }
    std::printf("without it, the simulator reports:\n  %s\n",
                without.empty() ? "nothing (FAIL: the race went unreported)" : without.c_str());
    return with_order.empty() && !without.empty();
}

bool print_race(const Backend& b) {
    std::printf("\nThe next batch uploaded into the buffer a ReLU on another stream reads:\n");
    const std::string with_event = upload_during_a_step(b, true);
    std::printf("with the copy stream waiting for the ReLU's event: %s\n",
                with_event.empty() ? "no race reported" : with_event.c_str());
    const std::string without = upload_during_a_step(b, false);
    if (b.device_kind() != DeviceKind::Simulator) {
        std::printf(
            "without it: nothing reports the race on a GPU, where the ReLU may read part of the\n"
            "next batch now and then\n");
        return true;
    }
    std::printf("without it, the simulator reports:\n  %s\n",
                without.empty() ? "nothing (FAIL: the race went unreported)" : without.c_str());
    const bool kernel_race = with_event.empty() && !without.empty();
    const bool host_race = print_planted(
        b, "The host gathering the next batch into the pinned buffer an upload reads:",
        "the host waiting for the upload's event first", refill_during_an_upload(b, true),
        refill_during_an_upload(b, false));
    return kernel_race && host_race;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::uint64_t seed = lessons::seed_from_args(argc, argv);
        const std::vector<std::string> names = backend_names();
        if (std::find(names.begin(), names.end(), "gpu_tiled") == names.end()) {
            std::puts("no GPU to run on: this build has no GPU variant (see README.md)");
            return 0;
        }
        const Backend& b = backend("gpu_tiled");
        const bool simulated = lessons::warn_if_simulated();
        print_copies(b, *b.async());
        const FashionMnistFiles files = fashion_mnist_files();
        const ImageSet data = read_image_set(files.train_images, files.train_labels, batch * steps);
        const bool same = print_ways(b, data, seed);
        const bool reported = print_race(b);
        if (simulated) lessons::simulator_footnote();
        std::puts(same && reported ? "\nevery way gives the plain loop's losses"
                                   : "\nFAILED: see above");
        return same && reported ? 0 : 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "lesson 16: %s\n", error.what());
        return 1;
    }
}

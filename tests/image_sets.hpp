// Small labelled image sets for the training and checkpoint tests, generated from a seed so that
// every test is quick, needs no files and can be replayed.
#pragma once

#include <cstdint>
#include <vector>

#include "common/idx.hpp"
#include "common/random.hpp"

namespace triptych::testing {

// `count` images of rows x cols pixels in [0, 1), as Fashion-MNIST's are scaled, with labels
// drawn uniformly from 0-9. Each image is half its class's pattern (one random image per class)
// and half noise, so a model learns to tell them apart within tens of steps, as on real data.
inline ImageSet pattern_image_set(std::int64_t count, std::uint64_t seed, std::int64_t rows = 28,
                                  std::int64_t cols = 28) {
    const auto pixels = std::size_t(rows * cols);
    ImageSet set{count, rows, cols, std::vector<float>(std::size_t(count) * pixels),
                 std::vector<float>(std::size_t(count))};
    Rng rng(seed);
    std::vector<float> patterns(10 * pixels), noise(pixels);
    rng.uniform(patterns, 0.0f, 1.0f);
    for (std::size_t i = 0; i < std::size_t(count); ++i) {
        const std::size_t label = rng.next() % 10;
        set.labels[i] = float(label);
        rng.uniform(noise, 0.0f, 1.0f);
        for (std::size_t p = 0; p < pixels; ++p)
            set.images[i * pixels + p] = 0.5f * patterns[label * pixels + p] + 0.5f * noise[p];
    }
    return set;
}

}  // namespace triptych::testing

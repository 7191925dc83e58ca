#include "common/nn/checkpoint.hpp"

#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "common/errors.hpp"
#include "common/files.hpp"

namespace triptych::nn {

namespace {

constexpr const char* magic = "triptych-checkpoint";
constexpr int format_version = 1;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
    fail_reading(path, what);
}

// Every tensor a checkpoint holds, in file order: the model's parameters, then the optimizer's
// state.
std::vector<NamedTensor> checkpoint_tensors(Sequential& model, Optimizer& optimizer) {
    std::vector<NamedTensor> tensors = model.named_parameters();
    for (const NamedTensor& t : optimizer.state()) tensors.push_back(t);
    return tensors;
}

// "0.conv2d.W 6 1 5 5": a tensor's header line, without the newline.
std::string tensor_line(const std::string& name, const Shape& shape) {
    std::string line = name;
    for (std::int64_t d : shape.dims()) line += " " + std::to_string(d);
    return line;
}

// zlib's CRC-32 of `bytes`.
std::uint32_t checksum(std::string_view bytes) {
    return static_cast<std::uint32_t>(
        crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

// Little-endian on every host, so that a checkpoint moves between machines.
void append_u32(std::string& out, std::uint32_t v) {
    for (int byte = 0; byte < 4; ++byte) out.push_back(static_cast<char>((v >> (8 * byte)) & 0xff));
}
std::uint32_t read_u32(const char* p) {
    std::uint32_t v = 0;
    for (int byte = 3; byte >= 0; --byte) v = (v << 8) | static_cast<unsigned char>(p[byte]);
    return v;
}
// Floats as their IEEE-754 bits, so that they come back bit for bit.
void append_floats(std::string& out, std::span<const float> values) {
    for (float v : values) append_u32(out, std::bit_cast<std::uint32_t>(v));
}
std::vector<float> read_floats(const char* p, std::int64_t count) {
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& v : values) {
        v = std::bit_cast<float>(read_u32(p));
        p += 4;
    }
    return values;
}

// Header text for a message: printable ASCII as it is, any other byte as \xNN, at most 60
// characters of it (a damaged header may hold binary).
std::string shown(const std::string& text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (const char c : text.substr(0, 60)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f) {
            out += c;
        } else {
            out += std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
        }
    }
    return text.size() > 60 ? out + "..." : out;
}

// The header, line by line; every malformed or missing line is a DataError naming the file.
class HeaderReader {
public:
    HeaderReader(const std::filesystem::path& path, const std::string& bytes)
        : path_(path), bytes_(bytes) {}

    // The next line, which must start with `keyword` and a space; returns the rest of it.
    std::istringstream line(const std::string& keyword) {
        const std::string text = next_line(keyword);
        if (text.rfind(keyword + " ", 0) != 0)
            fail(path_, "header line " + std::to_string(line_number_) + " is '" + shown(text) +
                            "', expected '" + keyword + " ...'");
        return std::istringstream(text.substr(keyword.size() + 1));
    }
    // The next line as it is.
    std::string next_line(const std::string& expected) {
        const std::size_t end = bytes_.find('\n', offset_);
        if (end == std::string::npos)
            fail(path_, "the file ends inside the header, before the '" + expected +
                            "' line (truncated?)");
        std::string text = bytes_.substr(offset_, end - offset_);
        offset_ = end + 1;
        ++line_number_;
        return text;
    }
    // Reads one value from `fields` for the line just read, which must hold one.
    template <typename T>
    T value(std::istringstream& fields, const std::string& what) {
        // A stream reads "-1" into an unsigned type as 2^64 - 1: a sign there is refused first.
        if constexpr (std::is_unsigned_v<T>) {
            fields >> std::ws;
            if (fields.peek() == '-')
                fail(path_,
                     "header line " + std::to_string(line_number_) + ": " + what + " is negative");
        }
        T v{};
        if (!(fields >> v))
            fail(path_, "header line " + std::to_string(line_number_) + ": cannot read " + what);
        return v;
    }
    void expect_word(std::istringstream& fields, const std::string& word) {
        std::string got;
        if (!(fields >> got) || got != word)
            fail(path_, "header line " + std::to_string(line_number_) + ": expected '" + word +
                            "', got '" + shown(got) + "'");
    }
    // The line just read must have nothing left.
    void expect_end(std::istringstream& fields) {
        std::string extra;
        if (fields >> extra)
            fail(path_, "header line " + std::to_string(line_number_) + ": unexpected '" +
                            shown(extra) + "'");
    }
    std::size_t offset() const { return offset_; }
    int line_number() const { return line_number_; }

private:
    const std::filesystem::path& path_;
    const std::string& bytes_;
    std::size_t offset_ = 0;
    int line_number_ = 0;
};

// Fails, naming `what` and the first bad value's index, unless every value is finite (and, where
// `never_negative`, not below 0).
void check_values(const std::filesystem::path& path, const std::string& what,
                  const std::vector<float>& values, bool never_negative) {
    const auto format_float = [](float v) {
        std::ostringstream text;
        text << v;  // "nan", "inf", "-inf", "-0.25"
        return text.str();
    };
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float v = values[i];
        if (!std::isfinite(v))
            fail(path, what + " holds " + format_float(v) + " at index " + std::to_string(i) +
                           " (a checkpoint holds finite values only: damaged, or not written by "
                           "triptych train?)");
        if (never_negative && v < 0.0f)
            fail(path, what + " holds " + format_float(v) + " at index " + std::to_string(i) +
                           ", below 0, which a mean of squares never is (damaged?)");
    }
}

// A tensor as the file describes it.
struct StoredTensor {
    std::string name;
    Shape shape;
};

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const TrainingState& state,
                     Sequential& model, Optimizer& optimizer) {
    if (state.model.empty() || state.model.find_first_of(" \t\r\n") != std::string::npos)
        throw InvalidArgument("save_checkpoint: the model name '" + state.model +
                              "' must be one word");
    const std::vector<NamedTensor> tensors = checkpoint_tensors(model, optimizer);
    std::ostringstream header;
    header << magic << ' ' << format_version << '\n'
           << "model " << state.model << '\n'
           << "optimizer " << optimizer.config().str() << '\n'
           << "steps " << optimizer.steps_taken() << " epochs " << state.epochs_done << " seed "
           << state.seed << " batch " << state.batch << '\n'
           << "curve " << state.loss_curve.size() << '\n'
           << "tensors " << tensors.size() << '\n';
    for (const NamedTensor& t : tensors) header << tensor_line(t.name, t.tensor->shape()) << '\n';
    header << "data\n";

    std::string bytes = header.str();
    for (const NamedTensor& t : tensors) append_floats(bytes, model.backend().download(*t.tensor));
    append_floats(bytes, state.loss_curve);
    append_u32(bytes, checksum(bytes));

    // Written beside the target, then renamed over it: a rename within one directory replaces
    // the old file at once, so a reader sees the old checkpoint or the new one, never half of one.
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) fail(temporary, std::string("cannot create: ") + std::strerror(errno));
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            fail(temporary, "cannot write the checkpoint (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(temporary, path, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        fail(path, "cannot rename " + temporary.string() + " to it: " + ec.message());
    }
}

TrainingState load_checkpoint(const std::filesystem::path& path, const std::string& model_name,
                              Sequential& model, Optimizer& optimizer) {
    const std::vector<std::uint8_t> raw = read_whole_file(path);  // a gzipped one inflated
    const std::string bytes(raw.begin(), raw.end());

    // 1. The format and its version, before anything else is read in that format.
    const std::string prefix = std::string(magic) + " ";
    if (bytes.compare(0, prefix.size(), prefix) != 0)
        fail(path,
             "not a triptych checkpoint (it does not start with '" + std::string(magic) + "')");
    HeaderReader header(path, bytes);
    {
        std::istringstream fields = header.line(magic);
        const int version = header.value<int>(fields, "the format version");
        header.expect_end(fields);
        if (version != format_version)
            fail(path, "checkpoint format version " + std::to_string(version) +
                           ", this build reads version " + std::to_string(format_version));
    }

    // 2. The rest of the header.
    TrainingState state;
    std::int64_t steps = 0, curve = 0, count = 0;
    {
        std::istringstream fields = header.line("model");
        state.model = header.value<std::string>(fields, "the model name");
        header.expect_end(fields);
    }
    std::string stored_optimizer = header.line("optimizer").str();
    {
        std::istringstream fields = header.line("steps");
        steps = header.value<std::int64_t>(fields, "the steps taken");
        header.expect_word(fields, "epochs");
        state.epochs_done = header.value<int>(fields, "the epochs done");
        header.expect_word(fields, "seed");
        state.seed = header.value<std::uint64_t>(fields, "the seed");
        header.expect_word(fields, "batch");
        state.batch = header.value<std::int64_t>(fields, "the batch size");
        header.expect_end(fields);
        if (steps < 0) fail(path, "a negative step count, " + std::to_string(steps));
        // Far more than any run takes, and the count must still go up by one a step.
        if (steps > (std::int64_t(1) << 53))
            fail(path, "a step count of " + std::to_string(steps) + " (damaged?)");
        if (state.epochs_done < 0)
            fail(path, "a negative count of epochs done, " + std::to_string(state.epochs_done));
        if (state.batch < 1)
            fail(path, "a batch size of " + std::to_string(state.batch) + " (it is at least 1)");
    }
    // Every count below is checked against the file's size, so that a damaged header cannot ask
    // for more memory than the file could fill.
    // `what` names the count, `unit` what it counts ("the loss curve's length", "floats").
    const auto bounded = [&](std::int64_t n, const std::string& what, const std::string& unit) {
        if (n < 0) fail(path, what + " is negative, " + std::to_string(n) + " (damaged?)");
        if (n > std::int64_t(bytes.size() / 4))
            fail(path, what + ", " + std::to_string(n) + " " + unit + ", cannot fit in a file of " +
                           std::to_string(bytes.size()) + " bytes (truncated or damaged?)");
        return n;
    };
    {
        std::istringstream fields = header.line("curve");
        curve = bounded(header.value<std::int64_t>(fields, "the loss curve's length"),
                        "the loss curve's length", "floats");
        header.expect_end(fields);
        // One loss per step taken, and a checkpoint is saved at the end of an epoch.
        if (curve != steps)
            fail(path, "a loss curve of " + std::to_string(curve) + " steps, but " +
                           std::to_string(steps) + " steps taken (damaged?)");
        if (state.epochs_done == 0 && steps > 0)
            fail(path, std::to_string(steps) + " steps taken in 0 epochs done (damaged?)");
    }
    {
        std::istringstream fields = header.line("tensors");
        count = bounded(header.value<std::int64_t>(fields, "the tensor count"), "the tensor count",
                        "tensors");
        header.expect_end(fields);
    }
    std::vector<StoredTensor> stored;
    std::int64_t values = curve;  // floats after the header
    for (std::int64_t i = 0; i < count; ++i) {
        std::istringstream fields(header.next_line("tensor " + std::to_string(i)));
        StoredTensor t;
        t.name = header.value<std::string>(fields, "tensor " + std::to_string(i) + "'s name");
        std::vector<std::int64_t> dims;
        std::int64_t elements = 1;
        const std::string tensor = "tensor " + std::to_string(i) + " ('" + shown(t.name) + "')";
        for (std::int64_t d; fields >> d;) {
            dims.push_back(bounded(d, "a dimension of " + tensor, "elements"));
            elements = bounded(elements * d, "the size of " + tensor, "floats");
        }
        if (!fields.eof())  // the dimensions stopped at something that is not a number
            fail(path, "header line " + std::to_string(header.line_number()) +
                           ": a dimension of tensor " + std::to_string(i) + " is not a number");
        t.shape = Shape(std::move(dims));
        values = bounded(values + t.shape.elements(), "the data section", "floats");
        stored.push_back(std::move(t));
    }
    if (header.next_line("data") != "data")
        fail(path, "header line " + std::to_string(header.line_number()) +
                       " should be 'data' after the " + std::to_string(count) + " tensors");

    // 3. The length, then the checksum over everything before it.
    const std::size_t expected = header.offset() + 4 * std::size_t(values) + 4;
    if (bytes.size() < expected)
        fail(path, "truncated: " + std::to_string(bytes.size()) + " bytes, the header describes " +
                       std::to_string(expected));
    if (bytes.size() > expected)
        fail(path, std::to_string(bytes.size()) + " bytes, the header describes " +
                       std::to_string(expected) + ": bytes to spare after the checksum");
    const std::uint32_t stored_checksum = read_u32(bytes.data() + expected - 4);
    const std::uint32_t computed = checksum(std::string_view(bytes).substr(0, expected - 4));
    if (stored_checksum != computed) {
        std::ostringstream message;
        message << std::hex << "checksum mismatch (stored 0x" << stored_checksum << ", computed 0x"
                << computed << "): the file is damaged";
        fail(path, message.str());
    }

    // 4. That it is a checkpoint of this model and optimizer.
    if (state.model != model_name)
        fail(path, "a checkpoint of model '" + shown(state.model) + "', not '" + model_name + "'");
    if (stored_optimizer != optimizer.config().str())
        fail(path, "saved with optimizer '" + stored_optimizer + "', this run uses '" +
                       optimizer.config().str() + "'");
    const std::vector<NamedTensor> tensors = checkpoint_tensors(model, optimizer);
    if (stored.size() != tensors.size())
        fail(path, "holds " + std::to_string(stored.size()) + " tensors, the model and optimizer " +
                       "have " + std::to_string(tensors.size()));
    for (std::size_t i = 0; i < tensors.size(); ++i)
        if (stored[i].name != tensors[i].name || stored[i].shape != tensors[i].tensor->shape())
            fail(path, "tensor " + std::to_string(i) + " is '" +
                           tensor_line(stored[i].name, stored[i].shape) + "', expected '" +
                           tensor_line(tensors[i].name, tensors[i].tensor->shape()) + "'");

    // 5. The values: a run whose loss became NaN or infinite saves no checkpoint of that epoch
    // (tools/train.cpp), so every weight, state and loss is finite, and a mean of squares is
    // never negative. Anything else was written by hand or damaged where the checksum could not
    // see it, and would only come back later as a diverged run.
    const char* data = bytes.data() + header.offset();
    std::vector<std::vector<float>> loaded;
    for (const NamedTensor& t : tensors) {
        loaded.push_back(read_floats(data, t.tensor->elements()));
        data += 4 * t.tensor->elements();
        check_values(path, "tensor '" + t.name + "'", loaded.back(), t.never_negative);
    }
    state.loss_curve = read_floats(data, curve);
    check_values(path, "the loss curve", state.loss_curve, false);

    // 6. Only now, with everything checked, the model and optimizer change.
    for (std::size_t i = 0; i < tensors.size(); ++i)
        model.backend().upload(*tensors[i].tensor, loaded[i]);
    optimizer.set_steps_taken(steps);
    return state;
}

}  // namespace triptych::nn

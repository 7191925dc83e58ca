#!/usr/bin/env python3
"""PyTorch on the CPU, on the cases triptych_bench times: JSON for `triptych report --peer`.

    /usr/bin/python3 bench/pytorch_peer.py conv pool --threads 2 --out peer.json
    /usr/bin/python3 bench/pytorch_peer.py train --epochs 3 --out train.json
    /usr/bin/python3 bench/pytorch_peer.py gemm elementwise --quick     the JSON on stdout

Needs Debian's python3-torch (tools/install-deps.sh --peer): run it with /usr/bin/python3, the
interpreter that has it. Each case is named by the op and size of the triptych_bench rows it pairs
with, <op>/<variant>/<size> (`triptych_bench --benchmark_list_tests` lists them):

  group        what PyTorch runs                              op: sizes
  gemm         torch.mm, square float32 matrices              gemm: 64x64x64 .. 2048x2048x2048
  conv         conv2d with bias, forward; and forward then    conv2d_forward,
               the gradients of x, w and b (autograd)         conv2d_forward_backward: lenet_conv1,
                                                              lenet_conv2, resnet_3x3, large_11x11
  pool         max pooling (with its indices, as our argmax)  max_pool2d_forward, .._backward,
               and average pooling, forward and backward      avg_pool2d_forward, .._backward:
                                                              64x6x28x28_w2s2, 16x64x112x112_w3s2
  elementwise  relu, sigmoid, tanh, gelu of n floats in       relu_forward, sigmoid_forward,
               [-1, 1); softmax of each row of a matrix       tanh_forward, gelu_forward:
                                                              65536 .. 16777216;
                                                              softmax_forward: 4096x1000, ...
  train        an epoch of Fashion-MNIST per model, Adam      train_epoch: mlp, lenet
               (lr 1e-3), batch 64: images/s, test accuracy

The default is every group but train, whose epochs take minutes. --quick runs the sizes of
`triptych_bench --quick`, two repetitions each, so that it pairs with `triptych report --quick`:
for tests, not a measurement. PyTorch picks its own convolution algorithm, so conv2d_forward pairs
with each of our conv2d_forward_<algorithm> rows (the report takes our fastest); train_epoch pairs
with train_step, a whole epoch with one step.

The JSON, written to --out FILE (through a temporary name, renamed when complete) or to stdout:

    {"peer": "PyTorch 1.13.0a0",
     "context": {"threads": 2, "host": "myhost", "date": "2024-06-01T12:00:00+00:00",
                 "cpu": "Intel(R) Xeon(R) ...", "quick": false},
     "results": [
       {"op": "conv2d_forward", "size": "lenet_conv1", "seconds": 0.00123, "repetitions": 7},
       ...
       {"op": "train_epoch", "size": "lenet", "images_per_second": 2150.0,
        "test_accuracy": 0.8712, "epoch": 1}]}

threads: torch.get_num_threads() (--threads N sets it; else PyTorch's default). seconds: the median
of `repetitions` timed calls after warm-up calls, of wall-clock time. A train_epoch result per
model and epoch: the epoch's images (shuffling and slicing the batches included) per second, and
the accuracy on the test set after it (--limit N: the first N images of each set).

Errors (an unknown group, an empty --out, no data set for train, torch missing): one line on
stderr, exit status 1.
"""
import argparse
import datetime
import gzip
import json
import math
import os
import platform
import socket
import statistics
import struct
import sys
import tempfile
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # main() says how to install it, once the arguments are checked
    torch = None

GROUPS = ("gemm", "conv", "pool", "elementwise", "train")
DEFAULT_GROUPS = ("gemm", "conv", "pool", "elementwise")
DATA = "/usr/share/datasets/fashion-mnist"
DATA_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
              "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
BATCH = 64

# The cases of triptych_bench on the CPU, full and --quick, under the names of its rows
# (tests/report/pytorch_peer_test.py checks the --quick ones against `triptych_bench --quick`).
GEMM_SIZES = {False: (64, 128, 256, 512, 1024, 2048), True: (64, 128, 256)}
# (name, N, C, H, W, K, R = S, stride, pad)
CONV_SHAPES = {
    False: (("lenet_conv1", 64, 1, 28, 28, 6, 5, 1, 2),
            ("lenet_conv2", 64, 6, 14, 14, 16, 5, 1, 0),
            ("resnet_3x3", 16, 64, 56, 56, 64, 3, 1, 1),
            ("large_11x11", 8, 16, 64, 64, 16, 11, 1, 5)),
    True: (("small_3x3", 2, 4, 16, 16, 4, 3, 1, 1),
           ("small_5x5_stride2", 2, 3, 15, 15, 4, 5, 2, 2)),
}
# (N, C, H, W, window, stride), no padding
POOL_CASES = {False: ((64, 6, 28, 28, 2, 2), (16, 64, 112, 112, 3, 2)),
              True: ((8, 6, 28, 28, 2, 2), (2, 16, 56, 56, 3, 2))}
STREAM_SIZES = {False: (1 << 16, 1 << 20, 1 << 24), True: (1 << 16, 1 << 18)}
ROW_SHAPES = {False: ((4096, 1000), (64, 100000), (65536, 10)),
              True: ((256, 1000), (4, 100000), (16384, 10))}
MODELS = ("mlp", "lenet")


class PeerError(Exception):
    """A problem the user can act on; printed as one line."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise PeerError(message)  # one line and status 1, as every other error here


def median_seconds(fn, repetitions, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Timer:
    """Times each case and collects its result."""

    def __init__(self, quick):
        self.repetitions, self.warmup = (2, 1) if quick else (7, 2)
        self.results = []

    def time(self, op, size, fn):
        self.results.append({"op": op, "size": size,
                             "seconds": median_seconds(fn, self.repetitions, self.warmup),
                             "repetitions": self.repetitions})


# Outputs are preallocated (out=) where PyTorch's public API allows, as our rows write into
# allocated tensors: a fresh 64 MiB result would be mapped and page-faulted on every call.

def bench_gemm(timer, quick):
    for n in GEMM_SIZES[quick]:
        a, b, c = torch.rand(n, n) * 2 - 1, torch.rand(n, n) * 2 - 1, torch.empty(n, n)
        timer.time("gemm", f"{n}x{n}x{n}", lambda: torch.mm(a, b, out=c))


def bench_conv(timer, quick):
    for name, N, C, H, W, K, R, stride, pad in CONV_SHAPES[quick]:
        x = torch.randn(N, C, H, W, requires_grad=True)
        w = torch.randn(K, C, R, R, requires_grad=True)
        b = torch.randn(K, requires_grad=True)

        def forward():
            return F.conv2d(x, w, b, stride=stride, padding=pad)
        with torch.no_grad():
            timer.time("conv2d_forward", name, forward)
        dy = torch.randn_like(forward())
        timer.time("conv2d_forward_backward", name,
                   lambda: torch.autograd.grad(forward(), (x, w, b), dy))


def bench_pool(timer, quick):
    for N, C, H, W, window, stride in POOL_CASES[quick]:
        size = f"{N}x{C}x{H}x{W}_w{window}s{stride}"
        x = torch.rand(N, C, H, W, requires_grad=True)
        with torch.no_grad():
            timer.time("max_pool2d_forward", size,
                       lambda: F.max_pool2d(x, window, stride, return_indices=True))
            timer.time("avg_pool2d_forward", size, lambda: F.avg_pool2d(x, window, stride))
        # The backward alone: the forward's graph is kept and walked again on every call.
        for op, y in (("max_pool2d_backward", F.max_pool2d(x, window, stride)),
                      ("avg_pool2d_backward", F.avg_pool2d(x, window, stride))):
            dy = torch.rand_like(y)
            timer.time(op, size, lambda: torch.autograd.grad(y, x, dy, retain_graph=True))


def bench_elementwise(timer, quick):
    for n in STREAM_SIZES[quick]:
        x, y = torch.rand(n) * 2 - 1, torch.empty(n)
        timer.time("relu_forward", str(n), lambda: torch.clamp(x, min=0, out=y))
        timer.time("sigmoid_forward", str(n), lambda: torch.sigmoid(x, out=y))
        timer.time("tanh_forward", str(n), lambda: torch.tanh(x, out=y))
        # GPT-2's tanh approximation, as ours; F.gelu has no out=, so the output is allocated.
        timer.time("gelu_forward", str(n), lambda: F.gelu(x, approximate="tanh"))
    for rows, cols in ROW_SHAPES[quick]:
        x = torch.rand(rows, cols) * 2 - 1
        # torch.softmax has no public out=: its result is allocated on every call, as in a model.
        timer.time("softmax_forward", f"{rows}x{cols}", lambda: torch.softmax(x, 1))


def read_idx(path, limit):
    """A gzip-compressed IDX file (the MNIST format) as a uint8 tensor, its first `limit` items."""
    try:
        with gzip.open(path) as f:
            data = f.read()
    except (OSError, EOFError) as e:  # not gzip, or cut short
        raise PeerError(f"{path}: not a readable gzip file ({e})")
    if len(data) < 4 or data[:3] != b"\x00\x00\x08":
        raise PeerError(f"{path}: not an IDX file of unsigned bytes")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise PeerError(f"{path}: its IDX header is cut short")
    dims = struct.unpack(">" + "I" * ndim, data[4:header])
    if len(data) - header != math.prod(dims):
        raise PeerError(f"{path}: the header says {' x '.join(map(str, dims))} values, the file "
                        f"holds {len(data) - header}")
    items = torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8).reshape(dims)
    return items[:limit] if limit else items


def make_model(name):
    """The models of common/nn/models.cpp; PyTorch's own initialisation."""
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                             nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def bench_train(timer, data, epochs, limit):
    images, labels, test_images, test_labels = (read_idx(os.path.join(data, name), limit)
                                                for name in DATA_FILES)
    images = images.float().div(255).unsqueeze(1)
    test_images = test_images.float().div(255).unsqueeze(1)
    labels, test_labels = labels.long(), test_labels.long()
    for name in MODELS:
        model = make_model(name)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(1, epochs + 1):
            order = torch.randperm(len(images))
            start = time.perf_counter()
            for i in range(0, len(images), BATCH):
                batch = order[i:i + BATCH]
                loss = F.cross_entropy(model(images[batch]), labels[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            seconds = time.perf_counter() - start
            with torch.no_grad():
                accuracy = (model(test_images).argmax(1) == test_labels).float().mean().item()
            timer.results.append({"op": "train_epoch", "size": name,
                                  "images_per_second": len(images) / seconds,
                                  "test_accuracy": accuracy, "epoch": epoch})


BENCHES = {"gemm": bench_gemm, "conv": bench_conv, "pool": bench_pool,
           "elementwise": bench_elementwise}


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_json(doc, out):
    text = json.dumps(doc, indent=1) + "\n"
    if not out:
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(out))
    fd, staging = tempfile.mkstemp(prefix=f".{os.path.basename(out)}.tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(staging, 0o666 & ~mask)  # mkstemp's 0600 would hide the file from others
        os.replace(staging, out)
    except BaseException:
        os.unlink(staging)
        raise


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number")
    return int(text)


def thread_count(text):
    """A positive number of threads, at most 4096 (torch.set_num_threads takes a C int, and
    100,000 threads only wait for each other)."""
    count = positive(text)
    if count > 4096:
        raise argparse.ArgumentTypeError(f"'{text}' threads is more than 4096")
    return count


def parse_args(argv):
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP",
                        help=f"what to time: {', '.join(GROUPS)} (default: all but train)")
    parser.add_argument("--threads", type=thread_count, help="torch.set_num_threads(N)")
    parser.add_argument("--quick", action="store_true",
                        help="the sizes of triptych_bench --quick, 2 repetitions: for tests")
    parser.add_argument("--epochs", type=positive, default=1, help="train: epochs per model")
    parser.add_argument("--limit", type=positive, help="train: only the first N images of each set")
    parser.add_argument("--data", default=DATA, help=f"train: the Fashion-MNIST directory ({DATA})")
    parser.add_argument("--out", metavar="FILE", help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    if args.out == "":  # else taken for no --out: the JSON would go to stdout, unasked
        parser.error("--out '' names no file (leave --out out to write the JSON to stdout)")
    for group in args.groups:
        if group not in GROUPS:
            raise PeerError(f"unknown group '{group}' (the groups: {', '.join(GROUPS)})")
    args.groups = [g for g in GROUPS if g in (args.groups or DEFAULT_GROUPS)]
    if "train" in args.groups:
        missing = [n for n in DATA_FILES if not os.path.isfile(os.path.join(args.data, n))]
        if missing:
            raise PeerError(f"no Fashion-MNIST in {args.data} ({missing[0]} is missing): "
                            "install it with tools/install-deps.sh, or pass --data DIR")
    # Refused before the timings, which take minutes.
    if args.out and os.path.isdir(args.out):
        raise PeerError(f"--out {args.out} is a directory")
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        raise PeerError(f"--out {args.out}: its directory does not exist")
    if args.out and not os.access(os.path.dirname(os.path.abspath(args.out)), os.W_OK | os.X_OK):
        raise PeerError(f"--out {args.out}: its directory cannot be written in")
    return args


def main(argv):
    try:
        args = parse_args(argv)
        if torch is None:
            raise PeerError(f"PyTorch is not installed for {sys.executable}: install Debian's "
                            "python3-torch with tools/install-deps.sh --peer, then run this with "
                            "/usr/bin/python3")
        if args.threads:
            torch.set_num_threads(args.threads)
        torch.manual_seed(0)
        timer = Timer(args.quick)
        for group in args.groups:
            if group == "train":
                bench_train(timer, args.data, args.epochs, args.limit)
            else:
                BENCHES[group](timer, args.quick)
        write_json({"peer": f"PyTorch {torch.__version__}",
                    "context": {"threads": torch.get_num_threads(), "host": socket.gethostname(),
                                "date": datetime.datetime.now().astimezone().isoformat(
                                    timespec="seconds"),
                                "cpu": cpu_name(), "quick": args.quick},
                    "results": timer.results}, args.out)
    except PeerError as e:
        print(f"pytorch_peer.py: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"pytorch_peer.py: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

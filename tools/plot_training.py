#!/usr/bin/env python3
"""Draws the loss curve `triptych train` wrote as CSV into a PNG.

    plot_training.py --csv training/mlp_cpu_eigen_omp.csv --out curve.png --title "mlp on ..."

The CSV has a header `step,epoch,loss` and one line per training step. The chart shows every
step's loss (thin, noisy: one batch each), each epoch's mean loss (a level line across the
epoch's steps) and the epoch boundaries. `triptych train` runs this with the Python the build found and
gives --out a temporary name that it renames once the chart is complete. Errors: one line on
stderr, exit status 1. Standard library and matplotlib (Agg backend: no display needed).
"""
import argparse
import csv
import os
import sys

from lesson_files import replace_file


class PlotError(Exception):
    """A problem the user can act on; printed as one line."""


def read_curve(path):
    """[(step, epoch, loss)] from the CSV, in step order."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise PlotError(f"cannot read {path}: {e.strerror}")
    if not rows or rows[0] != ["step", "epoch", "loss"]:
        raise PlotError(f"{path} is not a training curve (no header step,epoch,loss)")
    curve = []
    for number, row in enumerate(rows[1:], start=2):
        try:
            step, epoch, loss = int(row[0]), int(row[1]), float(row[2])
        except (IndexError, ValueError):
            raise PlotError(f"{path}, line {number}: expected step,epoch,loss, got {row}")
        curve.append((step, epoch, loss))
    if not curve:
        raise PlotError(f"{path} holds no steps")
    return curve


def epoch_means(curve):
    """{epoch: (its first step, its last step, the mean of its steps' losses)}."""
    steps = {}
    for step, epoch, loss in curve:
        steps.setdefault(epoch, []).append((step, loss))
    return {e: (min(s for s, _ in pts), max(s for s, _ in pts), sum(l for _, l in pts) / len(pts))
            for e, pts in steps.items()}


def draw(curve, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot([s for s, _, _ in curve], [l for _, _, l in curve], linewidth=0.6, alpha=0.5,
            label="loss of each step (one batch)")
    means = epoch_means(curve)
    for i, (epoch, (first, last, mean)) in enumerate(sorted(means.items())):
        ax.hlines(mean, first, last, colors="tab:orange", linewidth=2,
                  label="mean loss of each epoch" if i == 0 else None)
        if len(means) <= 8:  # more labels would overlap
            ax.annotate(f"epoch {epoch}: {mean:.3f}", ((first + last) / 2, mean),
                        textcoords="offset points", xytext=(0, 6), ha="center",
                        fontsize="small")
        if i > 0:
            ax.axvline(first - 0.5, color="gray", linewidth=0.5, alpha=0.5)
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    # Drawn under a name of its own beside `out`, then renamed over it: a failed write (a full
    # disk) leaves the old chart whole, and no partial file.
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise PlotError(f"{out}: directory {folder} does not exist")
    try:
        replace_file(out, lambda temporary: fig.savefig(temporary, dpi=110, format="png"),
                     suffix=".png")
    finally:
        plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", required=True, help="the curve written by triptych train")
    parser.add_argument("--out", required=True, help="the PNG to write")
    parser.add_argument("--title", default="training loss")
    args = parser.parse_args(argv)
    try:
        draw(read_curve(args.csv), args.out, args.title)
    except PlotError as e:
        print(f"plot_training.py: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"plot_training.py: {e.filename or args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as e:
        print(f"plot_training.py: {args.csv}: not a text file ({e.reason})", file=sys.stderr)
        return 1
    except ValueError as e:  # matplotlib's: a --title its mathtext cannot parse, for one
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        print(f"plot_training.py: cannot draw the chart: {lines[-1] if lines else repr(e)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

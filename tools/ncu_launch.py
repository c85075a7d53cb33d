#!/usr/bin/env python3
"""torch's and kplay's element-wise kernels side by side under Nsight Compute: launch shape (block,
grid, registers), occupancy, duration and DRAM throughput, for rows where the perf table
(tools/perf_table.py) shows kplay behind torch with the same formula or the same launch shape.
docs/benchmarks.md ("H200", launch shape at 2^24) quotes its output.

    ncu --clock-control none --section LaunchStats --section Occupancy --section SpeedOfLight --csv \\
        python3 tools/ncu_launch.py run --acts 'logsigmoid;mish' --n 16777216 > ncu.csv
    python3 tools/ncu_launch.py summary ncu.csv

run: each activation's forward and backward in float32, torch's (its autograd backward, the
function perf_table.py compares with) and kplay's (backward from the input; the shipped tunings
unless KPLAY_DB holds one), twice: ncu profiles every launch, the summary keeps the
last of each kernel name (the first ran cold). summary: one line per kernel, no GPU needed.
"""
import argparse
import csv
import re
import sys

METRICS = {  # Nsight Compute's metric name: the column printed
    "Duration": "duration",
    "Registers Per Thread": "regs",
    "Theoretical Occupancy": "occ_theory_%",
    "Achieved Occupancy": "occ_%",
    "DRAM Throughput": "dram_%",
    "Compute (SM) Throughput": "sm_%",
}


def run(acts, n):
    import os

    import torch

    import kplay

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from perf_table import torch_fn  # the torch callable of an activation text, its parameters too

    fns = {act: torch_fn(act) for act in acts}
    missing = [act for act, fn in fns.items() if fn is None]
    if missing:
        sys.exit("ncu_launch.py: torch has no function for %s" % ", ".join(missing))
    x = torch.randn(n, device="cuda") * 3
    g = torch.randn(n, device="cuda")
    for _ in range(2):
        for act, fn in fns.items():
            fn(x)
            kplay.forward(act, x)
            xr = x.detach().requires_grad_(True)
            torch.autograd.grad(fn(xr), xr, g)
            kplay.backward(act, g, x)
    torch.cuda.synchronize()


def short_name(kernel):
    """kplay's entry name, or the functor torch's templated kernel is instantiated with."""
    m = re.search(r"kplay_\w+", kernel)
    if m:
        return m.group(0)
    inner = kernel.split("<", 1)[1] if "<" in kernel else kernel  # past the template's own name
    for pattern in (r"launch_\w+", r"<unnamed>::(\w+)", r"\w+Functor"):
        m = re.search(pattern, inner)
        if m:
            return "torch " + m.group(m.lastindex or 0)
    return "torch " + kernel[:60]


def summary(path):
    """{kernel: {"launch": (block, grid), column: value, ...}}, from the last launch of each kernel
    name in the CSV."""
    kernels = {}
    with open(path, newline="") as f:
        for row in csv.reader(line for line in f if line.startswith('"')):
            if row[0] == "ID" or len(row) < 15 or row[12] not in METRICS:
                continue
            entry = kernels.setdefault(short_name(row[4]), {})
            entry["launch"] = (row[7], row[8])  # a later launch's rows overwrite the cold one's
            value = row[14].replace(",", "")
            entry[METRICS[row[12]]] = value + " " + row[13] if row[12] == "Duration" else value
    return kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--acts", default="logsigmoid;mish", help="';'-separated activation texts as kplay takes them")
    r.add_argument("--n", type=int, default=1 << 24)
    s = sub.add_parser("summary")
    s.add_argument("csv")
    a = ap.parse_args()
    if a.mode == "run":
        run([t for t in a.acts.split(";") if t], a.n)
        return 0
    kernels = summary(a.csv)
    if not kernels:
        sys.exit("ncu_launch.py: no kernel metrics in %s (was it written by ncu --csv with the sections above?)" % a.csv)
    print("%-58s %-12s %-14s %s" % ("kernel", "block", "grid", " ".join(METRICS.values())))
    for name, e in kernels.items():
        block, grid = e["launch"]
        print("%-58s %-12s %-14s %s" % (name[:58], block, grid, " ".join("%*s" % (len(c), e.get(c, "-"))
                                                                            for c in METRICS.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Issue 9's goal, read off perf_table.py outputs: which rows kplay's untuned default loses to torch.

For each file: the forward rows and the SELU/GELU backward rows (the issue's goal) where kplay's
median time is longer than torch's (its ratio to copy below), then the other backward rows below torch, then rows that failed.
With --paired: for rows present in every file, kplay minus torch per file, side by side (how a
row moves between tables, e.g. --output allocated against preallocated).

Usage: perf_table_gaps.py [--paired] TABLE.tsv [TABLE.tsv ...]
"""
import signal
import sys

GOAL_BACKWARD = ("selu", "gelu", "gelu(approximate=tanh)")


def read_rows(path):
    """{(act, dir, dtype): (kplay_pct, torch_pct, wins, kplay_ms, torch_ms)} and the error lines."""
    rows, errors = {}, []
    with open(path) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 4 or cols[0] == "ACT" or line.startswith("device:"):
                continue
            key = tuple(cols[:3])
            if cols[3].startswith("ERROR"):
                errors.append("%s %s %s: %s" % (key + (cols[3],)))
                continue
            try:
                wins = int(cols[5].split("/")[0])
                rows[key] = (float(cols[3]), float(cols[4]), wins, float(cols[6]), float(cols[7]))
            except (ValueError, IndexError):
                continue
    return rows, errors


def slower(v):
    """kplay below torch: compared on the medians' times, which the rounded ratios can hide."""
    return v[3] > v[4]


def describe(key, v):
    return "%s %s %s %.1f / %.1f (%d)" % (key[0], key[1], key[2], v[0], v[1], v[2])


def report(path):
    rows, errors = read_rows(path)
    goal = [k for k in rows if k[1] == "forward" or k[0] in GOAL_BACKWARD]
    below = sorted(k for k in goal if slower(rows[k]))
    other = sorted(k for k in rows if k not in goal and slower(rows[k]))
    print("== %s: %d rows, %d of them the issue's goal" % (path, len(rows), len(goal)))
    print("goal rows below torch: %d of %d" % (len(below), len(goal)))
    for k in below:
        print("  " + describe(k, rows[k]))
    print("other backward rows below torch: %d" % len(other))
    for k in other:
        print("  " + describe(k, rows[k]))
    for e in errors:
        print("  failed: " + e)


def paired(paths):
    tables = [read_rows(p)[0] for p in paths]
    keys = sorted(set.intersection(*(set(t) for t in tables)))
    print("== kplay minus torch, points: " + " | ".join(paths))
    for k in keys:
        print("%-42s %s" % (" ".join(k), " ".join("%+5.1f" % (t[k][0] - t[k][1]) for t in tables)))


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return
    args = [a for a in argv if a != "--paired"]
    unknown = [a for a in args if a.startswith("-")]
    if unknown or not args:
        sys.exit("%s%s" % ("unknown option: %s\n" % unknown[0] if unknown else "", __doc__))
    for p in args:
        report(p)
    if "--paired" in argv and len(args) > 1:
        paired(args)


if __name__ == "__main__":
    # A reader that stops early (head, sed q) ends the script quietly, as for other filters.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main(sys.argv[1:])

"""Charts of kplay's tuning results and benchmarks (matplotlib), as PNG and SVG.

    python -m kplay.plot tuning [--db PATH] [--out DIR]
        one chart per tuning record of the database: time of every candidate (sorted), and the
        best time per value of each knob (vec, block, per_thread, grid, cache, fast_math).
    python -m kplay.plot bench SWEEP.csv|SWEEP.json [--out DIR]
    python -m kplay.plot bench --db [PATH]
        bandwidth against size, kplay against copy (and torch when the sweep has it), one chart
        per (activation, dtype, direction).

From the database, both charts need tuning records (kplay autotune, kplay.autotune): they are
the only place timings are kept; the compiled kernels that launches store carry none. With no
record, or nothing to draw, the command says what is missing and exits with status 1.

Sweep files (from `kplay bench`) are read tolerantly: a CSV with a header, or JSON (a list of
objects, or {"results": [...]}), one row per measurement. Columns used (others are ignored):
    activation, dtype, direction, n           (n: elements; also accepted: size, elements)
    kernel_gbps, copy_gbps, torch_gbps        (GB/s; or derived from kernel_ms / copy_ms /
                                               torch_ms and the bytes moved: 2 * n * dtype size,
                                               3 * n for backward)
Missing activation/dtype/direction default to "?", "f32", "forward"; rows without n are skipped.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import defaultdict
from typing import Any, Dict, Iterable, List, Optional

_SIZES = {"f32": 4, "float32": 4, "f16": 2, "float16": 2, "bf16": 2, "bfloat16": 2, "f64": 8, "float64": 8}


def _num(v: Any) -> Optional[float]:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f else None  # NaN -> None


def read_sweep(path: str) -> List[Dict[str, Any]]:
    """Rows of a bench sweep (CSV or JSON) normalized to activation, dtype, direction, n and the
    GB/s of kernel, copy and torch (None where absent)."""
    with open(path, newline="") as f:
        text = f.read()
    if text.lstrip().startswith(("[", "{")):
        doc = json.loads(text)
        raw = doc.get("results", doc.get("rows", [])) if isinstance(doc, dict) else doc
    else:
        raw = list(csv.DictReader(text.splitlines()))
    return normalize_rows(raw)


def normalize_rows(raw: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    rows = []
    for r in raw:
        r = {str(k).strip().lower(): v for k, v in r.items() if k is not None}
        n = _num(r.get("n", r.get("size", r.get("elements"))))
        if n is None or n <= 0:
            continue
        dtype = str(r.get("dtype") or "f32").strip()
        direction = str(r.get("direction") or "forward").strip()
        nbytes = n * _SIZES.get(dtype, 4) * (3 if direction == "backward" else 2)
        row = {"activation": str(r.get("activation") or "?").strip(), "dtype": dtype, "direction": direction,
               "n": int(n)}
        for who in ("kernel", "copy", "torch"):
            gbps = _num(r.get(f"{who}_gbps"))
            ms = _num(r.get(f"{who}_ms"))
            if gbps is None and ms:
                gbps = nbytes / (ms * 1e-3) / 1e9
            row[f"{who}_gbps"] = gbps
        rows.append(row)
    return rows


def rows_from_database(db: str = "") -> List[Dict[str, Any]]:
    """Bandwidth rows from the tuning records: the best kernel and the same-run copy per size."""
    from .database import db_tunings

    rows = []
    for t in db_tunings(db):
        spec = t.get("spec", {})
        rows.append({"activation": spec.get("activation", "?"), "dtype": spec.get("dtype", "f32"),
                     "direction": spec.get("direction", "forward"), "n": int(t.get("n", 0)),
                     "kernel_gbps": t.get("best_gbps"), "copy_gbps": t.get("copy_gbps"), "torch_gbps": None})
    return [r for r in rows if r["n"] > 0]


def _has_data(row: Dict[str, Any]) -> bool:
    return any(row.get(f"{who}_gbps") for who in ("kernel", "copy", "torch"))


def _no_tunings(db: str) -> str:
    """Why a database gives no chart: timings live only in tuning records; compiled kernels
    (what launches store) carry none."""
    from .database import db_path, db_stats

    stats = db_stats(db)
    return (f"nothing to plot: the kernel database {db_path(db)} has no tuning records (it holds "
            f"{stats['binaries']} compiled kernels, which carry no timings). Tune the sizes to chart first, "
            "e.g. `kplay autotune --act selu --n 1048576` or kplay.autotune('selu', 1 << 20), or plot a "
            "`kplay bench` sweep: python -m kplay.plot bench SWEEP.csv")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        sys.exit("kplay.plot needs matplotlib: pip install matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out_dir: str, stem: str, formats: Iterable[str]) -> List[str]:
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for fmt in formats:
        p = os.path.join(out_dir, f"{stem}.{fmt}")
        fig.savefig(p, bbox_inches="tight")
        paths.append(p)
    return paths


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in s)


def plot_bandwidth(rows: List[Dict[str, Any]], out_dir: str, formats=("png", "svg")) -> List[str]:
    """One bandwidth-vs-size chart per (activation, dtype, direction); returns the files written."""
    plt = _pyplot()
    groups: Dict[tuple, List[Dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["activation"], r["dtype"], r["direction"])].append(r)
    written = []
    for (act, dtype, direction), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r["n"])
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for who, style in (("kernel", "o-"), ("copy", "s--"), ("torch", "^:")):
            pts = [(r["n"], r[f"{who}_gbps"]) for r in rs if r.get(f"{who}_gbps")]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label="kplay" if who == "kernel" else who)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("elements")
        ax.set_ylabel("GB/s")
        ax.set_title(f"{act} {direction} {dtype}: bandwidth vs size")
        ax.grid(True, alpha=0.3)
        ax.legend()
        written += _save(fig, out_dir, _safe(f"bandwidth_{act}_{direction}_{dtype}"), formats)
        plt.close(fig)
    return written


_KNOBS = ("vec", "block", "per_thread", "grid", "waves", "cache", "fast_math")


def plot_tuning(tunings: List[Dict[str, Any]], out_dir: str, formats=("png", "svg")) -> List[str]:
    """Per tuning record: every candidate's time (sorted) and the best time per knob value."""
    plt = _pyplot()
    written = []
    for t in tunings:
        spec = t.get("spec", {})
        cands = [c for c in t.get("candidates", []) if c.get("ok") and c.get("median_ms")]
        if not cands:
            continue
        label = f"{spec.get('activation', '?')} {spec.get('direction', '')} {spec.get('dtype', '')} n={t.get('n')}"
        knobs = [k for k in _KNOBS if len({str(c.get('config', {}).get(k)) for c in cands}) > 1]
        fig, axes = plt.subplots(1, 1 + len(knobs), figsize=(4 + 3 * len(knobs), 4), squeeze=False)
        ax = axes[0][0]
        times = sorted(c["median_ms"] for c in cands)
        ax.plot(range(len(times)), times, ".-")
        if t.get("best_ms"):
            ax.axhline(t["best_ms"], color="green", lw=0.8, label="chosen")
            ax.legend()
        ax.set_xlabel("candidate (sorted)")
        ax.set_ylabel("median ms")
        ax.set_title(label)
        for ax, knob in zip(axes[0][1:], knobs):
            best: Dict[str, float] = {}
            for c in cands:
                v = str(c.get("config", {}).get(knob))
                best[v] = min(best.get(v, float("inf")), c["median_ms"])
            keys = sorted(best, key=lambda v: (_num(v) is None, _num(v) or 0, v))
            ax.bar(keys, [best[k] for k in keys])
            ax.set_xlabel(knob)
            ax.set_ylabel("best ms")
        fig.tight_layout()
        stem = f"tuning_{spec.get('activation')}_{spec.get('direction')}_{spec.get('dtype')}_{t.get('n')}"
        written += _save(fig, out_dir, _safe(stem), formats)
        plt.close(fig)
    return written


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kplay.plot", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tuning", help="candidates and knobs of every tuning record in the database")
    t.add_argument("--db", default="", help="database file (default: kplay's)")
    b = sub.add_parser("bench", help="bandwidth vs size from a kplay bench sweep or the database")
    b.add_argument("sweep", nargs="?", help="CSV or JSON written by kplay bench")
    b.add_argument("--db", nargs="?", const="", default=None, help="use the database's tuning records instead")
    for p in (t, b):
        p.add_argument("--out", default="kplay-plots", help="output folder (default: kplay-plots)")
        p.add_argument("--format", default="png,svg", help="comma-separated: png,svg,pdf")
    args = ap.parse_args(argv)
    formats = [f for f in args.format.split(",") if f]
    if args.what == "tuning":
        from .database import db_tunings

        tunings = db_tunings(args.db)
        if not tunings:
            print(_no_tunings(args.db), file=sys.stderr)
            return 1
        files = plot_tuning(tunings, args.out, formats)
        what = "no tuning record has a successful candidate with a time"
    else:
        if args.sweep is None and args.db is None:
            ap.error("bench needs a sweep file or --db")
        if args.sweep:
            rows = read_sweep(args.sweep)
            what = f"{args.sweep} has no row with n and a kernel, copy or torch time or bandwidth"
        else:
            rows = rows_from_database(args.db)
            if not rows:
                print(_no_tunings(args.db), file=sys.stderr)
                return 1
            what = "no tuning record has a size and a bandwidth"
        files = plot_bandwidth([r for r in rows if _has_data(r)], args.out, formats)
    if not files:
        print(f"nothing to plot: {what}", file=sys.stderr)
        return 1
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

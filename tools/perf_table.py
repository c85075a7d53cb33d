#!/usr/bin/env python3
"""kplay against torch and a device-to-device copy, in one process, for every activation x dtype x
direction: the performance table. Needs the kplay Python package and torch with CUDA; the
activations of "all" come from the kplay CLI (`kplay list --texts`: --kplay, else $KPLAY_CLI, else
build/kplay, else kplay on PATH).

Each case times kplay (its untuned default unless KPLAY_DB holds a tuning), torch, and a copy of
the same bytes, interleaved (kplay, torch, copy, kplay, ...; --order), median of --repeat after
--warmup, with CUDA events. --output allocated (the default): each of the three allocates its
output as a user's call does (kplay.forward(act, x), torch's own call, x.clone()), so torch's
caching allocator hands all three the same block. --output preallocated: kplay and the copy write
one buffer made up front while torch writes its own. Where the output lies against the input moves
a kernel's time by up to a point on an H100 (run the table with each --output and compare them with
--gaps --paired), so preallocated compares placements as much as kernels. Ratios are bandwidth over
the copy's: forward moves 2 streams like the copy, backward 3 (grad, saved, grad_in), so its ratio
is 1.5 x copy_ms / kernel_ms. torch's backward is timed as its autograd backward alone (the
forward is run before the timed region); kplay's backward reads the tensor torch's autograd reads
(TORCH_SAVES_OUTPUT: the output for relu, sigmoid and tanh, the input otherwise), so that both read
the same bytes in the same cache state (at 2^20 elements a tensor the other calls of the round
just read sits in L2, and one made earlier may not).

Prints one tab-separated row per case: ACT DIR DTYPE KPLAY_% TORCH_% WINS KPLAY_MS TORCH_MS COPY_MS
DIFF_TORCH_ULP SM_MHZ SM_MHZ_MIN POWER_W CAPPED_%.
WINS: in how many of the --repeat interleaved rounds kplay's kernel took less time than torch's; a
gap of a few tenths between the medians with WINS near half the rounds is noise, not a loss.
DIFF_TORCH_ULP: the largest difference between kplay and torch on the first million elements, in
ulps of torch's result. A guard against a wrong table, not kplay's error: where torch's formula
cancels (gelu's 1 + erf for x < 0 in float32) it is torch's error. `kplay check` measures kplay's.
SM_MHZ, SM_MHZ_MIN, POWER_W, CAPPED_%: while the case's rounds ran (kplay, torch and copy together),
the median and lowest SM clock, the highest power draw, and the share of samples with a power or
thermal clock limit active (nvidia-smi sampled every 50 ms; "-" without nvidia-smi). A row
measured under the cap is a different finding from one at full clock: on an H200 the FP64-heavy
rows (float64, and float32 on its double path) reach the 700 W limit and run at 1400-1750 MHz
(`perf_table.py --dtypes f64` there shows it in these columns).

Other modes:
  --gaps TABLE.tsv ... [--paired]  read saved tables (no GPU): per file, the rows where kplay's median
      time is longer than torch's, marked "lost" where kplay is more than 0.3 points below torch and
      won fewer than half the rounds, then the failed rows; --paired: for the rows in every file,
      kplay minus torch (percentage points) per file side by side, and how far torch's own ratio
      moved between the files (the spread between runs: torch's kernels are the same in each).
  --pin 'block|per_thread[|vec[|waves[|cache[|knobs]]]]' (repeatable) [--rounds N]: launch configs
      against torch in one process each, without a new build: each config is stored as the tuning
      record of every case in a private database, and the table runs once per config with KPLAY_DB
      pointing at it, the untuned default first, N rounds alternated. vec: elements per access
      (default 16 bytes); waves: grid-stride with that many waves (default one-shot); cache: default
      or streaming; knobs: '+'-separated, of general (the general kernel only) and late (backward:
      the gradient loaded late).

Usage: perf_table.py [--acts 'all;gelu(approximate=tanh)'] [--dtypes f32,f16,bf16,f64]
                     [--directions forward,backward] [--shape 4096x393216] [--repeat 15] [--warmup 3]
                     [--order kplay-first|torch-first|alternate] [--timing idle|queued]
                     [--output allocated|preallocated] [--batch K] [--kplay CLI] [--pin CONFIG ... [--rounds N]]
       perf_table.py --gaps [--paired] TABLE.tsv [TABLE.tsv ...]
--acts: ';'-separated activation texts as kplay takes them (commas separate parameters); "all" is
every line of `kplay list --texts`. The default adds gelu(approximate=tanh), the one built-in whose
parameter selects a different formula (and kernel) rather than a constant.
--batch K: K calls back to back between each round's two events, timed as their mean (default 1).
At 2^20 elements a kernel takes 2-3 µs and a call 3-5 µs, near the events' resolution of about half
a microsecond: one call per interval reads such rows in steps of several points, and --batch 10
resolves them; at larger sizes it changes little.
"""
import argparse
import copy
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPS = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f64": 2.0 ** -52}
WIDEST = {"f16": 8, "bf16": 8, "f32": 4, "f64": 2}  # elements of one 16-byte access


# ---------------------------------------------------------------------------------------------
# The activation list, from the kplay CLI

def kplay_cli(path=None):
    """The kplay CLI: the given path, $KPLAY_CLI, build/kplay of this checkout, or kplay on PATH."""
    for p in (path, os.environ.get("KPLAY_CLI"), os.path.join(ROOT, "build", "kplay"), shutil.which("kplay")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def activation_texts(acts_arg, cli_path=None):
    """--acts text -> kplay activation texts; "all" expands to `kplay list --texts` (one text per line)."""
    out = []
    for item in (v.strip() for v in acts_arg.split(";")):
        if item == "all":
            cli = kplay_cli(cli_path)
            if cli is None:
                sys.exit("perf_table.py: --acts all needs the kplay CLI (`kplay list --texts`): pass --kplay or set KPLAY_CLI")
            r = subprocess.run([cli, "list", "--texts"], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("perf_table.py: `%s list --texts` failed: %s" % (cli, r.stderr.strip()))
            out += [v.strip() for v in r.stdout.splitlines() if v.strip()]
        elif item:
            out.append(item)
    return list(dict.fromkeys(out))  # each once, in order


# ---------------------------------------------------------------------------------------------
# Clock and power while a case runs

# nvidia-smi's clocks_event_reasons bits: SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
POWER_OR_THERMAL = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


class ClockMonitor:
    """The GPU's SM clock, power draw and clock-limit reasons, sampled in the background by
    `nvidia-smi -lms` (no Python dependency); where it is missing or fails, summary() is None."""

    def __init__(self, gpu=None, period_ms=50):
        """gpu: what `nvidia-smi -i` accepts (an index, a UUID as GPU-..., a PCI bus id); None: GPU 0."""
        self.samples = []  # (time.monotonic(), sm_mhz, power_w, reasons)
        self._lock = threading.Lock()
        cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active",
               "--format=csv,noheader,nounits", "-lms", str(period_ms), "-i", str(gpu if gpu is not None else 0)]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self._proc = None
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                sample = (time.monotonic(), int(parts[0]), float(parts[1]), int(parts[2], 16))
            except (ValueError, IndexError):
                continue  # a header or "[N/A]": skip the line, keep sampling
            with self._lock:
                self.samples.append(sample)

    def summary(self, t0, t1):
        """Between two time.monotonic() readings: (median SM MHz, lowest SM MHz, highest W, share of
        samples with a power or thermal limit active), or None when no sample fell in the window."""
        with self._lock:
            w = [s for s in self.samples if t0 <= s[0] <= t1]
        if not w:
            return None
        clocks = sorted(s[1] for s in w)
        capped = sum(1 for s in w if s[3] & POWER_OR_THERMAL) / len(w)
        return clocks[len(clocks) // 2], clocks[0], max(s[2] for s in w), capped

    def close(self):
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()


# ---------------------------------------------------------------------------------------------
# The table

def torch_fn(spec):
    """kplay activation text, e.g. "softplus(beta=2, threshold=10)", -> the torch callable with the same
    parameters (kplay names its parameters as torch.nn.functional does)."""
    import torch
    import torch.nn.functional as F

    name, _, rest = spec.partition("(")
    name = name.strip()
    fn = {"sigmoid": torch.sigmoid, "tanh": torch.tanh}.get(name) or getattr(F, name, None)
    if fn is None or name.startswith("_"):
        return None  # a built-in torch lacks: no torch column to compare with
    kw = {}
    for item in filter(None, (v.strip() for v in rest.rstrip(")").split(","))):
        key, eq, val = item.partition("=")
        if not eq:
            sys.exit("perf_table.py: parameter %r of %r is not key=value" % (item, spec))
        if key.strip() == "accuracy":
            continue  # kplay's own (accuracy=torch): torch's function has one accuracy
        try:
            kw[key.strip()] = float(val)
        except ValueError:
            kw[key.strip()] = val.strip()
    return lambda x: fn(x, **kw)


ORDERS = {
    # the order of n callables in each round, by round number: kplay is 0, torch 1, then the rest
    # (the copy last)
    "kplay-first": lambda it, n: range(n),
    "torch-first": lambda it, n: (1, 0, *range(2, n)),
    # each of kplay and torch follows the copy in one round and the other in the next
    "alternate": lambda it, n: range(n) if it % 2 == 0 else (1, 0, *range(2, n)),
}


# --timing queued: a spin of this many SM cycles (0.5-0.7 ms) ahead of each timed call, longer
# than any call's host time, so the call is queued before its start event fires.
QUEUE_CYCLES = 1_000_000


def interleaved_ms(fns, warmup, repeat, order="kplay-first", timing="idle", batch=1):
    """Interleaved timing of several callables; returns each one's list of ms, round by round.
    timing "idle": the start event is recorded on an idle GPU, so each time includes the call's
    host time up to its launch (a few µs: a few tenths of a percent of a 16-bit row at the default
    shape). "queued": the GPU spins while the call is issued, so the events bracket its kernels.
    batch: calls between the two events, the time being their mean. CUDA events resolve about
    half a microsecond (cudaEventElapsedTime), a tenth of a 2^20-element kernel's 4-6 µs, so with
    one call per interval such rows move in steps of that size; back-to-back calls are what a CUDA
    graph or a model's step runs, each kernel starting as the one before it ends."""
    import torch

    times = [[] for _ in fns]
    for it in range(warmup + repeat):
        for k in ORDERS[order](it, len(fns)):
            fn = fns[k]
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if timing == "queued":
                torch.cuda._sleep(QUEUE_CYCLES * batch)
            a.record()
            for _ in range(batch):
                fn()
            b.record()
            b.synchronize()
            if it >= warmup:
                times[k].append(a.elapsed_time(b) / batch)
    return times


# Activations whose torch autograd backward reads the forward's output (derivatives.yaml: relu's
# threshold_backward(grad, result, 0), sigmoid_backward(grad, result), tanh_backward(grad, result)).
TORCH_SAVES_OUTPUT = frozenset({"relu", "sigmoid", "tanh"})


def torch_saves_output(act):
    return act.split("(", 1)[0].strip() in TORCH_SAVES_OUTPUT


def median(t):
    return sorted(t)[len(t) // 2]


def run_table(a, acts, header=True):
    import torch

    import kplay

    dt_of = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
    fns = {act: torch_fn(act) for act in acts}
    for act in [act for act, fn in fns.items() if fn is None]:
        print("perf_table.py: %s skipped: torch has no such function to compare with" % act, file=sys.stderr)
        acts = [x for x in acts if x != act]
    shape = tuple(int(v) for v in a.shape.split("x"))
    if header:
        print("device: %s, torch %s, kplay %s, order %s, timing %s, output %s, batch %d" % (
            torch.cuda.get_device_name(), torch.__version__, kplay.__version__, a.order, a.timing, a.output,
            a.batch))
        print("ACT\tDIR\tDTYPE\tKPLAY_%\tTORCH_%\tWINS\tKPLAY_MS\tTORCH_MS\tCOPY_MS\tDIFF_TORCH_ULP"
              "\tSM_MHZ\tSM_MHZ_MIN\tPOWER_W\tCAPPED_%", flush=True)
    uuid = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", None)
    monitor = ClockMonitor("GPU-%s" % uuid if uuid is not None else torch.cuda.current_device())
    for dname in a.dtypes.split(","):
        dt = dt_of[dname]
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(shape, device="cuda", dtype=dt, generator=g) * 3  # mixed signs, both tails
        # preallocated: kplay's output and the copy's destination, made once
        out = torch.empty_like(x) if a.output == "preallocated" else None
        for direction in a.directions.split(","):
            grad = torch.randn(shape, device="cuda", dtype=dt, generator=g) if direction == "backward" else None
            for act in acts:
                fn = fns[act]
                y = xr = saved = ref = mine = kk = rr = None  # freed after each case, also when it fails (out of memory)
                try:
                    if direction == "forward":
                        kfn = lambda: kplay.forward(act, x, out=out)
                        tfn = lambda: fn(x)
                        scale = 1.0
                    else:
                        xr = x.detach().requires_grad_(True)
                        y = fn(xr)
                        # kplay reads the tensor torch's autograd reads (its forward's output for
                        # relu, sigmoid and tanh), so both read the same bytes in the same cache state
                        saved_out = torch_saves_output(act)
                        saved = y.detach() if saved_out else x
                        kfn = lambda: kplay.backward(act, grad, saved, saved_output=saved_out, grad_in=out)
                        tfn = lambda: torch.autograd.grad(y, xr, grad, retain_graph=True)
                        scale = 1.5
                    cfn = (lambda: out.copy_(x)) if out is not None else (lambda: x.clone())
                    kfn()
                    torch.cuda.synchronize()
                    t0 = time.monotonic()
                    kt, tt, ct = interleaved_ms([kfn, tfn, cfn], a.warmup, a.repeat, a.order, a.timing, a.batch)
                    clocks = monitor.summary(t0, time.monotonic())
                    k_ms, t_ms, c_ms = median(kt), median(tt), median(ct)
                    wins = sum(1 for k, t in zip(kt, tt) if k < t)
                    mine = kfn()  # a preallocated out held the copy
                    ref = tfn() if direction == "forward" else tfn()[0]
                    kk = mine.reshape(-1)[: 1 << 20].double()
                    rr = ref.reshape(-1)[: 1 << 20].double()
                    both = torch.isfinite(kk) & torch.isfinite(rr)
                    ulp = ((kk - rr).abs()[both] / (rr.abs()[both].clamp_min(torch.finfo(dt).tiny) * EPS[dname])).max().item()
                    clock_cols = "%d\t%d\t%.0f\t%.0f" % (clocks[0], clocks[1], clocks[2], 100 * clocks[3]) if clocks else "-\t-\t-\t-"
                    print("%s\t%s\t%s\t%.1f\t%.1f\t%d/%d\t%.4f\t%.4f\t%.4f\t%.3g\t%s" % (
                        act, direction, dname, 100 * scale * c_ms / k_ms, 100 * scale * c_ms / t_ms, wins, a.repeat,
                        k_ms, t_ms, c_ms, ulp, clock_cols), flush=True)
                except Exception as e:  # keep going: one failing case must not hide the table
                    print("%s\t%s\t%s\tERROR %s" % (act, direction, dname, str(e).splitlines()[0][:160]), flush=True)
                y = xr = ref = mine = kk = rr = None
                torch.cuda.empty_cache()
            del grad
        del x, out
        torch.cuda.empty_cache()
    monitor.close()


# ---------------------------------------------------------------------------------------------
# --gaps: rows of saved tables where kplay is below torch

def read_rows(path):
    """{(act, dir, dtype): (kplay_pct, torch_pct, wins, kplay_ms, torch_ms, rounds)} and the error lines."""
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
                wins, rounds = (int(v) for v in cols[5].split("/"))
                rows[key] = (float(cols[3]), float(cols[4]), wins, float(cols[6]), float(cols[7]), rounds)
            except (ValueError, IndexError):
                continue
    return rows, errors


def gaps(paths, paired):
    for path in paths:
        rows, errors = read_rows(path)
        # compared on the medians' times, which the rounded ratios can hide, and on the ratios, where
        # the times' four decimals round a gap away
        below = sorted((k for k, v in rows.items() if v[3] > v[4] or v[0] < v[1]),
                       key=lambda k: (k[1] != "forward", k))
        # lost: more than 0.3 points below torch and fewer than half of the rounds won
        lost = {k for k, v in rows.items() if v[1] - v[0] > 0.3 and 2 * v[2] < v[5]}
        print("== %s: %d rows, %d with kplay below torch (KPLAY_%% / TORCH_%% (WINS)), %d lost, %d failed" % (
            path, len(rows), len(below), len(lost), len(errors)))
        for k in below:
            v = rows[k]
            print("  %s %s %s %.1f / %.1f (%d)%s" % (k + v[:3] + (" lost" if k in lost else "",)))
        for e in errors:
            print("  failed: " + e)
    if paired and len(paths) > 1:
        tables = [read_rows(p)[0] for p in paths]
        keys = sorted(set.intersection(*(set(t) for t in tables)))
        print("== kplay minus torch, points: " + " | ".join(paths))
        for k in keys:
            print("%-42s %s" % (" ".join(k), " ".join("%+5.1f" % (t[k][0] - t[k][1]) for t in tables)))
        # torch's kernels are the same in every file: how far its ratio moves between them is the
        # spread between runs, which a gap must exceed to be a finding
        moved = sorted(abs(t[k][1] - tables[0][k][1]) for t in tables[1:] for k in keys)
        if moved:
            print("== torch's own ratio between the files, points: median %.1f, 90th percentile %.1f, largest %.1f" % (
                moved[len(moved) // 2], moved[int(0.9 * (len(moved) - 1))], moved[-1]))


# ---------------------------------------------------------------------------------------------
# --pin: launch configs against torch

def tuning_text(act):
    """The activation text a pin is stored under: the exact one's for an accuracy=torch kernel,
    whose tuning serves the tier where the user's database holds none of the tier's own (kplay's
    tuned_as), ahead of any shipped record."""
    name, paren, rest = act.partition("(")
    if not paren:
        return act
    params = [p.strip() for p in rest.rstrip().rstrip(")").split(",")]
    params = [p for p in params if p and p.replace(" ", "") != "accuracy=torch"]
    return name.strip() + ("(%s)" % ", ".join(params) if params else "")


def pinned_export(base, acts, dtypes, directions, n, cfg):
    """A `kplay db export` document whose tuning records pin config `cfg` for every case at size n
    (backward: for the saved tensor the table's row reads); base: an export of any tuning on this
    device (gives the device fields and fingerprint)."""
    block, per_thread, *more = cfg.split("|")
    more += [""] * (4 - len(more))
    knobs = set(filter(None, more[3].split("+")))
    if knobs - {"general", "late"}:
        sys.exit("perf_table.py: unknown knob in %r (expected general, late)" % cfg)
    template, records = base["tunings"][0], []
    for act in acts:
        for dtype in dtypes:
            for direction in directions:
                t = copy.deepcopy(template)
                t.pop("candidates", None)
                saved = "output" if direction == "backward" and torch_saves_output(act) else "input"
                t["spec"] = {"activation": tuning_text(act), "direction": direction, "dtype": dtype, "saved": saved}
                t["n"] = n
                t["best"] = {"block": int(block), "per_thread": int(per_thread), "vec": int(more[0] or WIDEST[dtype]),
                             "grid": "grid-stride" if more[1] else "one-shot", "waves": int(more[1] or 0),
                             "cache": more[2] or "default", "fast_math": False,
                             "flat": "general" not in knobs, "late_gradient": "late" in knobs}
                records.append(t)
    unique = {json.dumps(r["spec"], sort_keys=True): r for r in records}  # a tier and its exact text
    doc = copy.deepcopy(base)
    doc["tunings"] = list(unique.values())
    return doc


def run_pinned(a, acts):
    import kplay

    dtypes, directions = a.dtypes.split(","), a.directions.split(",")
    n = math.prod(int(v) for v in a.shape.split("x"))
    work = tempfile.mkdtemp(prefix="kplay-pin-")
    try:
        # any tuning record on this device, for its device fields and fingerprint
        kplay.autotune("relu", 1 << 16, dtype="f16", strategy="fast", db=os.path.join(work, "base.db"))
        base = kplay.db_export(os.path.join(work, "base.db"))
        dbs = {"default": os.path.join(work, "none.db")}
        for i, cfg in enumerate(a.pin):
            dbs[cfg] = os.path.join(work, "pin%d.db" % i)
            kplay.db_import(pinned_export(base, acts, dtypes, directions, n, cfg), db=dbs[cfg])
        cli = kplay_cli(a.kplay)
        if cli:  # what the untuned default picks for each case, for reading the rows against
            for act in acts:
                for d in dtypes:
                    for direction in directions:
                        r = subprocess.run([cli, "run", "--no-db", "--act", act, "--dtype", d, "--direction", direction,
                                            "--shape", a.shape, "--repeat", "1"], capture_output=True, text=True)
                        for line in r.stdout.splitlines():
                            if line.startswith("config"):
                                print("default %s %s %s: %s" % (act, d, direction, line), flush=True)
        child = [sys.executable, os.path.abspath(__file__), "--acts", ";".join(acts), "--dtypes", a.dtypes,
                 "--directions", a.directions, "--shape", a.shape, "--repeat", str(a.repeat), "--warmup",
                 str(a.warmup), "--order", a.order, "--timing", a.timing, "--output", a.output, "--batch", str(a.batch)]
        header = True
        for r in range(1, a.rounds + 1):
            for cfg, db in dbs.items():
                print("== round %d config %s" % (r, cfg), flush=True)
                p = subprocess.run(child, env=dict(os.environ, KPLAY_DB=db), stdout=subprocess.PIPE, text=True)
                for line in p.stdout.splitlines():
                    if header or not (line.startswith("device:") or line.startswith("ACT\t")):
                        print(line, flush=True)
                header = False
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--acts", default="all;gelu(approximate=tanh)")
    p.add_argument("--dtypes", default="f32,f16,bf16,f64")
    p.add_argument("--directions", default="forward,backward")
    p.add_argument("--shape", default="4096x393216")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--order", choices=sorted(ORDERS), default="kplay-first")
    p.add_argument("--timing", choices=("idle", "queued"), default="idle")
    p.add_argument("--output", choices=("allocated", "preallocated"), default="allocated")
    p.add_argument("--batch", type=int, default=1, help="calls per timed interval (their mean)")
    p.add_argument("--kplay", help="the kplay CLI, for `kplay list --texts` (default: $KPLAY_CLI, build/kplay, PATH)")
    p.add_argument("--gaps", nargs="+", metavar="TABLE", help="read saved tables: rows below torch")
    p.add_argument("--paired", action="store_true", help="with --gaps: kplay minus torch per file")
    p.add_argument("--pin", action="append", metavar="CONFIG", help="'block|per_thread[|vec[|waves[|cache[|knobs]]]]'")
    p.add_argument("--rounds", type=int, default=1, help="with --pin: rounds over the configs")
    a = p.parse_args()
    if a.gaps:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a reader that stops early (head) ends it quietly
        gaps(a.gaps, a.paired)
        return 0
    acts = activation_texts(a.acts, a.kplay)
    if a.pin:
        run_pinned(a, acts)
    else:
        run_table(a, acts)
    return 0


if __name__ == "__main__":
    sys.exit(main())

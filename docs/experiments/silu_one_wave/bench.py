"""float32 silu and sigmoid at one wave (2^20 elements on an H100) and beyond: where the time goes.

Times, as CUDA-graph replays of 50 launches in 21 interleaved rounds (so that no host cost shows):
torch's copy, silu and sigmoid, kplay.forward (where the kplay package imports), and bodies in
one kernel shape (256 threads, one 16-byte vector each): a copy, kplay's own float32 silu (the
source `kplay emit --fast-fp64 1` gives: the double path of fp64_math.h, which H100s and H200s
run), torch's formulas x / (1 + expf(-x)) and 1 / (1 + expf(-x)), silu_float.h (float arithmetic
alone, 0.79 ulp) and silu_lean.h (float arithmetic with only the compensations kplay's 2-ulp
bound needs). CuPy compiles the bodies with -ftz=true appended to the options given (it always
does), so subnormal results flush here; the instructions of the normal range, which set the time,
are the same. Accuracy: float_check.cpp. Needs a CUDA GPU, torch, CuPy, and kplay's CLI (--kplay,
else $KPLAY_CLI, else kplay) or the source it emits (--emitted FILE, from `kplay emit --act silu
--dtype f32 --fast-fp64 1`); the kplay package adds kplay.forward's row:

    python docs/experiments/silu_one_wave/bench.py [--kplay build/kplay | --emitted F] [--n 2^20,2^24] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess

import cupy as cp
import numpy as np
import torch

try:
    import kplay
except ImportError:  # the shape rows need only the emitted source
    kplay = None

HERE = os.path.dirname(os.path.abspath(__file__))

KERNELS = r'''
#define MB_FN static __device__ __forceinline__
MB_FN float mb_rcp_approx(float d) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d)); return r; }
#define MB_RCP(d) mb_rcp_approx(d)
#define MB_AS_FLOAT(i) __int_as_float(i)
#define MB_AS_INT(f) __float_as_int(f)
#include "silu_float.h"
#include "silu_lean.h"
MB_FN float mb_copy(float x) { return x; }
MB_FN float mb_kplay(float x) { return kp_act_forward(x); }
MB_FN float mb_torch(float x) { return x / (1.0f + expf(-x)); }
MB_FN float mb_torch_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
struct __align__(16) MbVec { float v[4]; };
#define MB_KERNEL(name, body)                                                                    \
  extern "C" __global__ void name(const MbVec* __restrict__ x, MbVec* __restrict__ y, int n) {  \
    const int i = blockIdx.x * blockDim.x + threadIdx.x;                                       \
    if (i >= n) return;                                                                        \
    const MbVec p = x[i];                                                                      \
    MbVec o;                                                                                   \
    _Pragma("unroll") for (int j = 0; j < 4; ++j) o.v[j] = body(p.v[j]);                      \
    y[i] = o;                                                                                  \
  }
MB_KERNEL(k_copy, mb_copy)
MB_KERNEL(k_kplay, mb_kplay)
MB_KERNEL(k_torch, mb_torch)
MB_KERNEL(k_float, silu_fl)
MB_KERNEL(k_lean, silu_lean)
MB_KERNEL(k_torch_sigmoid, mb_torch_sigmoid)
MB_KERNEL(k_lean_sigmoid, sigmoid_lean)
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kplay", default=os.environ.get("KPLAY_CLI", "kplay"))
    ap.add_argument("--emitted", help="the source `kplay emit --act silu --dtype f32 --fast-fp64 1` printed")
    ap.add_argument("--n", default="2^20", help="sizes, comma-separated (2^20 is one wave on an H100)")
    ap.add_argument("--json")
    args = ap.parse_args()
    # kplay's float32 silu as an H100 or H200 runs it: in double (fp64_math.h)
    if args.emitted:
        with open(args.emitted) as f:
            emitted = f.read()
    else:
        emitted = subprocess.run([args.kplay, "emit", "--act", "silu", "--dtype", "f32", "--fast-fp64", "1"],
                                 check=True, capture_output=True, text=True).stdout
    mod = cp.RawModule(code=emitted + KERNELS, options=("-fmad=false", "-I" + HERE, "--std=c++17"))
    results = [bench_size(mod, size(v)) for v in args.n.split(",")]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def size(text):
    """2^20 or 1048576"""
    base, _, exp = text.strip().partition("^")
    return int(base) ** int(exp) if exp else int(base)


def bench_size(mod, n):
    x = torch.randn(n, device="cuda") * 3
    out = torch.empty_like(x)
    cx, cout = cp.asarray(x), cp.asarray(out)

    def body(name):
        k = mod.get_function(name)
        return lambda: k(((n // 4 + 255) // 256,), (256,), (cx, cout, np.int32(n // 4)))

    cases = {"torch copy": lambda: out.copy_(x), "torch silu": lambda: torch.ops.aten.silu.out(x, out=out),
             "torch sigmoid": lambda: torch.sigmoid(x, out=out)}
    if kplay is not None:
        cases["kplay.forward silu"] = lambda: kplay.forward("silu", x, out=out)
    cases.update({"shape: copy": body("k_copy"), "shape: kplay's body": body("k_kplay"),
                  "shape: torch's formula": body("k_torch"), "shape: silu_float.h": body("k_float"),
                  "shape: silu_lean.h": body("k_lean"), "shape: torch's sigmoid": body("k_torch_sigmoid"),
                  "shape: sigmoid_lean": body("k_lean_sigmoid")})
    reps, graphs = 50, {}
    for name, f in cases.items():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), cp.cuda.ExternalStream(side.cuda_stream):
            for _ in range(3):
                f()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g), cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            for _ in range(reps):
                f()
        graphs[name] = g
    times = {k: [] for k in cases}
    for _ in range(21):
        for name, g in graphs.items():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times[name].append(a.elapsed_time(b) * 1e3 / reps)
    result = {"device": torch.cuda.get_device_name(), "n": n, "us": {}}
    copy_us = statistics.median(times["torch copy"])
    print(f"{result['device']}, silu float32, n = {n}; us per call (median of 21 rounds [min, max]), % of torch's copy")
    for k, v in times.items():
        med = statistics.median(v)
        result["us"][k] = med
        print(f"  {k:24s} {med:6.3f} [{min(v):.3f}, {max(v):.3f}]  {100 * copy_us / med:5.1f} %")
    return result


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How fast a GPU runs float<->double conversions (F2F) against DFMA, and whether the two share
a pipe: compute-only kernels, eight independent chains per thread, each iteration of a chain
NDF dependent fmas in double then NCV round trips double -> float (+ a float add) -> double.
Prints chain-iterations per clock per SM and the cycles one warp-iteration costs a scheduler
(an SM has four). If the two share a pipe, the mixed rows cost the sum of the pure ones.

Why: the float32 activations that compute in double (templates/common/fp64_math.h) convert in
and out; whether those conversions are what holds them below the copy rate decides whether
rounding on the integer pipe could pay (docs/benchmarks.md, session 18: it did not).
Needs CuPy and a CUDA GPU. Usage: python3 scripts/fp64_pipe_bench.py"""
import cupy as cp

SRC = r"""
extern "C" __global__ void k(double* out, int iters, double c) {
  double d[8]; float f[8];
  for (int j = 0; j < 8; ++j) { d[j] = threadIdx.x * 1e-3 + j; f[j] = (float)j; }
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      for (int t = 0; t < NDF; ++t) d[j] = fma(d[j], c, 1e-7);
      for (int t = 0; t < NCV; ++t) { f[j] = (float)d[j] + f[j]; d[j] = (double)f[j]; }
    }
  }
  double s = 0; for (int j = 0; j < 8; ++j) s += d[j] + f[j];
  if (s == 12345.678) out[0] = s; /* never true: keeps the chains live */
}
"""


def rate(ndf, ncv, sms, clock_hz, out, iters=2000):
    """Chain-iterations per clock per SM, from the second of two launches."""
    fn = cp.RawModule(code=SRC.replace("NDF", str(ndf)).replace("NCV", str(ncv))).get_function("k")
    grid, block = sms * 16, 128
    args = (out, cp.int32(iters), cp.float64(0.999999))
    fn((grid,), (block,), args)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn((grid,), (block,), args)
    stop.record()
    stop.synchronize()
    seconds = cp.cuda.get_elapsed_time(start, stop) * 1e-3
    return grid * block * iters * 8 / (seconds * clock_hz * sms)


def main():
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms, clock_hz = props["multiProcessorCount"], props["clockRate"] * 1e3
    out = cp.zeros(1, cp.float64)
    print(f"{props['name'].decode()}: {sms} SMs at {clock_hz / 1e6:.0f} MHz")
    for ndf, ncv in [(4, 0), (8, 0), (0, 1), (0, 2), (4, 1), (8, 1), (8, 2), (16, 1), (24, 2)]:
        r = rate(ndf, ncv, sms, clock_hz, out)
        print(f"DFMA {ndf:2d} + F2F pairs {ncv}: {r:6.2f} /clk/SM: DFMA {r * ndf:5.1f}/clk, F2F {2 * r * ncv:5.1f}/clk,"
              f" {4 * 32 / r:5.1f} cycles per warp-iteration per scheduler")


if __name__ == "__main__":
    main()

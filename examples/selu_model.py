"""The "ModelNew" pattern with kplay: SELU on a 4096 x 393216 float32 tensor, checked against
torch.selu on mixed-sign input and timed against it and against a device copy of the same bytes,
in one process (CUDA events, median of 15 after 3 warm-ups).

    python examples/selu_model.py [--rows 4096 --cols 393216]
"""
import argparse
import statistics

from _needs import cuda_or_exit

cuda_or_exit()

import torch

import kplay.torch as kt


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.selu(x)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return kt.selu(x)


def time_ms(fn, warmup=3, repeat=15):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=393216)
    args = ap.parse_args()
    x = torch.randn(args.rows, args.cols, device="cuda") * 3  # mixed sign, |x| up to ~15
    x[0, :4] = torch.tensor([0.0, -0.0, 1e-30, -80.0])
    want, got = Model()(x), ModelNew()(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    print(f"correct: max |kplay - torch.selu| = {(got - want).abs().max().item():.3g}")
    del want, got
    out = torch.empty_like(x)
    model, new = Model(), ModelNew()
    t_torch = time_ms(lambda: model(x))
    t_kplay = time_ms(lambda: new(x))
    t_copy = time_ms(lambda: out.copy_(x))
    gb = 2 * x.numel() * x.element_size() / 1e9
    for name, t in (("kplay", t_kplay), ("torch.selu", t_torch), ("copy", t_copy)):
        print(f"{name:>10}: {t:8.3f} ms  {gb / (t * 1e-3):7.1f} GB/s")
    print(f"kplay = {100 * t_copy / t_kplay:.1f} % of copy, {t_torch / t_kplay:.3f}x torch.selu")


if __name__ == "__main__":
    main()

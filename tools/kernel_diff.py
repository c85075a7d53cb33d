#!/usr/bin/env python3
"""Where a model's GPU time goes with torch's activations and with kplay's: the kernels of a few
training steps of each variant (torch.profiler), grouped by kernel name, side by side, the largest
differences first. This is how a model row whose GPU time differs between the variants is taken
apart (docs/benchmarks.md, "Models"): the activation kernels themselves, and the kernels around
them that changed (a copy torch avoids, a layout conversion, a fused kernel split in two).

Usage (on a CUDA machine, kplay.torch importable):
    python tools/kernel_diff.py efficientnet_b0 [--mode eager_f32|eager_bf16] [--steps 5] [--top 25]
The models and modes are kplay.bench_models'; both variants start from the same weights.
"""
from __future__ import annotations

import argparse
import copy
import sys
from collections import defaultdict
from typing import Any, Dict, Tuple


def kernels(torch: Any, step: Any, steps: int) -> Dict[str, Tuple[int, float]]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    out: Dict[str, list] = defaultdict(lambda: [0, 0.0])
    cuda = torch.autograd.DeviceType.CUDA
    for e in prof.events():
        if e.device_type != cuda:
            continue
        slot = out[(e.name or "?")[:90]]
        slot[0] += 1
        slot[1] += e.time_range.elapsed_us()
    return {k: (c // steps, us / steps) for k, (c, us) in out.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--mode", default="eager_f32", choices=("eager_f32", "eager_bf16"))
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    import torch

    from kplay import bench_models as bm

    if not torch.cuda.is_available():
        print("kernel_diff.py: no CUDA device")
        return 3
    spec = bm.MODELS[args.model]
    device = torch.device("cuda", 0)
    torch.manual_seed(0)
    base = spec.build().to(device)
    ours, census = bm.kplay_variant(base)
    torch.manual_seed(1)
    inputs = spec.make_batch(torch, spec.batch, device)
    per: Dict[str, Dict[str, Tuple[int, float]]] = {}
    for name, model in (("torch", base), ("kplay", ours)):
        v = bm._Variant(torch, spec, copy.deepcopy(model), inputs, args.mode, "cuda")
        for _ in range(3):
            v.step()
        per[name] = kernels(torch, v.step, args.steps)
    names = set(per["torch"]) | set(per["kplay"])
    rows = []
    for n in names:
        tc, tu = per["torch"].get(n, (0, 0.0))
        kc, ku = per["kplay"].get(n, (0, 0.0))
        rows.append((ku - tu, n, tc, tu, kc, ku))
    rows.sort(key=lambda r: -abs(r[0]))
    tt = sum(u for _, u in per["torch"].values())
    kt = sum(u for _, u in per["kplay"].values())
    print(f"{args.model} {args.mode}, batch {spec.batch}: GPU us per step torch {tt:.0f}, kplay {kt:.0f} "
          f"(kplay - torch {kt - tt:+.0f}); swapped {census['swapped_by_activation']}")
    print(f"{'kplay-torch us':>14} {'torch n':>7} {'torch us':>9} {'kplay n':>7} {'kplay us':>9}  kernel")
    for d, n, tc, tu, kc, ku in rows[:args.top]:
        print(f"{d:+14.1f} {tc:7d} {tu:9.1f} {kc:7d} {ku:9.1f}  {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

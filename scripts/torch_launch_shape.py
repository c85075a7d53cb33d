"""torch's own launch shape for activations at perf_table.py's default shape: each CUDA kernel that
torch runs for the case, with its grid, block, registers per thread and estimated occupancy, from
the profiler's trace. Elements per thread = numel / (grid x block, summed over the launches of
one kernel: torch splits tensors of 2^31 bytes or more).
Usage: torch_launch_shape.py ACT:DTYPE:DIRECTION ...   e.g. hardswish:f16:forward mish:f32:backward"""
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for case in sys.argv[1:]:
        act, dname, direction = case.split(":")
        x = torch.randn(4096, 393216, device="cuda", dtype=DT[dname])
        fn = {"sigmoid": torch.sigmoid, "tanh": torch.tanh}.get(act) or getattr(F, act)
        if direction == "backward":
            xr = x.detach().requires_grad_(True)
            y, g = fn(xr), torch.randn_like(x)
            run = lambda: torch.autograd.grad(y, xr, g, retain_graph=True)
        else:
            run = lambda: fn(x)
        run()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            run()
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        p.export_chrome_trace(path)
        events = [e for e in json.load(open(path))["traceEvents"] if e.get("cat") == "kernel"]
        os.unlink(path)
        # torch splits a tensor of 2^31 bytes or more into launches that each index it in 32 bits
        # (two for a 16-bit tensor at this shape): the launches of one kernel share its elements.
        def threads_of(e):
            grid, block = e.get("args", {}).get("grid", [0, 0, 0]), e.get("args", {}).get("block", [0, 0, 0])
            return grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        total = {}
        for e in events:
            total[e["name"]] = total.get(e["name"], 0) + threads_of(e)
        for e in events:
            a = e.get("args", {})
            launches = sum(1 for o in events if o["name"] == e["name"])
            threads = total[e["name"]]
            print("%s %s %s: %s grid %s block %s (1 of %d launches), %.3g elements per thread, %s registers, "
                  "occupancy %s %%" % (act, dname, direction, e["name"][:120], a.get("grid"), a.get("block"), launches,
                                       x.numel() / threads if threads else 0, a.get("registers per thread"),
                                       a.get("est. achieved occupancy %")), flush=True)
        x = y = g = xr = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

"""torch's own launch shape for activations at perf_table.py's default shape: each CUDA kernel that
torch runs for the case, with its grid, block, registers per thread and estimated occupancy, from
the profiler's trace. Elements per thread = numel / (grid x block).
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
        for e in events:
            a = e.get("args", {})
            grid, block = a.get("grid", [0, 0, 0]), a.get("block", [0, 0, 0])
            threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
            print("%s %s %s: %s grid %s block %s, %.3g elements per thread, %s registers, occupancy %s %%" % (
                act, dname, direction, e["name"][:120], grid, block, x.numel() / threads if threads else 0,
                a.get("registers per thread"), a.get("est. achieved occupancy %")), flush=True)
        x = y = g = xr = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

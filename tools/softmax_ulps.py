#!/usr/bin/env python3
"""kplay's and torch's softmax family on a CUDA GPU against a float64 reference, in ulps of the
result's dtype, on the layouts of tests/python/test_softmax_torch.py (contiguous, sliced, transposed,
channels-last, broadcast). Prints each layout's largest error for kplay and for torch, and how many
of kplay's results are beyond 1 ulp (its bound, docs/accuracy.md). Needs kplay.torch's C++ operators.

    python3 tools/softmax_ulps.py [--dtypes float32,float16,bfloat16]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import kplay.torch as kt  # noqa: E402
from test_softmax_torch import layouts  # noqa: E402

MANTISSA = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23}


def ulps(y, ref, dtype):
    """|y - ref| in ulps of ref's binade in dtype (subnormal results: the smallest normal's ulp)."""
    r = ref.abs().clamp(min=torch.finfo(dtype).smallest_normal)
    ulp = torch.exp2(torch.floor(torch.log2(r)) - MANTISSA[dtype])
    return torch.nan_to_num(((y.double() - ref) / ulp).abs())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", default="float32,float16,bfloat16")
    args = ap.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; max error in ulps against float64")
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        for i, (x, dim) in enumerate(layouts("cuda", dtype)):
            for name in ("softmax", "log_softmax", "softmin"):
                ref = getattr(torch, name if name != "softmin" else "softmax")(
                    x.double() if name != "softmin" else -x.double(), dim)
                ek = ulps(getattr(kt, name)(x, dim), ref, dtype)
                et = ulps(getattr(torch.nn.functional, name)(x, dim), ref, dtype)
                print(f"{str(dtype)[6:]:9} layout {i} {name:12} {str(tuple(x.shape)):15} dim {dim:2}  "
                      f"kplay {ek.max().item():9.3f}  torch {et.max().item():9.3f}  kplay > 1 ulp: {(ek > 1).sum().item()}")


if __name__ == "__main__":
    main()

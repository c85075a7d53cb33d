#!/usr/bin/env python3
"""torch's own float32 activation kernels, counted as tools/sass_count.sh counts kplay's: the issue
slots an element of the math costs, from the sm_90 SASS in the installed torch wheel. This is the
other side of docs/activations.md's "Beside torch's own kernels": at one wave (2^20 float32 elements
on an H200) a kernel's time is the copy's plus its issue slots, so the difference between these
figures and kplay's is what a bound costs there.

torch runs a contiguous float32 tensor through `vectorized_elementwise_kernel<4, ...>`: 128 threads
a block, 8 elements a thread in two 16-byte vectors, no loop. Its fast path (the SASS from the entry
to the first EXIT; the rest handles a partial block) is counted, less the same path of a kernel
with the same loads and stores: neg's less its one instruction an element for a forward (nothing
over convert and store), mul of two tensors for a backward (what is over g * x), as sass_count.sh
counts kplay's. A row reads math instructions an element, MUFU operations (16 a clock an SM, a
quarter of the FP32 rate) and FP64 operations among them.

    python3 tools/torch_sass_count.py [--lib libtorch_cuda.so] [--arch sm_90] [ACT[:DIR] ...]

ACT: a row name below (default every row). Needs cuobjdump and nvdisasm (the CUDA toolkit's, or
triton's copies: CUOBJDUMP=..., NVDISASM=...).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

VEC = "29vectorized_elementwise_kernelILi4E"
# (activation, direction) -> substrings naming torch's float32 kernel. torch's dispatch numbers its
# lambdas by dtype (UlvE_ double, UlvE0_ float, UlvE1_ half, UlvE2_ bfloat16); gelu's outer lambda
# is the approximation (UlvE_ tanh, UlvE0_ erf). elu, celu and selu share elu's kernel.
KERNELS = {
    ("silu", "forward"): ["silu_kernelE", "UlfE"],
    ("sigmoid", "forward"): ["sigmoid_kernel_cuda", "UlfE"],
    ("tanh", "forward"): ["16tanh_kernel_cuda", "UlfE"],
    ("gelu(approximate=tanh)", "forward"): ["GeluCUDAKernelImpl", "GeluTypeEENKUlvE_clEvENKUlvE0_", "UlfE"],
    ("gelu", "forward"): ["GeluCUDAKernelImpl", "GeluTypeEENKUlvE0_clEvENKUlvE0_", "UlfE"],
    ("elu/celu/selu", "forward"): ["elu_kernelE", "UlfE"],
    ("logsigmoid", "forward"): ["log_sigmoid_forward_kernel", "UlfE"],
    ("softplus", "forward"): ["softplus_kernelE", "UlfE"],
    ("mish", "forward"): ["mish_kernelE", "UlfE"],
    ("hardsigmoid", "forward"): ["hardsigmoid_kernelE", "UlfE"],
    ("hardswish", "forward"): ["hardswish_kernelE", "UlfE"],
    ("silu", "backward"): ["silu_backward_kernel", "UlffE"],
    ("sigmoid", "backward"): ["sigmoid_backward_kernel_cuda", "UlffE"],
    ("tanh", "backward"): ["tanh_backward_kernel_cuda", "UlffE"],
    ("gelu(approximate=tanh)", "backward"): ["GeluBackwardCUDAKernelImpl", "GeluTypeEENKUlvE_clEvENKUlvE0_", "UlffE"],
    ("gelu", "backward"): ["GeluBackwardCUDAKernelImpl", "GeluTypeEENKUlvE0_clEvENKUlvE0_", "UlffE"],
    ("elu/celu/selu", "backward"): ["elu_backward_kernel", "UlffE"],
    ("logsigmoid", "backward"): ["log_sigmoid_backward_kernel", "UlffE"],
    ("softplus", "backward"): ["softplus_backward_kernel", "UlffE"],
    ("mish", "backward"): ["mish_backward_kernel", "UlffE"],
    ("hardsigmoid", "backward"): ["hardsigmoid_backward_kernel", "UlffE"],
    ("hardswish", "backward"): ["hardswish_backward_kernel", "UlffE"],
}
SKELETON = {"forward": ["neg_kernel_cuda", "UlfE"],
            "backward": ["BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEE"]}
SKELETON_MATH = {"forward": 1, "backward": 0}  # of its instructions an element, those left in
ELEMENTS = 8  # a thread's elements on the fast path
FP64 = re.compile(r"^(DFMA|DADD|DMUL|DSETP|DMNMX)")


def tool(env: str, name: str) -> str:
    if os.environ.get(env):
        return os.environ[env]
    for d in [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin")] + os.environ["PATH"].split(":"):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    try:
        import triton  # its NVIDIA backend ships both tools
        d = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    except ImportError:
        pass
    sys.exit(f"torch_sass_count: {name} not found: set {env}")


def fast_path(sass: str, symbol: str) -> list[str]:
    """The opcodes of `symbol`'s SASS from its entry to its first EXIT."""
    start = sass.find(f".text.{symbol}:")
    if start < 0:
        return []
    ops = []
    for line in sass[start:].splitlines()[1:]:
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if line.startswith(".text.") or line.startswith("//----"):
            break
        if not m or m.group(1) == "NOP":
            continue
        ops.append(m.group(1))
        if m.group(1) == "EXIT":
            break
    return ops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("acts", nargs="*")
    a = ap.parse_args()
    wanted = [k for k in KERNELS if not a.acts or k[0] in a.acts or f"{k[0]}:{k[1]}" in a.acts]
    unknown = [v for v in a.acts if not any(v in (k[0], f"{k[0]}:{k[1]}") for k in KERNELS)]
    if unknown:
        names = ", ".join(dict.fromkeys(k[0] for k in KERNELS))
        ap.error(f"no row {', '.join(unknown)}; the rows: {names} (ACT or ACT:forward|backward)")
    lib = a.lib
    if not lib:
        try:
            import torch
        except ImportError:
            ap.error("torch is not installed here: pass --lib PATH/libtorch_cuda.so")
        lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    if not os.path.isfile(lib):
        ap.error(f"no {lib} (a CPU-only torch has none): pass --lib PATH/libtorch_cuda.so")
    pats = {k: KERNELS[k] for k in wanted}
    pats.update({("skeleton", d): p for d, p in SKELETON.items()})
    cuobjdump, nvdisasm = tool("CUOBJDUMP", "cuobjdump"), tool("NVDISASM", "nvdisasm")
    found: dict[tuple[str, str], list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([cuobjdump, "-xelf", "all", lib], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        for name in sorted(os.listdir(tmp)):
            if not name.endswith(f".{a.arch}.cubin"):
                continue
            data = open(os.path.join(tmp, name), "rb").read()
            syms = {s.decode() for s in re.findall(rb"_ZN2at6native" + VEC.encode() + rb"[A-Za-z0-9_]+", data)}
            hits = {k: s for k, p in pats.items() if k not in found
                    for s in syms if all(q in s for q in p)}
            if not hits:
                continue
            sass = subprocess.run([nvdisasm, "-c", os.path.join(tmp, name)], capture_output=True, text=True).stdout
            for k, s in hits.items():
                ops = fast_path(sass, s)
                if ops:
                    found[k] = ops
    print(f"torch {os.path.basename(lib)}, {a.arch}: math instructions an element of the float32 fast path "
          f"({ELEMENTS} elements a thread), less the skeleton's")
    print(f"{'activation':<26}{'direction':<10}{'instr':>7}{'MUFU':>6}{'FP64':>6}")
    for k in wanted:
        ops, skel = found.get(k), found.get(("skeleton", k[1]))
        if not ops or not skel:
            print(f"{k[0]:<26}{k[1]:<10}{'not found':>7}")
            continue
        n = (len(ops) - (len(skel) - SKELETON_MATH[k[1]] * ELEMENTS)) / ELEMENTS
        mufu = sum(o.startswith("MUFU") for o in ops) / ELEMENTS
        fp64 = sum(bool(FP64.match(o)) for o in ops) / ELEMENTS
        print(f"{k[0]:<26}{k[1]:<10}{n:>7.1f}{mufu:>6.1f}{fp64:>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How Inductor's generated code calls a kplay kernel that a compiled graph keeps (the compile
mode's choice, _torch_decomp.py): kplay::forward and kplay::backward are lowered to calls of
kplay._torch_ops.forward_out / backward_out into a buffer Inductor allocates, the way Inductor
calls its own extern kernels (`extern_kernels.mm(a, b, out=buf0)`), instead of its generic
fallback for an operator.

The fallback calls torch.ops.kplay.forward.default: the dispatcher (Autograd, then CUDA), an
allocation of the op's own and an assert_size_stride on its result, about 4.6 µs of host time
above a bare launch per op on an H100 (examples/overhead.py). The out= call is a launch: by the
time Inductor writes it, AOTAutograd has already taken autograd and every other dispatch key out
of the graph, and Inductor plans the buffers itself (reusing them along a chain). The operands are
given the result's strides first (Inductor copies them where their layout differs), so the kernel
reads and writes dense tensors of one layout, the case kplay launches without a copy.

Where the extension is absent (the Python operators), or for C++ wrapper code (AOTInductor),
which calls operators by their schema, the op keeps Inductor's fallback.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

KERNELS = {
    # kplay op -> (its out= function in kplay._torch_ops, how many leading arguments are tensors)
    "forward": ("forward_out", 1),
    "backward": ("backward_out", 2),
}
_MODULE = "kplay._torch_ops"


def _kernel_out_class() -> Any:
    from torch._inductor import ir

    class KplayKernelOut(ir.ExternKernelOut):
        """An ExternKernelOut whose generated module imports kplay's extension first (the call may
        run from Inductor's on-disk cache in a process that has not imported it)."""

        def codegen(self, wrapper: Any) -> None:
            wrapper.add_import_once(f"import {_MODULE}")
            super().codegen(wrapper)

    return KplayKernelOut


def lowering_for(opname: str, fallback: Callable[..., Any]) -> Callable[..., Any]:
    """Inductor's lowering of torch.ops.kplay.<opname> (forward or backward): the out= call, or
    `fallback` (Inductor's fallback handler of the op) for C++ wrapper code. On another device
    than CUDA the out= call refuses the tensors as the op's own kernel does."""
    from torch._inductor import ir
    from torch._inductor.utils import convert_shape_to_inductor
    from torch._inductor.virtualized import V

    name, tensors = KERNELS[opname]
    arity = len(getattr(torch.ops.kplay, opname).default._schema.arguments)
    kernel_out = _kernel_out_class()

    def lower(*args: Any, **kwargs: Any) -> Any:
        node = V.graph.current_node
        val = node.meta.get("val") if node is not None else None
        if kwargs or V.graph.cpp_wrapper or not isinstance(val, torch.Tensor) or len(args) != arity:
            return fallback(*args, **kwargs)
        stride = val.stride()
        inputs = [ir.ExternKernel.require_exact_strides(a, stride) for a in args[:tensors]]
        layout = ir.FixedLayout(val.device, val.dtype, convert_shape_to_inductor(val.size()),
                                convert_shape_to_inductor(stride))
        return ir.TensorBox.create(kernel_out(layout, inputs, constant_args=tuple(args[tensors:]),
                                              python_kernel_name=f"{_MODULE}.{name}"))

    return lower


def register(lowering: Any) -> None:
    """Lowers kplay::forward and kplay::backward to their out= calls (Inductor's lowering module)."""
    for opname in KERNELS:
        op = getattr(torch.ops.kplay, opname).default
        fallback = lowering.fallback_handler(op)
        lowering.register_lowering(op, type_promotion_kind=None)(lowering_for(opname, fallback))

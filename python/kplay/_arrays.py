"""What kplay needs to know of a caller's array: backend, raw pointer, dtype, shape and strides.

Accepted, in the order tried (cheapest first):
  * torch.Tensor (CUDA): data_ptr(), dtype, strides; stream = torch's current stream of its device.
  * pyopencl.array.Array: its cl_mem and command queue (Backend opencl); offset must be 0.
  * anything with __cuda_array_interface__ (CuPy, Numba, ...): pointer, typestr, strides, stream.
  * anything with __dlpack__ (JAX, ...), read through nanobind's DLPack import.
Host (CPU) arrays are refused: kplay runs on GPUs (CUDA) and OpenCL devices.
"""
from __future__ import annotations

import sys
from typing import Any, NamedTuple, Optional, Tuple

from . import _core

DTYPE_NAMES = {_core.F32: "float32", _core.F16: "float16", _core.BF16: "bfloat16", _core.F64: "float64"}
_ITEMSIZE = {_core.F32: 4, _core.F16: 2, _core.BF16: 2, _core.F64: 8}
_TYPESTR = {"f4": _core.F32, "f2": _core.F16, "f8": _core.F64}
_DLPACK_CUDA, _DLPACK_CUDA_MANAGED, _DLPACK_OPENCL = 2, 13, 4
_SUPPORTED = "float32, float16, bfloat16 or float64"


class ArrayRef(NamedTuple):
    backend: int  # _core.BACKEND_CUDA / BACKEND_OPENCL
    ptr: int  # device pointer (CUDA) or cl_mem (OpenCL)
    dtype: int  # _core.F32 ...
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # in elements
    device: int  # CUDA ordinal; -1 for OpenCL
    stream: Optional[int]  # the producer's stream/queue, None when it has no opinion
    context: int = 0  # OpenCL context int_ptr (buffers of one call must share it)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def _bad(msg: str) -> Exception:
    return _core.InvalidArgumentError(msg)


def _torch_ref(t: Any) -> ArrayRef:
    import torch

    codes = {torch.float32: _core.F32, torch.float16: _core.F16, torch.bfloat16: _core.BF16, torch.float64: _core.F64}
    code = codes.get(t.dtype)
    if code is None:
        raise _bad(f"kplay takes {_SUPPORTED} tensors, not {t.dtype}")
    if not t.is_cuda:
        raise _bad(f"kplay needs a CUDA tensor; this one is on '{t.device}'")
    index = t.device.index
    return ArrayRef(_core.BACKEND_CUDA, t.data_ptr(), code, tuple(t.shape), tuple(t.stride()), index,
                    torch.cuda.current_stream(index).cuda_stream)


def _opencl_ref(a: Any) -> ArrayRef:
    import numpy

    codes = {numpy.dtype("float32"): _core.F32, numpy.dtype("float16"): _core.F16, numpy.dtype("float64"): _core.F64}
    code = codes.get(a.dtype)
    if code is None:
        raise _bad(f"kplay takes {_SUPPORTED} arrays, not {a.dtype}")
    if a.offset:
        raise _bad("kplay takes pyopencl arrays that start at their buffer (offset 0); this one has offset "
                   f"{a.offset} bytes: copy it first")
    if a.base_data is None:
        if a.size == 0:
            return ArrayRef(_core.BACKEND_OPENCL, 0, code, tuple(a.shape), (1,) * a.ndim, -1, a.queue.int_ptr, 0)
        raise _bad("this pyopencl array has no buffer")
    item = a.dtype.itemsize
    strides = tuple(s // item for s in a.strides)
    return ArrayRef(_core.BACKEND_OPENCL, a.base_data.int_ptr, code, tuple(a.shape), strides, -1,
                    a.queue.int_ptr if a.queue is not None else None, a.context.int_ptr)


def _cai_ref(cai: dict) -> ArrayRef:
    typestr = cai["typestr"]
    code = _TYPESTR.get(typestr[1:]) if typestr[:1] in "<|=" else None
    if code is None:
        raise _bad(f"kplay takes {_SUPPORTED} arrays, not typestr '{typestr}'")
    shape = tuple(cai["shape"])
    ptr = cai["data"][0]
    if cai.get("strides") is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        strides = tuple(reversed(strides))
    else:
        item = _ITEMSIZE[code]
        if any(s % item for s in cai["strides"]):
            raise _bad("kplay needs strides that are whole elements")
        strides = tuple(s // item for s in cai["strides"])
    # The device is found from the pointer by the C++ API; -2 means "ask the pointer".
    return ArrayRef(_core.BACKEND_CUDA, ptr, code, shape, strides, -2, cai.get("stream"))


def _dlpack_ref(a: Any) -> ArrayRef:
    try:
        ptr, code, shape, strides, dev_type, dev_id = _core.dlpack_info(a)
    except TypeError as e:
        raise _bad(f"kplay could not read this {type(a).__name__} through DLPack ({e})") from None
    if code < 0:
        raise _bad(f"kplay takes {_SUPPORTED} arrays; this {type(a).__name__} has another dtype")
    if dev_type not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        raise _bad(f"kplay needs a CUDA (or pyopencl) array; this {type(a).__name__} is on DLPack device type "
                   f"{dev_type} (1 = CPU)")
    return ArrayRef(_core.BACKEND_CUDA, ptr, code, tuple(shape), tuple(strides), dev_id, None)


def describe(a: Any) -> ArrayRef:
    """The ArrayRef of any accepted array; InvalidArgumentError/TypeError for anything else."""
    mod = type(a).__module__
    if mod.startswith("torch") and "torch" in sys.modules and isinstance(a, sys.modules["torch"].Tensor):
        return _torch_ref(a)
    if mod.startswith("pyopencl"):
        return _opencl_ref(a)
    cai = getattr(a, "__cuda_array_interface__", None) if not mod.startswith("numpy") else None
    if cai is not None:
        return _cai_ref(cai)
    if hasattr(a, "__dlpack__"):
        return _dlpack_ref(a)
    raise TypeError(f"kplay takes torch tensors, CuPy/JAX arrays (DLPack or __cuda_array_interface__) or "
                    f"pyopencl arrays, not {type(a).__name__}")


def empty_like(a: Any) -> Any:
    """A new array like `a` for out=None: torch, CuPy, pyopencl, or any type whose module has empty_like."""
    mod = type(a).__module__
    if mod.startswith("torch"):
        return sys.modules["torch"].empty_like(a)
    if mod.startswith("pyopencl"):
        return a._new_like_me()
    top = sys.modules.get(mod.split(".")[0])
    maker = getattr(top, "empty_like", None)
    if maker is None:
        raise TypeError(f"kplay cannot allocate a {type(a).__name__}; pass out=")
    return maker(a)


def empty(like: Any, shape: Tuple[int, ...]) -> Any:
    """A new array of `shape` with the type, dtype and device of `like` (a gated output is [..., d])."""
    mod = type(like).__module__
    if mod.startswith("torch"):
        return like.new_empty(shape)
    if mod.startswith("pyopencl"):
        import pyopencl.array as cla

        return cla.empty(like.queue, shape, like.dtype)
    top = sys.modules.get(mod.split(".")[0])
    maker = getattr(top, "empty", None)
    if maker is None:
        raise TypeError(f"kplay cannot allocate a {type(like).__name__}; pass the output")
    return maker(shape, dtype=like.dtype)

"""How a pair (or triple) of arrays maps onto kplay's two launch shapes.

Policy, shared by kplay.forward/backward and kplay.torch:
  * flat: every operand is dense (no gaps, no overlap) with the same strides, which covers
    contiguous arrays and any permuted-but-dense layout (e.g. channels_last): one pass over n.
  * 2-D pitched (kplay::forward_2d): every operand has unit stride in its last dimension and its
    leading dimensions collapse into rows with one row pitch, e.g. a column slice x[:, a:b].
  * anything else (broadcast/expanded, negative or gapped inner strides) is refused by
    kplay.forward/backward with InvalidArgumentError; kplay.torch copies such inputs to
    contiguous first.
"""
from __future__ import annotations

from typing import Sequence, Tuple, Union

Flat = Tuple[str, int]  # ("flat", n)
Pitched = Tuple[str, int, int, Tuple[int, ...]]  # ("2d", rows, cols, pitches of each operand)


def is_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """No gaps and no overlap, in some order of the dimensions."""
    dims = sorted((st, sh) for sh, st in zip(shape, strides) if sh != 1)
    expected = 1
    for st, sh in dims:
        if st != expected:
            return False
        expected *= sh
    return True


def row_pitch(shape: Sequence[int], strides: Sequence[int]):
    """The row pitch when the array is rows x cols with unit column stride, else None."""
    dims = [(sh, st) for sh, st in zip(shape, strides) if sh != 1]
    if not dims:
        return 1
    cols, inner = dims[-1]
    if inner != 1:
        return None
    if len(dims) == 1:
        return cols
    pitch = dims[-2][1]
    if pitch < cols:
        return None
    # Leading dimensions fold into rows when each steps over exactly the one inside it.
    for (_, st), (sh_in, st_in) in zip(dims[:-2], dims[1:-1]):
        if st != st_in * sh_in:
            return None
    return pitch


def plan(shape: Sequence[int], *strides: Sequence[int]) -> Union[Flat, Pitched, None]:
    """The launch for operands of one shape with these strides, or None when none fits."""
    n = 1
    for s in shape:
        n *= s
    if n == 0 or all(tuple(s) == tuple(strides[0]) for s in strides) and is_dense(shape, strides[0]):
        return ("flat", n)
    pitches = tuple(row_pitch(shape, s) for s in strides)
    if any(p is None for p in pitches):
        return None
    cols = next((sh for sh in reversed(shape) if sh != 1), 1)
    return ("2d", n // cols, cols, pitches)

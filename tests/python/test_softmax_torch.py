"""kplay.torch's softmax family (kplay/_torch_softmax.py) and kplay.nn's Softmax, LogSoftmax, Softmin
and Softmax2d. Without a GPU (CI): the ops' schemas, fake kernels and autograd (opcheck), gradcheck
in float64 and bit-exact agreement with torch on CPU tensors (torch's own kernels there), torch's
edge rows, replace_activations on a small model, refusals. On a CUDA device: kplay's row kernel
against torch for each member, dtype, direction and layout (the no-copy ones and the copied ones),
the edge rows, gradcheck in float64, and torch.compile(fullgraph=True); skipped visibly elsewhere."""
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import kplay  # noqa: E402
import kplay.nn as knn  # noqa: E402
import kplay.torch as kt  # noqa: E402

KT = {"softmax": kt.softmax, "log_softmax": kt.log_softmax, "softmin": kt.softmin}
TORCH = {"softmax": F.softmax, "log_softmax": F.log_softmax, "softmin": F.softmin}
NAMES = sorted(KT)
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def exactly(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def edge_rows(dtype, device="cpu"):
    inf, nan = float("inf"), float("nan")
    return torch.tensor([[1.0, inf, 2.0, 3.0],      # +inf: NaN throughout (inf - inf)
                         [1.0, nan, 2.0, 3.0],      # NaN: NaN throughout
                         [-inf, -inf, -inf, -inf],  # every element -inf: NaN
                         [-inf, 0.0, -inf, 1.0],    # some -inf: 0 there (log_softmax: -inf)
                         [60.0, -60.0, 0.0, 1e-30]], dtype=dtype, device=device)


def run(fn, x, grad, dim):
    xr = x.detach().clone().requires_grad_()
    y = fn(xr, dim)
    y.backward(grad)
    return y.detach(), xr.grad


# ---- no GPU needed ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_opcheck(name):
    # Schema, fake kernel, autograd registration and AOT dispatch of both ops, on CPU tensors, for
    # the layouts the CUDA kernel reads in place and those it copies.
    x = torch.randn(6, 5, 4, dtype=torch.float64)
    for t, dim in [(x, -1), (x, 0), (x.transpose(0, 2), 0), (x[:, 1:4], 1), (x, 1)]:
        torch.library.opcheck(torch.ops.kplay.softmax.default, (t.clone().requires_grad_(), dim, name))
        y = torch.ops.kplay.softmax(t, dim, name)
        torch.library.opcheck(torch.ops.kplay.softmax_backward.default, (torch.randn_like(y), y, dim, name))


def test_rows_of_a_contiguous_gradient_along_an_inner_dim():
    # The backward of an output written as plain rows (its input was not contiguous) gets a
    # contiguous gradient, along a dim that is not its last: it is read as rows of a dim-last copy
    # (the Python operators' helper; the C++ ones' is held by test_cuda_matches_torch_in_every_layout).
    from kplay import _torch_softmax as ts
    g = torch.randn(24, 240)
    t, rows, cols, pitch = ts._rows(g, 0)
    assert (rows, cols, pitch) == (240, 24, 24)
    assert t.stride() == (1, 24)
    assert torch.equal(t, g)


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_float64(name):
    # Autograd's wiring (the saved output, the sign of softmin's chain rule, log_softmax's exp(y)).
    g = torch.Generator().manual_seed(1)
    for shape, dim in [((4, 7), -1), ((4, 7), 0), ((2, 3, 4), 1), ((5,), 0)]:
        x = torch.randn(shape, generator=g, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: KT[name](t, dim), (x,))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_is_torch_bit_for_bit(name, dtype):
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(6, 5, 9, generator=g) * 5).to(dtype)
    grad = torch.randn(x.shape, generator=g).to(dtype)
    for dim in (-1, 0, 1):
        y, gx = run(KT[name], x, grad, dim)
        ty, tgx = run(TORCH[name], x, grad, dim)
        exactly(y, ty)
        exactly(gx, tgx)
    exactly(KT[name](edge_rows(dtype), -1), TORCH[name](edge_rows(dtype), -1))


def test_empty_tensors_scalars_and_rows_of_one():
    for name in NAMES:
        for shape, dim in [((5, 0, 0), -1), ((0, 3), 1), ((0, 3), 0), ((), 0), ((), -1), ((4, 1), 1)]:
            x = torch.randn(shape, dtype=torch.float64)
            y = KT[name](x, dim)
            assert y.shape == x.shape
            exactly(y, TORCH[name](x, dim))


def test_dtype_argument_casts_first():
    x = torch.randn(3, 4)
    exactly(kt.softmax(x, 1, dtype=torch.float64), torch.softmax(x, 1, dtype=torch.float64))
    exactly(kt.log_softmax(x.half(), -1, dtype=torch.float32), torch.log_softmax(x.half(), -1, dtype=torch.float32))


def test_fake_kernel_promises_the_strides_every_kernel_gives():
    # A contiguous input: contiguous along any dim (the CUDA kernel reads another dim than the last
    # as strided rows); any other layout along a dim that is not the last: contiguous with dim moved
    # last (the layout the CUDA kernel writes, the CPU kernel too), so torch.compile plans its
    # buffers right.
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(2, 3, 4, 5)
    nhwc = x.to(memory_format=torch.channels_last)
    for t in (x, nhwc, x.transpose(2, 3)):
        for dim in (-1, 1, 0):
            real = torch.ops.kplay.softmax(t, dim, "softmax")
            with FakeTensorMode() as mode:
                fake = torch.ops.kplay.softmax(mode.from_tensor(t), dim, "softmax")
            assert fake.stride() == real.stride() and fake.shape == real.shape
    for dim in (-1, 1, 0):
        assert torch.ops.kplay.softmax(x, dim, "softmax").is_contiguous()
    y = torch.ops.kplay.softmax(nhwc, 1, "softmax")
    assert y.stride(1) == 1  # channels last in memory, as the input


def test_compile_without_graph_break_on_cpu():
    def f(t):
        return kt.log_softmax(kt.softmax(t, -1) * 2, 0)

    x = torch.randn(4, 6)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    exactly(compiled(x), f(x))


def test_python_operators_have_the_extensions_schemas():
    # Without the C++ extension (KPLAY_TORCH_OPS=python) kplay/_torch_softmax.py registers the same
    # two ops in Python, with the same schemas, CPU results and autograd.
    import os
    import subprocess
    import sys

    code = ("import warnings, torch\n"
            "with warnings.catch_warnings():\n"
            "    warnings.simplefilter('ignore')\n"
            "    import kplay.torch as kt\n"
            "from kplay import _torch_softmax\n"
            "print(_torch_softmax.EXTENSION_OPS)\n"
            "print(torch.ops.kplay.softmax.default._schema)\n"
            "print(torch.ops.kplay.softmax_backward.default._schema)\n"
            "x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)\n"
            "print(torch.autograd.gradcheck(lambda t: kt.softmin(t, 0), (x,)))\n")
    env = dict(os.environ, KPLAY_TORCH_OPS="python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "False", out
    from kplay import _torch_softmax

    def names(schema):  # the argument names and types; the op's own name is the same
        return str(schema).split("(", 1)[1]

    assert names(lines[1]) == names(torch.ops.kplay.softmax.default._schema)
    assert names(lines[2]) == names(torch.ops.kplay.softmax_backward.default._schema)
    assert lines[3] == "True"
    assert isinstance(_torch_softmax.EXTENSION_OPS, bool)


def test_bad_arguments_raise():
    x = torch.randn(3, 4)
    with pytest.raises(kplay.InvalidArgumentError, match="out of range"):
        kt.softmax(x, 2)
    with pytest.raises(kplay.InvalidArgumentError, match="float32, float16, bfloat16 or float64"):
        kt.softmax(torch.ones(3, 4, dtype=torch.int32), -1)
    with pytest.raises(kplay.InvalidArgumentError, match="softmax family"):
        torch.ops.kplay.softmax(x, -1, "relu")
    with pytest.raises(ValueError, match="3D or 4D"):
        knn.Softmax2d()(torch.randn(2, 3))


def test_torch_tier_is_float32_alone_for_every_member():
    # On CPU tensors the ops are torch's own; the tier's refusals are the CUDA kernels'.
    x = torch.randn(3, 4)
    for fn, module in ((kt.softmax, knn.Softmax), (kt.log_softmax, knn.LogSoftmax), (kt.softmin, knn.Softmin)):
        exactly(fn(x, -1, accuracy="torch"), fn(x, -1))
        assert "accuracy='torch'" in repr(module(1, accuracy="torch"))
        with pytest.raises(kplay.InvalidArgumentError, match="float32 tier"):
            fn(x.to(torch.bfloat16), -1, accuracy="torch")
        with pytest.raises(kplay.InvalidArgumentError, match="accuracy must be"):
            fn(x, -1, accuracy="fast")
        with pytest.raises(kplay.InvalidArgumentError, match="accuracy must be"):
            module(1, accuracy="fast")
    with pytest.raises(kplay.InvalidArgumentError, match="softmax family"):
        torch.ops.kplay.softmax(x, -1, "softmax(accuracy=fast)")


class Tiny(torch.nn.Module):
    """Attention-like scores through every softmax module torch.nn has."""

    def __init__(self, legacy=True):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.attn = torch.nn.Softmax(dim=-1)
        self.head = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.LogSoftmax(dim=1))
        self.gate = torch.nn.Softmin(dim=0)
        self.maps = torch.nn.Softmax2d()
        # dim=None: torch's implicit choice (1 for 2-D), with its warning
        self.legacy = torch.nn.Softmax() if legacy else torch.nn.Softmax(1)

    def forward(self, x):
        s = self.attn(self.proj(x) @ self.proj(x).T)
        h = self.head(s @ x) + self.gate(x)[:, :6] + self.legacy(x)[:, :6]
        return h + self.maps(h.reshape(1, 2, 3, -1)).reshape(h.shape)


def test_replace_activations_swaps_every_softmax_module_and_keeps_the_output():
    torch.manual_seed(0)
    model = Tiny()
    x = torch.randn(5, 8, dtype=torch.float32)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        want = model(x)
    kt.replace_activations(model)
    assert type(model.attn) is knn.Softmax and model.attn.dim == -1
    assert type(model.head[1]) is knn.LogSoftmax and model.head[1].dim == 1
    assert type(model.gate) is knn.Softmin and model.gate.dim == 0
    assert type(model.maps) is knn.Softmax2d
    assert type(model.legacy) is knn.Softmax and model.legacy.dim is None
    with pytest.warns(UserWarning, match="Implicit dimension"):
        exactly(model(x), want)  # CPU tensors: torch's own kernels
    assert "dim=-1" in repr(model.attn)


# ---- on a CUDA device ---------------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="no CUDA device: kplay's row kernels are not run (CPU and OpenCL tests cover the rest)")
# Per dtype: torch's own tolerances (torch.testing's defaults) hold between kplay and torch, both
# within a rounding or two of exact.
TOL = {torch.float32: (1.3e-6, 1e-5), torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
       torch.float64: (1e-7, 1e-7)}


def close(actual, expected, dtype):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def torch_backward(name, grad, y, dim):
    """torch's own backward of the family from a saved output, as its autograd runs it."""
    A = torch.ops.aten
    if name == "log_softmax":
        return A._log_softmax_backward_data(grad, y, dim, y.dtype)
    g = A._softmax_backward_data(grad, y, dim, y.dtype)
    return -g if name == "softmin" else g  # softmin(x) = softmax(-x)


def exact_backward(name, grad, y, dim):
    """The family's backward from a saved output in float64 (torch's formulas), rounded to y's dtype."""
    g, yy = grad.double(), y.double()
    if name == "log_softmax":
        r = g - yy.exp() * g.sum(dim, keepdim=True)
    else:
        r = yy * (g - (g * yy).sum(dim, keepdim=True))
        r = -r if name == "softmin" else r
    return r.to(y.dtype)


def backward_matches_torch(name, grad, y, ty, gx, dim, dtype, **tol):
    """kplay's backward against torch's from the same saved output (torch's y): kplay's and torch's
    forward results are each within a rounding or more of exact, but a rounding between them moves
    g - sum(g y) by up to an ulp of its terms, which where g and the sum cancel is many ulps of the
    result (16-bit: 2^-11 of the terms), so gradients from each side's own y differ by more than
    either's error. From one y they still differ where g and the sum cancel: torch sums g y in
    float, kplay in double; there each element must be within the tolerance of torch's result or of
    the exact one (the formula in float64 from that y), as test_softmax_opinfo.py judges. Then
    autograd's gradient (gx) is kplay's backward of kplay's own y."""
    kb = torch.ops.kplay.softmax_backward
    rtol, atol = (tol["rtol"], tol["atol"]) if tol else TOL[dtype]
    mine, theirs = kb(grad, ty, dim, name), torch_backward(name, grad, ty, dim)
    exact = exact_backward(name, grad, ty, dim)

    def near(a, b):
        a, b = a.double(), b.double()
        return ((a - b).abs() <= atol + rtol * b.abs()) | (a.isnan() & b.isnan()) | (a == b)

    ok = near(mine, theirs) | near(mine, exact)
    bad = (~ok).nonzero()
    assert bad.numel() == 0, (f"{name} {dtype}: {bad.shape[0]} gradients beyond torch's and the exact one, "
                              f"first at {bad[0].tolist()}: kplay {mine[tuple(bad[0])].item()}, torch "
                              f"{theirs[tuple(bad[0])].item()}, exact {exact[tuple(bad[0])].item()}")
    torch.testing.assert_close(gx, kb(grad, y, dim, name), rtol=rtol, atol=atol, equal_nan=True)


def layouts(device, dtype):
    """(tensor, dim): the layouts kplay reads where they are (as rows of contiguous elements, then as
    strided rows), then those it copies first."""
    g = torch.Generator(device="cpu").manual_seed(4)
    base = (torch.randn(6, 40, 24, generator=g) * 4).to(dtype).to(device)
    nhwc = torch.randn(2, 5, 3, 7, generator=g).to(dtype).to(device).to(memory_format=torch.channels_last)
    return [
        (base, -1),                                   # contiguous, last dim
        (base[3], -1),                                # 2-D
        (base[:, 3:30, 5:20], -1),                    # a slice: rows of one pitch
        (base.transpose(1, 2), 1),                    # unit stride along dim 1, rows of pitch 24
        (base.reshape(240, 24).T, 0),                 # a transposed matrix along dim 0
        (nhwc, 1),                                    # channels-last image's channels (Softmax2d)
        (base, 1),                                    # a contiguous tensor's dim 1: strided rows
        (base, 0),                                    # dim 0: strided rows, 960 apart
        (nhwc.contiguous(), -3),                      # Softmax2d of a contiguous image: strided rows
        (base[:, :, :1].expand(6, 40, 7), -1),        # broadcast: copied
        (base.transpose(0, 1)[:, :, 3:9], 1),         # no unit stride, gapped: copied
    ]


@cuda
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_matches_torch_in_every_layout(name, dtype):
    for x, dim in layouts("cuda", dtype):
        grad = torch.randn(x.shape, device="cuda").to(dtype)
        y, gx = run(KT[name], x, grad, dim)
        ty, _ = run(TORCH[name], x, grad, dim)
        close(y, ty, dtype)
        backward_matches_torch(name, grad, y, ty, gx, dim, dtype)


@cuda
def test_cuda_long_rows_and_edges():
    for dtype in DTYPES:
        for name in NAMES:
            close(KT[name](edge_rows(dtype, "cuda"), -1), TORCH[name](edge_rows(dtype, "cuda"), -1), dtype)
    # Registers, then online kernels by default. Relative tolerances: a long row's results
    # are below torch's default atol, which would pass anything; 1e-4 leaves room for torch's own
    # float sums (kplay's are in double).
    for cols in (1, 1000, 4099, 65536, 393216):
        x = torch.randn(8, cols, device="cuda") * 3
        grad = torch.randn_like(x)
        for name in NAMES:
            y, gx = run(KT[name], x, grad, -1)
            ty, _ = run(TORCH[name], x, grad, -1)
            torch.testing.assert_close(y, ty, rtol=1e-4, atol=0)
            backward_matches_torch(name, grad, y, ty, gx, -1, torch.float32, rtol=1e-4, atol=1e-8)


@cuda
def test_cuda_torch_tier_within_its_bound_and_exact_backward():
    # float32 forward by torch's formula in float: each result within 12 ulp and what rounding
    # x - max to float costs (2^-24 |x - max|, and 2.25 2^-24 of the row's term-weighted mean
    # |x - max| through the sum: of the result for softmax, absolute for log_softmax;
    # docs/accuracy.md, "The softmax family at torch's accuracy"); the edge rows as torch's; the
    # backward the exact kernel's, bit for bit, but log_softmax's, torch's formula within its bound.
    for name in NAMES:
        close(KT[name](edge_rows(torch.float32, "cuda"), -1, accuracy="torch"),
              TORCH[name](edge_rows(torch.float32, "cuda"), -1), torch.float32)
        for cols in (1, 33, 1000, 4099, 65536, 393216):
            x = torch.randn(8, cols, device="cuda") * 8
            x[1, cols // 2] += 60  # a row whose log_softmax result next to 0 is -(sum - 1), tiny
            v = (-x if name == "softmin" else x).double()
            d = v - v.amax(-1, keepdim=True)
            e = torch.exp(d)
            # log_softmax's reference by log1p of the sum less the max's 1s: torch's own, even in
            # float64, takes the log of a sum rounded next to 1 and loses a result next to 0 (the
            # max's, -(sum - 1), about -1e-19 in the row with the +60 at 33 columns)
            rest = (e * (d != 0)).sum(-1, keepdim=True) + ((d == 0).sum(-1, keepdim=True) - 1)
            ref = d - torch.log1p(rest) if name == "log_softmax" else torch.softmax(v, -1)
            mean = (e * -d).sum(-1, keepdim=True) / e.sum(-1, keepdim=True)
            y = KT[name](x, -1, accuracy="torch")
            allowed = (1.0 if name == "log_softmax" else ref.abs()) * 2.0**-24 * (-d + 2.25 * mean)
            ulp = torch.exp2(torch.floor(torch.log2(ref.abs().clamp(min=2.0**-126)))) * 2.0**-23
            beyond = ((y.double() - ref).abs() - allowed).clamp(min=0) / ulp
            assert beyond.max().item() <= 12, (name, cols, beyond.max().item())
            grad = torch.randn_like(x)
            xr = x.clone().requires_grad_()
            KT[name](xr, -1, accuracy="torch").backward(grad)
            if name != "log_softmax":
                exactly(xr.grad, torch.ops.kplay.softmax_backward(grad, y, -1, name))
                continue
            # log_softmax's tier backward, torch's g - exp(y) sum g in float: within 2^27 ulp of the
            # larger of the result and 2^-24 of the terms (8 2^-24 of the terms)
            g, e = grad.double(), torch.exp(y.double())
            s = g.sum(-1, keepdim=True)
            ref = g - e * s
            mag = torch.maximum(ref.abs(), 2.0**-24 * (g.abs() + e * s.abs()))
            ulp = torch.exp2(torch.floor(torch.log2(mag.clamp(min=2.0**-126)))) * 2.0**-23
            assert ((xr.grad.double() - ref).abs() / ulp).max().item() <= 2**27, (cols,)
    for module, fn in ((knn.Softmax, kt.softmax), (knn.LogSoftmax, kt.log_softmax)):
        x = torch.randn(4, 1000, device="cuda")
        exactly(module(-1, accuracy="torch")(x), fn(x, -1, accuracy="torch"))


@cuda
def test_cuda_strided_rows_read_and_written_in_place():
    # A contiguous input along a dim that is not the last: its output contiguous like it, the
    # backward's too, with no copy of either (the caching allocator's peak holds input, output
    # and the gradient, nothing more), every member matching torch.
    x = torch.randn(8, 21, 33, 40, device="cuda") * 3
    for name in NAMES:
        for dim in (1, -3, 0, 2):
            y = KT[name](x, dim)
            assert y.is_contiguous()
            close(y, TORCH[name](x, dim), torch.float32)
    t = x.clone().requires_grad_()
    y = kt.softmax(t, 1)
    grad = torch.randn_like(y)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    y.backward(grad)
    torch.cuda.synchronize()
    assert t.grad.is_contiguous()
    assert torch.cuda.max_memory_allocated() - before <= x.numel() * x.element_size() + (1 << 20)
    u = x.clone().requires_grad_()
    torch.softmax(u, 1).backward(grad)
    torch.testing.assert_close(t.grad, u.grad, rtol=1e-5, atol=1e-6)


@cuda
def test_cuda_empty_and_scalar():
    for name in NAMES:
        for shape, dim in [((5, 0, 0), -1), ((0, 3), 1), ((), 0), ((4, 1), 1)]:
            x = torch.randn(shape, device="cuda")
            exactly(KT[name](x, dim), TORCH[name](x, dim))


@cuda
@pytest.mark.parametrize("name", NAMES)
def test_cuda_gradcheck_float64(name):
    for shape, dim in [((4, 33), -1), ((5, 6, 7), 1)]:
        x = torch.randn(shape, device="cuda", dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: KT[name](t, dim), (x,))


@cuda
def test_cuda_compile_fullgraph_and_modules():
    model = Tiny(legacy=False).cuda()
    x = torch.randn(5, 8, device="cuda")
    want = model(x)
    kt.replace_activations(model)
    close(model(x), want, torch.float32)
    compiled = torch.compile(model, fullgraph=True)  # Inductor's own matmuls and fusions around kplay's op
    torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-5)
    f = torch.compile(lambda t: kt.softmax(t * 2, -1).sum(), fullgraph=True)
    t = torch.randn(64, 1000, device="cuda", requires_grad=True)
    f(t).backward()
    u = t.detach().clone().requires_grad_()
    torch.softmax(u * 2, -1).sum().backward()
    torch.testing.assert_close(t.grad, u.grad, rtol=1e-5, atol=1e-6)


@cuda
def test_cuda_kplay_softmax_on_torch_tensors():
    # kplay.softmax (the array API) on a CUDA tensor: the same kernel, no autograd.
    x = torch.randn(7, 300, device="cuda", dtype=torch.float64)
    close(kplay.softmax(x), torch.softmax(x, -1), torch.float64)
    y = torch.softmax(x, -1)
    g = torch.randn_like(x)
    close(kplay.softmax_backward(g, y), torch.ops.aten._softmax_backward_data(g, y, 1, x.dtype), torch.float64)


@cuda
def test_cuda_rows_off_the_vector_take_the_general_kernel_and_a_capture_that_needs_it_says_so():
    # Rows of whole vectors run the kernel's whole-vector form; a tensor one element into its
    # storage (rows off the vector) its general twin, built on first need. A CUDA graph capture
    # cannot build it: warmed on whole rows alone, a capture on the shifted tensor is refused.
    rows, cols = 97, 72
    base = torch.randn(rows * cols + 1, device="cuda")
    whole, shifted = base[:-1].view(rows, cols), base[1:].view(rows, cols)
    close(kt.softmin(whole, -1), F.softmin(whole, -1), torch.float32)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(kplay.UnsupportedError, match="general kernel.*warm-up"):
        with torch.cuda.graph(graph):
            kt.softmin(shifted, -1)
    close(kt.softmin(shifted, -1), F.softmin(shifted, -1), torch.float32)  # eager: built, and right


@pytest.mark.parametrize("mode", ("kernel", "auto"))
@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16, torch.float32))
@pytest.mark.parametrize("cols", (40, 1024, 1025))
@pytest.mark.parametrize("name", NAMES)
def test_compile_auto_hands_torch_the_16bit_forward_of_short_rows(name, cols, dtype, mode):
    # "auto": torch's softmax and softmin forward where it rounds once from float32 as the kernel
    # does (16-bit) and Inductor's was the faster (rows of up to SHORT_ROW elements); log_softmax's
    # forward (torch's loses bits near 0) and every backward stay the kernel's.
    from compiled_graphs import compiled_graphs
    from kplay import _torch_decomp

    before = _torch_decomp.mode()
    kt.set_compile_mode(mode)
    kt.register_decompositions()
    try:
        x = torch.empty(6, cols, device="meta", dtype=dtype, requires_grad=True)
        graphs = compiled_graphs(lambda t: KT[name](t, -1) * 2, x)
    finally:
        kt.set_compile_mode(before)
        torch._dynamo.reset()
    assert len(graphs) == 2
    ops = [t for g in graphs for t in g]
    kplay_ops = [t for t in ops if t.startswith("kplay.")]
    short_16bit = dtype != torch.float32 and cols <= _torch_decomp.SHORT_ROW
    if mode == "auto" and short_16bit and name != "log_softmax":
        assert kplay_ops == ["kplay.softmax_backward.default"]
        assert "aten.amax.default" in ops
    else:
        assert kplay_ops == ["kplay.softmax.default", "kplay.softmax_backward.default"]


@pytest.mark.parametrize("mode", ("kernel", "decompose", "auto"))
@pytest.mark.parametrize("name", NAMES)
def test_compile_decomposes_the_whole_family_in_decompose_mode_alone(name, mode):
    # No GPU: AOTAutograd's graphs of a meta tensor after Inductor's decomposition table.
    from compiled_graphs import compiled_graphs
    from kplay import _torch_decomp

    before = _torch_decomp.mode()
    kt.set_compile_mode(mode)
    kt.register_decompositions()
    try:
        x = torch.empty(6, 40, device="meta", requires_grad=True)
        graphs = compiled_graphs(lambda t: KT[name](t, -1) * 2, x)
    finally:
        kt.set_compile_mode(before)
        torch._dynamo.reset()
    assert len(graphs) == 2  # forward and backward: no graph break
    ops = [t for g in graphs for t in g]
    kplay_ops = [t for t in ops if t.startswith("kplay.")]
    if mode == "decompose":
        assert kplay_ops == []
        assert "aten.amax.default" in ops  # torch's max-subtracting formula in their place
    else:
        assert kplay_ops == ["kplay.softmax.default", "kplay.softmax_backward.default"]

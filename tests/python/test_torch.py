"""kplay.torch on a CUDA GPU: opcheck, values and gradients against torch for every activation
and dtype, gradcheck in float64, torch.compile(fullgraph=True), CUDA graphs, layouts, kplay.nn.
Skipped visibly without torch or without a CUDA device."""
import pytest

torch = pytest.importorskip("torch", reason="torch not installed: kplay.torch tests skipped")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: kplay.torch tests skipped", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import kplay  # noqa: E402
import kplay.nn as knn  # noqa: E402
import kplay.torch as kt  # noqa: E402
from kplay import _table  # noqa: E402

AVAILABLE = [e for e in _table.TABLE if e.activation in kplay.activations()]
TORCH_FN = {"sigmoid": torch.sigmoid, "tanh": torch.tanh}
EXAMPLE_PARAMS = {"leaky_relu": {"negative_slope": 0.2}, "elu": {"alpha": 0.7}, "celu": {"alpha": 1.3},
                  "gelu": {"approximate": "tanh"}, "softplus": {"beta": 2.0, "threshold": 10.0},
                  "hardtanh": {"min_val": -0.5, "max_val": 2.0}, "softshrink": {"lambd": 0.3},
                  "hardshrink": {"lambd": 0.3}, "threshold": {"threshold": 0.1, "value": -2.0}}
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2),
       torch.float64: (1e-12, 1e-12)}
DTYPES = list(TOL)


def torch_fn(entry, params):
    f = TORCH_FN.get(entry.activation) or getattr(F, entry.activation)
    return lambda x: f(x, **params)


def _celu_double(x, alpha=1.0):
    return torch.where(x <= 0, alpha * torch.expm1(x / alpha), x)


# (activation, dtype) pairs where torch in that dtype is less exact than kplay: the reference is
# then computed in float64 from the same inputs (the formula given, else torch's function) and
# rounded to the dtype. One line of reason each.
REFERENCE_IN_F64 = {
    # torch's CUDA kernels multiply by one_sixth(1.0f / 6.0f): float-rounded 1/6 (error 2^-25).
    ("hardsigmoid", torch.float64): lambda x: (x + 3).clamp(0, 6) / 6,
    ("hardswish", torch.float64): lambda x: x * (x + 3).clamp(0, 6) / 6,
    # torch's celu backward divides by alpha.toFloat(): alpha rounded to float.
    ("celu", torch.float64): _celu_double,
    # torch's tanhshrink is the composite x - tanh(x), rounded to 16 bits after each op.
    ("tanhshrink", torch.float16): None,
    ("tanhshrink", torch.bfloat16): None,
}


def reference(entry, params, dtype, x, g):
    """torch's value and gradient for x (and incoming gradient g), in dtype."""
    special = (entry.activation, dtype)
    if special in REFERENCE_IN_F64:
        fn = REFERENCE_IN_F64[special] or torch_fn(entry, {})
        x64 = x.detach().double().requires_grad_()
        y = fn(x64, **params)
        y.backward(g.double())
        return y.detach().to(dtype), x64.grad.to(dtype)
    ref_x = x.detach().clone().requires_grad_()
    y = torch_fn(entry, params)(ref_x)
    y.backward(g)
    return y.detach(), ref_x.grad


def cases():
    for e in AVAILABLE:
        # An activation whose parameters have no default (Threshold) has no parameter-free case.
        if all(default is not _table.REQUIRED for _, default in e.params):
            yield pytest.param(e, {}, id=e.activation)
        if e.activation in EXAMPLE_PARAMS:
            yield pytest.param(e, EXAMPLE_PARAMS[e.activation], id=e.activation + "-params")


def mixed(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, device="cuda", generator=g, dtype=torch.float64) * 3).to(dtype)


def act_string(entry, params):
    return _table.activation_string(entry.activation, params)


@pytest.mark.parametrize("entry,params", cases())
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_values_and_gradients_match_torch(entry, params, dtype):
    x = mixed((257, 33), dtype).requires_grad_()
    g = mixed((257, 33), dtype, seed=1)
    ours = kt.activation(x, act_string(entry, params))
    theirs, their_grad = reference(entry, params, dtype, x, g)
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(ours, theirs, rtol=rtol, atol=atol)
    ours.backward(g)
    torch.testing.assert_close(x.grad, their_grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("entry,params", cases())
def test_gradcheck_float64(entry, params):
    x = mixed((64,), torch.float64)
    x = x[(x.abs() > 0.05)][:40].clone().requires_grad_()  # away from kinks
    assert torch.autograd.gradcheck(lambda t: kt.activation(t, act_string(entry, params)), (x,))


@pytest.mark.parametrize("entry,params", cases())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_opcheck_every_op(entry, params, dtype):
    act = act_string(entry, params)
    x = mixed((8, 16), dtype)
    torch.library.opcheck(torch.ops.kplay.forward.default, (x.clone().requires_grad_(), act))
    torch.library.opcheck(torch.ops.kplay.forward.default, (x[:, 2:9], act))  # pitched view
    torch.library.opcheck(torch.ops.kplay.forward_.default, (x.clone(), act))
    saved = x if not kt.saves_output(act) else kt.activation(x, act)
    torch.library.opcheck(torch.ops.kplay.backward.default, (mixed((8, 16), dtype, 2), saved, act,
                                                             kt.saves_output(act)))


def test_saved_tensor_policy():
    # The output only where the derivative follows exactly from it, or where torch saves it too:
    # each registry entry's saves_output.
    for e in _table.BUILTINS:
        act = act_string(e, {n: 0.5 for n, d in e.params if d is _table.REQUIRED})
        assert kt.saves_output(act) == e.saves_output, act
    assert kt.saves_output("sigmoid") and kt.saves_output("relu")  # torch saves sigmoid's output too
    assert not kt.saves_output("selu")  # from y, its negative branch cancels
    assert not kt.saves_output("leaky_relu(negative_slope=-0.5)")  # a negative slope loses the sign


def test_saved_output_survives_a_changed_input_and_saved_input_does_not():
    # With the output saved, changing the input after the forward does not disturb backward;
    # with the input saved, autograd's version check raises.
    leaf = mixed((100,), torch.float32).requires_grad_()
    x = leaf * 1.0
    y = kt.relu(x)
    x.add_(1.0)
    y.sum().backward()
    torch.testing.assert_close(leaf.grad, (leaf.detach() > 0).float())
    x = leaf * 1.0
    y = kt.selu(x)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_eager_path_matches_the_op():
    # kplay.torch's eager entry (kplay._torch_ops.forward) and torch.ops.kplay.forward give the same
    # bits, forward and backward.
    for act in ("selu", "relu", "gelu(approximate=tanh)"):
        x = mixed((3, 1000), torch.float32).requires_grad_()
        g = mixed((3, 1000), torch.float32, seed=3)
        y = kt.activation(x, act)
        y.backward(g)
        x2 = x.detach().clone().requires_grad_()
        y2 = torch.ops.kplay.forward(x2, act)
        y2.backward(g)
        assert torch.equal(y, y2) and torch.equal(x.grad, x2.grad), act
    with pytest.raises(RuntimeError):  # no double backward: once_differentiable says so
        x = mixed((10,), torch.float64).requires_grad_()
        (gx,) = torch.autograd.grad(kt.selu(x).sum(), x, create_graph=True)
        gx.sum().backward()


def test_kplay_forward_fast_path_checks():
    x = mixed((4096,), torch.float32)
    out = torch.empty_like(x)
    assert kplay.forward("selu", x, out=out) is out
    torch.testing.assert_close(out, torch.selu(x))
    y = x.clone()
    assert kplay.forward("selu", y, out=y) is y
    torch.testing.assert_close(y, torch.selu(x))
    with pytest.raises(kplay.InvalidArgumentError, match="overlaps"):
        kplay.forward("selu", x[:-1], out=x[1:])
    torch.testing.assert_close(kplay.forward("selu", x.half()), torch.selu(x.half()))


@pytest.mark.parametrize("saved_output", [False, True])
def test_kplay_backward_fast_path_matches_the_general_path(saved_output):
    # stream= takes the general path (describe, layout plan, kplay::backward); without it a plain
    # CUDA tensor goes through a cached launcher: the same kernel, so the same bits.
    x = mixed((5000,), torch.float32)
    saved = torch.selu(x) if saved_output else x
    g = mixed((5000,), torch.float32, seed=1)
    stream = torch.cuda.current_stream()
    want = kplay.backward("selu", g, saved, saved_output=saved_output, stream=stream)
    assert torch.equal(kplay.backward("selu", g, saved, saved_output=saved_output), want)
    x_ref = x.clone().requires_grad_()
    torch.selu(x_ref).backward(g)
    torch.testing.assert_close(want, x_ref.grad)
    out = torch.empty_like(g)
    assert kplay.backward("selu", g, saved, saved_output, grad_in=out) is out and torch.equal(out, want)
    g2 = g.clone()
    assert kplay.backward("selu", g2, saved, saved_output, grad_in=g2) is g2 and torch.equal(g2, want)
    with pytest.raises(kplay.InvalidArgumentError, match="overlaps"):
        kplay.backward("selu", g[1:], saved[1:].clone(), saved_output, grad_in=g[:-1])
    with pytest.raises(kplay.InvalidArgumentError, match="overlaps"):
        kplay.backward("selu", g[1:].clone(), saved[1:], saved_output, grad_in=saved[:-1])
    with pytest.raises(kplay.InvalidArgumentError, match="float16"):  # the general path's message
        kplay.backward("selu", g, saved.half(), saved_output)


def test_in_place_variants():
    x = mixed((1000,), torch.float32)
    want = torch.selu(x)
    y = x.clone()
    assert kt.selu_(y) is y
    torch.testing.assert_close(y, want)
    leaf = mixed((1000,), torch.float32).requires_grad_()
    z = leaf * 1.0
    kt.selu_(z)
    z.sum().backward()
    torch.testing.assert_close(leaf.grad, torch.where(leaf > 0, 1.0507009873554805, 1.0507009873554805 *
                                                      1.6732632423543772 * leaf.detach().exp()), rtol=1e-5,
                               atol=1e-5)


def test_in_place_with_grad_where_the_output_is_saved():
    leaf = mixed((1000,), torch.float32).requires_grad_()
    z = leaf * 2.0
    assert kt.relu_(z) is z
    torch.testing.assert_close(z, torch.relu(leaf.detach() * 2.0))
    z.sum().backward()
    torch.testing.assert_close(leaf.grad, 2.0 * (leaf.detach() > 0).float())
    before = leaf.detach().clone()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        kt.relu_(leaf)
    assert torch.equal(leaf.detach(), before)  # refused before anything was written


def test_in_place_without_grad_is_seen_by_autograd():
    # The eager in-place path bumps the version counter as torch's in-place ops do.
    x = mixed((1000,), torch.float32)
    v = x._version
    kt.selu_(x)
    assert x._version > v
    leaf = mixed((1000,), torch.float32).requires_grad_()
    b = torch.exp(leaf)  # exp saves its output
    with torch.no_grad():
        kt.relu_(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_layouts_pitched_dense_and_broadcast():
    base = mixed((64, 48), torch.float32)
    views = {"columns": lambda t: t[:, 5:30], "transposed": lambda t: t.t(), "rows": lambda t: t[::2],
             "folded": lambda t: t.view(8, 8, 48)[:, :, 3:20]}
    for name, view in views.items():
        x = view(base)
        torch.testing.assert_close(kt.activation(x, "selu"), torch.selu(x), msg=name)
        b = base.clone()
        kt.activation_(view(b), "selu")  # in place on the view: only its elements change
        want = base.clone()
        view(want).copy_(torch.selu(view(base)))
        torch.testing.assert_close(b, want, msg=name)
    x = base[:1].expand(64, 48)  # broadcast: copied to dense first
    torch.testing.assert_close(kt.activation(x, "selu"), torch.selu(x))


def test_wrong_dtype_and_name_are_clear():
    # A CPU tensor is no error: it runs torch's own function (tests/python/test_torch_cpu.py).
    with pytest.raises(kplay.InvalidArgumentError, match="float32"):
        kt.selu(torch.ones(4, device="cuda", dtype=torch.int32))
    with pytest.raises(kplay.InvalidArgumentError, match="unknown activation"):
        kt.activation(torch.ones(4, device="cuda"), "nope")


def test_compile_fullgraph_no_graph_break():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), knn.SELU(), torch.nn.Linear(64, 64), knn.ReLU(inplace=True))
    model = model.cuda()
    x = mixed((32, 64), torch.float32)
    eager = model(x)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x), eager, rtol=1e-4, atol=1e-4)
    xg = x.clone().requires_grad_()
    compiled(xg).sum().backward()
    assert xg.grad is not None and torch.isfinite(xg.grad).all()
    explanation = torch._dynamo.explain(model)(x)
    assert explanation.graph_break_count == 0


def test_cuda_graph_capture_and_replay():
    x = mixed((4096,), torch.float32)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        kt.selu(x)  # warm-up: compiles or loads the kernel for this size
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = kt.selu(x)
    x.copy_(mixed((4096,), torch.float32, seed=7))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.selu(x))


def test_capture_that_needs_a_compile_says_so():
    x = mixed((3 << 22,), torch.float16)  # a size bucket no other test warmed for f16 backward
    g = mixed((3 << 22,), torch.float16, 1)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(kplay.UnsupportedError, match="warm-up"):
        with torch.cuda.graph(graph):
            torch.ops.kplay.backward(g, x, "relu", False)


def test_nn_modules_and_replace_activations():
    assert knn.GELU(approximate="tanh").activation == "gelu(approximate=tanh)"
    assert knn.LeakyReLU(0.2, inplace=True).inplace
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.SELU(), torch.nn.Sequential(torch.nn.ReLU()),
                                torch.nn.PReLU())
    kt.replace_activations(model)
    assert isinstance(model[1], knn.SELU) and isinstance(model[2][0], knn.ReLU)
    assert isinstance(model[3], knn.PReLU)  # kplay's, with torch's weight Parameter

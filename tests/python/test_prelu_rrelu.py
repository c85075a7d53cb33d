"""kplay.torch.prelu / rrelu and kplay.nn.PReLU / RReLU against torch. Without a GPU: the ops'
schemas, Meta kernels and refusals, the modules and replace_activations; on CUDA: prelu's values
and gradients (the weight's against a float64 sum with the bound of its float32 summation),
gradcheck in float64, rrelu's evaluation bit for bit and its training draws by their properties."""
import math

import pytest

torch = pytest.importorskip("torch", reason="torch not installed: kplay.torch tests skipped")

import kplay  # noqa: E402
import kplay.nn as knn  # noqa: E402
import kplay.torch as kt  # noqa: E402

F = torch.nn.functional
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


@pytest.fixture()
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: kplay's kernels run on CUDA tensors")


# ---- without a device ----------------------------------------------------------------------------

def test_ops_are_registered_with_their_schemas():
    for name in ("prelu", "prelu_backward", "rrelu_train", "rrelu_train_backward"):
        assert hasattr(torch.ops.kplay, name), name
    assert "Tensor weight" in str(torch.ops.kplay.prelu.default._schema)


def test_meta_kernels_give_shapes_and_refuse_a_weight_of_the_wrong_length():
    x = torch.empty(2, 3, 5, device="meta")
    assert torch.ops.kplay.prelu(x, torch.empty(3, device="meta")).shape == (2, 3, 5)
    assert torch.ops.kplay.prelu(x, torch.empty(1, device="meta")).shape == (2, 3, 5)
    gx, gw = torch.ops.kplay.prelu_backward(x, x, torch.empty(3, device="meta"))
    assert gx.shape == (2, 3, 5) and gw.shape == (3,)
    with pytest.raises(kplay.InvalidArgumentError, match="weight has 4 elements but the input of shape"):
        torch.ops.kplay.prelu(x, torch.empty(4, device="meta"))
    with pytest.raises(ValueError, match="one element or one per channel"):  # InvalidArgumentError is a ValueError
        torch.ops.kplay.prelu(torch.empty(6, device="meta"), torch.empty(6, device="meta"))
    assert torch.ops.kplay.rrelu_train(x, 0.1, 0.3, 5, 0).shape == (2, 3, 5)
    with pytest.raises(kplay.InvalidArgumentError, match="lower"):
        torch.ops.kplay.rrelu_train(x, 0.5, 0.3, 5, 0)


def test_autograd_and_compiled_graphs_on_meta_tensors():
    x = torch.randn(2, 3, 4, device="meta", requires_grad=True)
    w = torch.full((3,), 0.25, device="meta", requires_grad=True)
    gx, gw = torch.autograd.grad(kt.prelu(x, w).sum(), (x, w))
    assert gx.shape == x.shape and gw.shape == w.shape
    (g,) = torch.autograd.grad(kt.rrelu(x, training=True, seed=3).sum(), x)
    assert g.shape == x.shape
    f = torch.compile(lambda a, b: kt.prelu(a, b) * 2, fullgraph=True, backend="eager")
    assert f(torch.randn(2, 3, 4, device="meta"), torch.empty(3, device="meta")).shape == (2, 3, 4)
    with pytest.raises(Exception, match="one per channel"):  # refused at trace time, by the fake kernel
        f(torch.randn(2, 3, 4, device="meta"), torch.empty(2, device="meta"))


def test_bad_arguments_are_refused_with_kplay_errors():
    with pytest.raises(kplay.InvalidArgumentError, match="weight has 2 elements"):
        kt.prelu(torch.randn(2, 3), torch.full((2,), 0.25))
    with pytest.raises(kplay.InvalidArgumentError, match="must be <= upper"):
        kt.rrelu(torch.randn(4), 0.5, 0.25)
    with pytest.raises(kplay.InvalidArgumentError, match="one per channel"):
        kplay.torch.prelu(torch.randn(4, 5, device="meta"), torch.empty(3, device="meta"))


def test_modules_and_replace_activations_take_torchs_parameters():
    p = knn.PReLU(3, init=0.1)
    assert p.weight.shape == (3,) and float(p.weight.detach()[0]) == pytest.approx(0.1)
    r = knn.RReLU(0.1, 0.4)
    assert r.activation == "rrelu(lower=0.1, upper=0.4)" and (r.lower, r.upper) == (0.1, 0.4)
    prelu = torch.nn.PReLU(4, init=0.3)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), prelu, torch.nn.RReLU(0.2, 0.3))
    kt.replace_activations(model)
    assert isinstance(model[1], knn.PReLU) and model[1].weight is prelu.weight  # an optimizer's Parameter still
    assert isinstance(model[2], knn.RReLU) and (model[2].lower, model[2].upper) == (0.2, 0.3)


def test_rrelu_seed_follows_torch_manual_seed():
    torch.manual_seed(3)
    a = kt.rrelu_seed()
    torch.manual_seed(3)
    assert kt.rrelu_seed() == a
    assert kt.rrelu_seed() != a


# ---- on CUDA -------------------------------------------------------------------------------------

def _mixed(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, device="cuda", generator=g) * 3).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,weights", [((4, 3, 5, 7), 3), ((4, 3, 5, 7), 1), ((8, 16), 16), ((33,), 1), ((), 1)])
def test_prelu_matches_torch(cuda, dtype, shape, weights):
    x = _mixed(shape, dtype).requires_grad_()
    w = (torch.linspace(-0.5, 1.5, weights, device="cuda")).to(dtype).requires_grad_()
    xt, wt = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    y, yt = kt.prelu(x, w), F.prelu(xt, wt)
    assert torch.equal(y, yt)  # one product, rounded once, in both
    g = _mixed(shape, dtype, 1)
    gx, gw = torch.autograd.grad(y, (x, w), g)
    gxt, gwt = torch.autograd.grad(yt, (xt, wt), g)
    assert torch.equal(gx, gxt)
    # The weight's gradient against the float64 sum: each of its m terms g x rounds once in the
    # compute type and the sum adds at most m + 10 + 256 roundings of u (float32, or float64 for
    # float64) of sum |g x|, then one rounding to the dtype.
    x64, g64 = x.detach().double(), g.double()
    terms = torch.where(x64 > 0, torch.zeros_like(x64), x64 * g64)
    if weights > 1:
        dims = [d for d in range(terms.dim()) if d != 1]
        exact, mag = terms.sum(dims), terms.abs().sum(dims)
    else:
        exact, mag = terms.sum().reshape(1), terms.abs().sum().reshape(1)
    m = terms.numel() // weights
    u = 2.0 ** -53 if dtype == torch.float64 else 2.0 ** -24
    ulp = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float64: 2.0 ** -52}
    bound = (m + 10 + 256 + 1) * u * mag + exact.abs() * ulp[dtype]
    err = (gw.double().reshape(-1) - exact).abs()
    assert bool((err <= bound).all()), f"weight gradient off by {err.max().item()} (bound {bound.max().item()})"
    torch.testing.assert_close(gw, gwt.reshape(gw.shape), rtol=1e-2 if dtype.itemsize == 2 else 1e-5, atol=1e-3)


def test_prelu_gradcheck_float64(cuda):
    x = _mixed((3, 4, 5), torch.float64).requires_grad_()
    w = torch.tensor([0.25, -0.5, 0.0, 1.5], device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(kt.prelu, (x, w))
    w1 = torch.tensor([0.3], device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(kt.prelu, (x, w1))


def test_prelu_weight_gradient_is_deterministic(cuda):
    x = _mixed((64, 1, 4096), torch.float32)
    g = _mixed((64, 1, 4096), torch.float32, 1)
    w = torch.full((1,), 0.25, device="cuda", requires_grad=True)
    grads = set()
    for _ in range(3):
        xr = x.clone().requires_grad_()
        (gw,) = torch.autograd.grad(kt.prelu(xr, w), w, g)
        grads.add(gw.item())
    assert len(grads) == 1


def test_prelu_module_matches_torchs(cuda):
    torch_m = torch.nn.PReLU(3).cuda()
    ours = knn.PReLU.from_torch(torch_m)
    x = _mixed((2, 3, 8), torch.float32)
    assert torch.equal(ours(x), torch_m(x))
    with pytest.raises(kplay.InvalidArgumentError, match="weight has 3 elements"):
        ours(_mixed((2, 4, 8), torch.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rrelu_evaluation_is_torchs_exactly(cuda, dtype):
    x = _mixed((1000,), dtype)
    for lower, upper in ((1.0 / 8, 1.0 / 3), (0.1, 0.7), (0.3, 0.3)):
        assert torch.equal(kt.rrelu(x, lower, upper), F.rrelu(x, lower, upper, training=False))
    m = knn.RReLU(0.1, 0.7).eval()
    assert torch.equal(m(x), torch.nn.RReLU(0.1, 0.7).eval()(x))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rrelu_training_draws_in_range_repeatably_and_backward_reuses_them(cuda, dtype):
    lower, upper = 0.1, 0.6
    x = -torch.ones(1 << 16, device="cuda", dtype=dtype)
    s1 = -kt.rrelu(x, lower, upper, training=True, seed=11)
    s2 = -kt.rrelu(x, lower, upper, training=True, seed=11)
    s3 = -kt.rrelu(x, lower, upper, training=True, seed=12)
    assert torch.equal(s1, s2)
    assert (s1 != s3).float().mean() > 0.9
    lo, hi = torch.tensor(lower, dtype=dtype).item(), torch.tensor(upper, dtype=dtype).item()
    assert float(s1.min()) >= lo and float(s1.max()) <= hi
    # Uniform: the mean within 5 standard errors, and each tenth of the range holds about a tenth.
    u = (s1.double() - lower) / (upper - lower)
    n = u.numel()
    assert abs(u.mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    if dtype in (torch.float32, torch.float64):
        counts = torch.histc(u.float(), bins=10, min=0, max=1)
        assert bool(((counts - n / 10).abs() < 5 * math.sqrt(n / 10)).all()), counts
    # Backward with g = 1 gives the slope forward used; where x > 0 it passes g.
    xm = _mixed((4097,), dtype).requires_grad_()
    y = kt.rrelu(xm, lower, upper, training=True, seed=5)
    (gx,) = torch.autograd.grad(y, xm, torch.ones_like(y))
    pos = xm.detach() > 0
    assert torch.equal(gx[pos], torch.ones_like(gx[pos]))
    neg = ~pos
    if dtype in (torch.float32, torch.float64):  # the slope itself, exactly: y is x times it, rounded once
        assert torch.equal(y.detach()[neg], xm.detach()[neg] * gx[neg])
    else:  # 16-bit: the gradient is the slope rounded to the dtype
        torch.testing.assert_close(y.detach()[neg].float(), xm.detach()[neg].float() * gx[neg].float(),
                                   rtol=2.0 ** -6, atol=0)


def test_rrelu_module_trains_with_torchs_seed(cuda):
    m = knn.RReLU()
    x = -torch.ones(4096, device="cuda")
    torch.manual_seed(0)
    a = m(x)
    torch.manual_seed(0)
    assert torch.equal(m(x), a)
    assert not torch.equal(m(x), a)
    assert torch.equal(m.eval()(x), torch.full_like(x, -(1 / 8 + 1 / 3) / 2))


def test_core_functions_on_torch_cuda_tensors(cuda):
    # kplay.prelu / prelu_backward / rrelu / rrelu_backward: the package's own entry points (any
    # DLPack or __cuda_array_interface__ array), without kplay.torch's autograd.
    x = _mixed((4, 3, 6), torch.float32)
    w = torch.tensor([0.25, -0.5, 1.5], device="cuda")
    assert torch.equal(kplay.prelu(x, w), F.prelu(x, w))
    g = _mixed((4, 3, 6), torch.float32, 1)
    gx, gw = kplay.prelu_backward(g, x, w)
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    gxt, gwt = torch.autograd.grad(F.prelu(xt, wt), (xt, wt), g)
    assert torch.equal(gx, gxt)
    torch.testing.assert_close(gw, gwt)
    with pytest.raises(kplay.InvalidArgumentError, match="weight has 2 elements"):
        kplay.prelu(x, w[:2])
    minus = -torch.ones(1000, device="cuda")
    a = kplay.rrelu(minus, 0.1, 0.6, training=True, seed=4, offset=10)
    assert torch.equal(kplay.rrelu_backward(torch.ones_like(minus), minus, 0.1, 0.6, True, 4, 10), -a)
    assert torch.equal(kplay.rrelu(minus, 0.1, 0.6), torch.full_like(minus, -0.35))

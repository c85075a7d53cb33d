"""torch's own test inputs through kplay.torch: the OpInfo samples (torch.testing._internal's
op_db) of every torch activation kplay has, compared with torch on CUDA with torch's default
tolerances (torch.testing.assert_close, per dtype); where they differ by more, kplay must be within
those tolerances of the exact result (torch's formula in float64 on the same input, rounded to the
dtype), as torch's own reference tests judge a kernel. Forward in every dtype kplay and the OpInfo
share; backward in float32 and float64 (16-bit gradients are held to kplay's own tolerances in
test_torch.py: torch's 16-bit defaults are below the 2-ulp spread of torch's own gradients).

prelu (a weight tensor) and rrelu (training, random) take kplay.torch's own functions; rrelu's
training samples draw other slopes than torch's, so they are compared by rrelu's properties (x where
x > 0, x times a slope in [lower, upper] elsewhere, the gradient that slope). glu's samples run in
test_gated_torch.py, and variants kplay does not compute (complex silu) are listed with a reason and
skip visibly. Without a GPU, every sample's parameters are
still resolved by kplay (a refusal where torch accepts is a failure there too). Needs torch and the
packages torch.testing._internal imports (expecttest, hypothesis), the comparisons a CUDA device;
skipped visibly without them."""
import pytest

torch = pytest.importorskip("torch", reason="torch not installed: OpInfo parity skipped")
pytest.importorskip("expecttest", reason="expecttest not installed: torch.testing._internal cannot be imported")
pytest.importorskip("hypothesis", reason="hypothesis not installed: torch.testing._internal cannot be imported")
op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations",
                            reason="torch.testing._internal not importable").op_db

import kplay  # noqa: E402
import kplay.torch as kt  # noqa: E402
from kplay import _table  # noqa: E402

KPLAY_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
BACKWARD_DTYPES = (torch.float32, torch.float64)

# torch's activation OpInfos that kplay.torch does not compute (yet), with why.
NOT_KPLAY = {
    "nn.functional.glu": "glu halves a dimension: kplay.torch.glu, whose samples test_gated_torch.py runs",
}
NOT_KPLAY_VARIANTS = {("nn.functional.silu", "complex"): "complex dtypes: kplay computes real floating types only"}


@pytest.fixture()
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the comparisons need kplay's CUDA kernels")


def _opinfo_name(activation):
    """The OpInfo name of a kplay built-in that torch has: torch.sigmoid and torch.tanh are
    torch-level ops; the others live in torch.nn.functional."""
    return activation if activation in ("sigmoid", "tanh") else "nn.functional." + activation


KPLAY_OPS = {_opinfo_name(e.activation): e for e in _table.TABLE if e.activation in kplay.activations()}
# Those whose samples pass more than the registry's parameters: prelu's weight, rrelu's training.
OWN_FUNCTIONS = {"nn.functional.prelu": kt.prelu, "nn.functional.rrelu": kt.rrelu}
KPLAY_OPS.setdefault("nn.functional.prelu", None)
OPINFOS = {(o.name, o.variant_test_name): o for o in op_db}
ACTIVATION_OPINFOS = sorted(k for k in OPINFOS if k[0] in KPLAY_OPS or k[0] in NOT_KPLAY)


def _dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def test_every_torch_activation_of_kplay_has_opinfo_samples():
    # An OpInfo renamed or dropped in a later torch would otherwise leave an activation untested.
    missing = sorted(name for name in KPLAY_OPS if (name, "") not in OPINFOS)
    assert not missing, f"no OpInfo for {missing} in torch {torch.__version__}"


@pytest.mark.parametrize("name", sorted(KPLAY_OPS))
def test_every_sample_parameter_set_resolves_in_kplay(name):
    # No GPU needed: the parameters torch's samples pass (hardshrink(lambd=-0.5), softplus(beta=3,
    # threshold=0.2), threshold's random pairs, ...) as kplay.torch's function binds them.
    if (name, "") not in OPINFOS:
        pytest.skip(f"no OpInfo for {name}")
    entry = KPLAY_OPS[name]
    if name in OWN_FUNCTIONS:
        pytest.skip(f"{name} takes kplay.torch's own function (a weight tensor, or training): no text to resolve")
    refused = []
    for sample in OPINFOS[(name, "")].sample_inputs("cpu", torch.float32):
        values, _ = _table.bind(entry, sample.args, sample.kwargs)
        text = _table.activation_string(entry.activation, values)
        try:
            kplay.supports_saved_output(text)  # resolves the text, raising where kplay refuses it
        except kplay.Error as e:
            refused.append(f"{text}: {e}")
    assert not refused, "\n".join(refused)


def _kplay_fn(name):
    return OWN_FUNCTIONS.get(name) or getattr(kt, KPLAY_OPS[name].activation)


def _rrelu_training(name, sample):
    return name == "nn.functional.rrelu" and sample.kwargs.get("training", False)


def _check_rrelu_properties(x, y, kwargs, gx=None, g=None):
    """rrelu in training: y = x where x > 0 (or NaN), x times a slope in [lower, upper] elsewhere;
    the gradient g times that slope (1 where x > 0)."""
    lower, upper = kwargs.get("lower", 1.0 / 8), kwargs.get("upper", 1.0 / 3)
    x64, y64 = x.double(), y.double()
    pos = ~(x64 <= 0)
    assert torch.equal(y[pos].double().nan_to_num(), x64[pos].nan_to_num())
    neg = (x64 < 0)
    slope = y64[neg] / x64[neg]
    tol = 1e-2 if x.dtype in (torch.float16, torch.bfloat16) else 1e-6
    assert bool(((slope >= lower - tol) & (slope <= upper + tol)).all()), f"slopes outside [{lower}, {upper}]"
    if gx is not None:
        assert torch.equal(gx[pos], g[pos])
        torch.testing.assert_close((gx[neg] / g[neg]).double(), slope, rtol=2 * tol, atol=0, equal_nan=True)


def _cases(opinfo, dtype, requires_grad):
    return [s for s in opinfo.sample_inputs("cuda", dtype, requires_grad=requires_grad)]


def _describe(sample):
    return f"shape {tuple(sample.input.shape)}, args {sample.args}, kwargs {sample.kwargs}"


def _skip_unless_kplay(key, dtype):
    name, variant = key
    if name in NOT_KPLAY and name not in KPLAY_OPS:
        pytest.skip(NOT_KPLAY[name])
    if key in NOT_KPLAY_VARIANTS:
        pytest.skip(NOT_KPLAY_VARIANTS[key])
    opinfo = OPINFOS[key]
    if dtype not in opinfo.supported_dtypes("cuda"):
        pytest.skip(f"torch's {name} OpInfo does not take {dtype} on CUDA")
    return opinfo


@pytest.mark.parametrize("dtype", KPLAY_DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("key", ACTIVATION_OPINFOS, ids=lambda k: k[0] + (f".{k[1]}" if k[1] else ""))
def test_forward_matches_torch_on_its_samples(key, dtype, cuda):
    opinfo = _skip_unless_kplay(key, dtype)
    ours = _kplay_fn(key[0])
    failures = []
    samples = _cases(opinfo, dtype, requires_grad=False)
    assert samples, f"{key[0]} has no {dtype} samples"
    for sample in samples:
        try:
            expected = opinfo.op(sample.input, *sample.args, **sample.kwargs)
            actual = ours(sample.input, *sample.args, **sample.kwargs)
            if _rrelu_training(key[0], sample):
                _check_rrelu_properties(sample.input, actual, sample.kwargs)
                continue
            try:
                torch.testing.assert_close(actual, expected, equal_nan=True)  # torch's dtype tolerances
            except AssertionError:
                # Where the two differ by more than torch's tolerance, the exact result decides:
                # torch's formula evaluated in float64 on the same input, rounded to the dtype
                # (torch's 16-bit tanhshrink, x - tanh(x) in float, loses bits to cancellation
                # that kplay keeps). kplay passes when it is within the same tolerance of it.
                exact = opinfo.op(sample.input.double(), *sample.args, **sample.kwargs).to(dtype)
                torch.testing.assert_close(actual, exact, equal_nan=True)
        except Exception as e:  # noqa: BLE001  (a refusal counts as a failure, with its message)
            failures.append(f"{_describe(sample)}: {type(e).__name__}: {str(e).strip().splitlines()[0:4]}")
    assert not failures, f"{len(failures)} of {len(samples)} samples differ:\n" + "\n".join(failures)


@pytest.mark.parametrize("dtype", BACKWARD_DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("key", ACTIVATION_OPINFOS, ids=lambda k: k[0] + (f".{k[1]}" if k[1] else ""))
def test_backward_matches_torch_on_its_samples(key, dtype, cuda):
    opinfo = _skip_unless_kplay(key, dtype)
    ours = _kplay_fn(key[0])
    failures = []
    samples = _cases(opinfo, dtype, requires_grad=True)
    assert samples, f"{key[0]} has no {dtype} samples"
    gen = torch.Generator(device="cuda").manual_seed(0)
    for sample in samples:
        try:
            x = sample.input.detach().clone().requires_grad_()
            xt = sample.input.detach().clone().requires_grad_()
            actual = ours(x, *sample.args, **sample.kwargs)
            expected = opinfo.op(xt, *sample.args, **sample.kwargs)
            g = torch.randn(expected.shape, device="cuda", dtype=dtype, generator=gen)
            (gx,) = torch.autograd.grad(actual, x, g)
            (gt,) = torch.autograd.grad(expected, xt, g)
            if _rrelu_training(key[0], sample):
                _check_rrelu_properties(x.detach(), actual.detach(), sample.kwargs, gx, g)
                continue
            torch.testing.assert_close(gx, gt, equal_nan=True)
        except Exception as e:  # noqa: BLE001
            failures.append(f"{_describe(sample)}: {type(e).__name__}: {str(e).strip().splitlines()[0:4]}")
    assert not failures, f"{len(failures)} of {len(samples)} samples differ:\n" + "\n".join(failures)


def test_softshrink_refuses_a_negative_lambd_as_torch_does(cuda):
    x = torch.randn(8, device="cuda")
    with pytest.raises(RuntimeError, match="lambda must be"):
        torch.nn.functional.softshrink(x, -0.5)
    with pytest.raises((RuntimeError, ValueError), match="lambd must be >= 0"):  # kplay.Error is a RuntimeError
        kt.softshrink(x, -0.5)


def test_hardshrink_takes_a_negative_lambd_as_torch_does(cuda):
    # torch's band -l <= x <= l is empty for l < 0: values and gradients pass everywhere, x = 0 too.
    for dtype in KPLAY_DTYPES:
        x = torch.tensor([-1.0, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, 1.0], device="cuda", dtype=dtype)
        x = x.requires_grad_()
        xt = x.detach().clone().requires_grad_()
        y, yt = kt.hardshrink(x, -0.5), torch.nn.functional.hardshrink(xt, -0.5)
        assert torch.equal(y, yt) and torch.equal(torch.signbit(y), torch.signbit(yt))
        g = torch.linspace(1, 2, 8, device="cuda", dtype=dtype)
        assert torch.equal(torch.autograd.grad(y, x, g)[0], torch.autograd.grad(yt, xt, g)[0])

"""torch's own test inputs for the softmax family through kplay.torch: the OpInfo samples
(torch.testing._internal's op_db) of softmax, log_softmax and softmin, with and without dtype=.
On CPU tensors (CI) kplay.torch's ops run torch's kernels, so every sample must give torch's
results and gradients bit for bit (the op's dim, dtype and layout handling is what is under test).
On CUDA kplay's row kernel must match torch within torch's default tolerances per dtype
(torch.testing.assert_close); where it differs by more, it must be within those tolerances of the
exact result (torch's formula in float64, rounded to the dtype), as test_opinfo_parity.py judges
the element-wise ops. Backward on CUDA in float32 and float64. Skipped visibly without the packages
torch.testing._internal imports (expecttest, hypothesis) or, for the CUDA half, without a GPU."""
import pytest

torch = pytest.importorskip("torch", reason="torch not installed: OpInfo parity skipped")
pytest.importorskip("expecttest", reason="expecttest not installed: torch.testing._internal cannot be imported")
pytest.importorskip("hypothesis", reason="hypothesis not installed: torch.testing._internal cannot be imported")
op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations",
                            reason="torch.testing._internal not importable").op_db

import kplay.torch as kt  # noqa: E402

KPLAY = {"softmax": kt.softmax, "log_softmax": kt.log_softmax, "nn.functional.softmin": kt.softmin}
OPINFOS = {(o.name, o.variant_test_name): o for o in op_db if o.name in KPLAY}
KEYS = sorted(OPINFOS)
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _id(key):
    return key[0] + ("-" + key[1] if key[1] else "")


def test_every_member_has_opinfo_samples():
    missing = sorted(name for name in KPLAY if (name, "") not in OPINFOS)
    assert not missing, f"no OpInfo for {missing} in torch {torch.__version__}"


def _samples(key, device, dtype):
    return list(OPINFOS[key].sample_inputs(device, dtype, requires_grad=True))


def _grads(fn, sample):
    x = sample.input.detach().clone().requires_grad_()
    y = fn(x, *sample.args, **sample.kwargs)
    g = torch.ones_like(y) if y.numel() == 0 else torch.randn(y.shape, generator=torch.Generator().manual_seed(3),
                                                              dtype=torch.float64).to(y)
    y.backward(g)
    return y.detach(), x.grad


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("key", KEYS, ids=_id)
def test_cpu_samples_are_torch_bit_for_bit(key, dtype):
    if dtype not in OPINFOS[key].supported_dtypes("cpu"):
        pytest.skip(f"{_id(key)} has no {dtype} samples")
    for sample in _samples(key, "cpu", dtype):
        y, gx = _grads(KPLAY[key[0]], sample)
        ty, tgx = _grads(OPINFOS[key].op, sample)
        torch.testing.assert_close(y, ty, rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(gx, tgx, rtol=0, atol=0, equal_nan=True)


def _exact(key, sample):
    """torch's result on the sample in float64, rounded to the output's dtype."""
    s = sample.input.detach().double()
    kwargs = dict(sample.kwargs)
    out_dtype = kwargs.pop("dtype", sample.input.dtype)
    return OPINFOS[key].op(s, *sample.args, **kwargs).to(out_dtype)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: kplay's row kernels are not run")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("key", KEYS, ids=_id)
def test_cuda_samples_match_torch_within_its_tolerances(key, dtype):
    if dtype not in OPINFOS[key].supported_dtypes("cuda"):
        pytest.skip(f"{_id(key)} has no {dtype} samples on CUDA")
    for sample in _samples(key, "cuda", dtype):
        fn = KPLAY[key[0]]
        got = fn(sample.input.detach(), *sample.args, **sample.kwargs)
        want = OPINFOS[key].op(sample.input.detach(), *sample.args, **sample.kwargs)
        try:
            torch.testing.assert_close(got, want, equal_nan=True)
        except AssertionError:
            torch.testing.assert_close(got, _exact(key, sample), equal_nan=True)
        if sample.input.dtype in (torch.float32, torch.float64):
            y, gx = _grads(fn, sample)
            ty, tgx = _grads(OPINFOS[key].op, sample)
            torch.testing.assert_close(gx, tgx, equal_nan=True)

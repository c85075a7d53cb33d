"""kplay.torch on CPU tensors (kplay/_torch_cpu.py): every op computes torch's own function and
derivative there, so each activation of the registry, the gated ops, PReLU and a whole model after
replace_activations give the outputs and gradients torch gives, bit for bit."""
import copy
import importlib

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import kplay  # noqa: E402
import kplay.nn as knn  # noqa: E402
import kplay.torch as kt  # noqa: E402
from kplay import _foreign, _table  # noqa: E402

DTYPES = (torch.float32, torch.float64, torch.bfloat16)
# Threshold's parameters have no defaults (torch requires them); every other parameter keeps its default.
REQUIRED_VALUES = {"threshold": 0.25, "value": -3.0}


def exactly(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def _params(entry):
    return {n: REQUIRED_VALUES[n] for n, d in entry.params if d is _table.REQUIRED}


def _torch_module(entry, **kwargs):
    """What kplay replaces for this activation: torch.nn's class, else transformers' (kplay/_foreign.py)."""
    if entry.torch_class:
        return getattr(torch.nn, entry.torch_class)(**_params(entry), **kwargs).eval()  # RReLU: evaluation
    row = next(r for r in _foreign.TABLE if r.activation == entry.activation and r.prefix == _foreign.TRANSFORMERS)
    pytest.importorskip("transformers")
    return getattr(importlib.import_module(row.prefix), row.cls)()


def _inputs(dtype):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(257, generator=g, dtype=torch.float64) * 4
    special = torch.tensor([0.0, -0.0, 1e-30, -1e-30, 3.0, -3.0, 6.0, 0.5, -0.5, 0.25, 20.0, 25.0, -90.0,
                            float("inf"), float("-inf"), float("nan")], dtype=torch.float64)
    x = torch.cat([x, special]).to(dtype)
    grad = torch.randn(x.shape, generator=g, dtype=torch.float64).to(dtype)
    return x, grad


def _run(fn, x, grad):
    xr = x.clone().requires_grad_()
    y = fn(xr * 1)  # a non-leaf, so that in-place forms run in place
    y.backward(grad)
    return y.detach(), xr.grad


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("entry", _table.BUILTINS, ids=lambda e: e.activation)
def test_every_registry_activation_on_cpu_is_torchs(entry, dtype):
    text = _table.activation_string(entry.activation, _params(entry))
    x, grad = _inputs(dtype)
    expected = _run(_torch_module(entry), x, grad)
    exactly(_run(lambda t: kt.activation(t, text), x, grad), expected)
    exactly(_run(getattr(kt, entry.activation) if not _params(entry) else
                 lambda t: getattr(kt, entry.activation)(t, **_params(entry)), x, grad), expected)
    with torch.no_grad():
        exactly(torch.ops.kplay.forward(x, text), expected[0])
    if entry.inplace:
        # In place, kplay saves what its out-of-place form saves: torch's out-of-place gradient. torch's
        # own in-place elu, celu and selu differentiate from their rounded output instead: the same
        # function, rounded differently.
        inplace = _run(lambda t: getattr(kt, entry.activation + "_")(t, **_params(entry)), x, grad)
        exactly(inplace, expected)
        if dtype != torch.bfloat16:  # 8 bits of mantissa: the two roundings differ by more than a tolerance
            torch.testing.assert_close(inplace, _run(_torch_module(entry, inplace=True), x, grad), equal_nan=True)
        y = x.clone()
        assert getattr(kt, entry.activation + "_")(y, **_params(entry)) is y
        exactly(y, expected[0])


@pytest.mark.parametrize("entry", [e for e in _table.BUILTINS if e.saves_output], ids=lambda e: e.activation)
def test_backward_from_the_output_on_cpu_is_torchs(entry):
    # The op called directly with the saved output, as autograd calls it for these activations.
    text = _table.activation_string(entry.activation, _params(entry))
    x, grad = _inputs(torch.float64)
    y, gx = _run(_torch_module(entry), x, grad)
    exactly(torch.ops.kplay.backward(grad, y, text, True), gx)
    exactly(torch.ops.kplay.backward(grad, x, text, False), gx)


def test_modules_and_their_parameters_on_cpu():
    x, grad = _inputs(torch.float32)
    for ours, theirs in ((knn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)), (knn.ELU(0.7), torch.nn.ELU(0.7)),
                         (knn.CELU(1.3), torch.nn.CELU(1.3)), (knn.GELU("tanh"), torch.nn.GELU("tanh")),
                         (knn.Softplus(2.0, 5.0), torch.nn.Softplus(2.0, 5.0)),
                         (knn.Hardtanh(-2.0, 0.5), torch.nn.Hardtanh(-2.0, 0.5)),
                         (knn.Softshrink(0.3), torch.nn.Softshrink(0.3)),
                         (knn.RReLU(0.1, 0.3).eval(), torch.nn.RReLU(0.1, 0.3).eval())):
        exactly(_run(ours, x, grad), _run(theirs, x, grad))


def test_the_torch_accuracy_tier_on_cpu_is_torchs_and_float32_only():
    x, grad = _inputs(torch.float32)
    ours = knn.SiLU(accuracy="torch")
    assert ours.activation == "silu(accuracy=torch)"
    exactly(_run(ours, x, grad), _run(torch.nn.SiLU(), x, grad))
    exactly(kt.gelu(x, "tanh", accuracy="torch"), torch.nn.functional.gelu(x, approximate="tanh"))
    with pytest.raises(kplay.InvalidArgumentError, match="float32 tier"):
        kt.silu(x.to(torch.bfloat16), accuracy="torch")
    with pytest.raises(TypeError, match="accuracy"):
        kt.relu(x, accuracy="torch")  # exact at torch's cost already: no tier


def test_user_activations_and_bad_input_raise_kplay_errors_on_cpu(tmp_path):
    snippet = tmp_path / "my_act.h"  # docs/user-activations.md's example
    snippet.write_text("KP_FN KP_C kp_act_forward(KP_C x) { return x / (KP_LIT(1.0) + KP_EXP(KP_LIT(-1.5) * x)); }\n")
    with pytest.raises(kplay.UnsupportedError, match="user activation"):
        kt.activation(torch.ones(4), str(snippet))
    with pytest.raises(kplay.InvalidArgumentError, match="unknown activation"):
        kt.activation(torch.ones(4), "no_such_act")
    with pytest.raises(kplay.InvalidArgumentError):
        kt.activation(torch.ones(4), "leaky_relu(negative_slope=abc)")
    with pytest.raises(kplay.InvalidArgumentError, match="float32, float16, bfloat16 or float64"):
        kt.selu(torch.ones(4, dtype=torch.int32))
    with pytest.raises(kplay.InvalidArgumentError, match="must match"):
        torch.ops.kplay.backward(torch.ones(4), torch.ones(5), "selu", False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("act", ["silu", "gelu(approximate=tanh)", "relu"])
def test_gated_on_cpu_is_act_a_times_b(act, dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 3, 16, generator=g).to(dtype)
    grad = torch.randn(5, 3, 8, generator=g).to(dtype)
    torch_act = (lambda t: F.gelu(t, approximate="tanh")) if act.startswith("gelu") else getattr(F, act)

    def theirs(t):
        return torch_act(t[..., :8]) * t[..., 8:]

    exactly(_run(lambda t: kt.gated(t, act), x, grad), _run(theirs, x, grad))
    a, b = x[..., :8].clone().requires_grad_(), x[..., 8:].clone().requires_grad_()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    kt.gated(a, b, act).backward(grad)
    (torch_act(a2) * b2).backward(grad)
    exactly((a.grad, b.grad), (a2.grad, b2.grad))
    with pytest.raises(kplay.InvalidArgumentError, match="last dimension must be even"):
        kt.gated(torch.ones(4, 7))
    with pytest.raises(kplay.InvalidArgumentError, match="scale is for FP8 output"):
        kt.gated(torch.ones(4, 6), scale=2.0)


def test_glu_on_cpu_is_torchs():
    x, grad = torch.randn(6, 10, 4), torch.randn(6, 5, 4)
    exactly(_run(lambda t: kt.glu(t, 1), x, grad), _run(lambda t: F.glu(t, 1), x, grad))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_prelu_on_cpu_is_torchs(dtype):
    x = torch.randn(2, 3, 5, 4).to(dtype)
    grad = torch.randn(x.shape).to(dtype)
    for w in (torch.tensor([0.1, -0.3, 2.0]), torch.tensor([0.25])):
        w = w.to(dtype)
        wk, wt = w.clone().requires_grad_(), w.clone().requires_grad_()
        ours, theirs = _run(lambda t: kt.prelu(t, wk), x, grad), _run(lambda t: F.prelu(t, wt), x, grad)
        exactly(ours, theirs)
        exactly(wk.grad, wt.grad)
    with pytest.raises(kplay.InvalidArgumentError, match="weight has 2 elements"):
        kt.prelu(torch.randn(2, 3), torch.full((2,), 0.25))


def test_rrelu_training_on_cpu_draws_slopes_in_range_and_backward_draws_them_again():
    x = torch.randn(4096, dtype=torch.float64)
    x[0] = 0.0
    y, gx = _run(lambda t: kt.rrelu(t, 0.1, 0.3, training=True, seed=11), x, torch.ones_like(x))
    neg = x <= 0
    exactly(y[~neg], x[~neg])
    exactly(gx[~neg], torch.ones_like(x[~neg]))
    slopes = gx[neg]
    assert bool(((slopes >= 0.1) & (slopes <= 0.3)).all())
    assert slopes.std() > 0.03  # drawn per element, not one slope
    exactly(y[neg], x[neg] * slopes)  # backward drew the slopes forward used
    exactly(kt.rrelu(x, 0.1, 0.3, training=True, seed=11), y)
    assert not torch.equal(kt.rrelu(x, 0.1, 0.3, training=True, seed=12), y)
    with pytest.raises(kplay.InvalidArgumentError, match="must be <= upper"):
        kt.rrelu(torch.randn(4), 0.5, 0.25, training=True, seed=1)


def _same_training_step(model, replaced, inputs, loss_of):
    """Forward and backward of both models: outputs and every parameter's gradient are equal."""
    out_a, out_b = model(*inputs), replaced(*inputs)
    exactly(out_b, out_a)
    loss_of(out_a).backward()
    loss_of(out_b).backward()
    grads_a = {n: p.grad for n, p in model.named_parameters()}
    grads_b = {n: p.grad for n, p in replaced.named_parameters()}
    assert grads_a.keys() == grads_b.keys()
    for name, grad in grads_a.items():
        torch.testing.assert_close(grads_b[name], grad, rtol=0, atol=0, msg=lambda m: f"{name}: {m}")


def test_resnet18_on_cpu_after_replace_activations_is_unchanged():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10)
    replaced = kt.replace_activations(copy.deepcopy(model))
    assert isinstance(replaced.relu, knn.ReLU) and replaced.relu.inplace
    assert isinstance(replaced.layer1[0].relu, knn.ReLU)
    x = torch.randn(2, 3, 64, 64)
    _same_training_step(model, replaced, (x,), lambda out: out.square().sum())
    with torch.no_grad():
        exactly(replaced.eval()(x), model.eval()(x))


def test_small_llama_on_cpu_after_replace_activations_is_unchanged():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      use_cache=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)  # random weights from the config: nothing downloaded
    replaced = kt.replace_activations(copy.deepcopy(model))
    mlp = replaced.model.layers[0].mlp
    assert isinstance(mlp, knn.GatedMLP) and mlp.activation == "silu"
    ids = torch.randint(0, config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(1))
    _same_training_step(model, replaced, (ids,), lambda out: F.cross_entropy(
        out.logits.flatten(0, 1), ids.flatten()))


def test_export_after_replace_activations_runs_on_cpu():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4), torch.nn.SiLU())
    replaced = kt.replace_activations(copy.deepcopy(model))
    x = torch.randn(3, 8)
    program = torch.export.export(replaced, (x,))
    assert any("kplay" in str(n.target) for n in program.graph.nodes)
    exactly(program.module()(x), model(x))

"""transformers' and timm's activation classes (kplay/_foreign.py): the table's targets are kplay
built-ins; each mapped class computes its target's function and derivative (checked in torch on
the CPU, float64, branch points included); replace_activations swaps them in GPT-2- and LLaMA-style
models built from configs (no downloads) and in a tree of every ACT2CLS class. What needs torch,
transformers or timm is skipped visibly without them; the kernels themselves on a CUDA device."""
import math

import pytest

import kplay
from kplay import _foreign, _table


def _fake(module_name, class_name, **attrs):
    """An instance of a class named like a foreign one (no torch needed)."""
    return type(class_name, (), {"__module__": module_name, **attrs})()


# ---- the table, without torch ---------------------------------------------------------------------

def test_every_target_is_a_builtin_and_its_text_resolves():
    names = set(kplay.activations())
    for row in _foreign.TABLE:
        assert row.activation in names, row
        assert row.activation in _table.BY_ACTIVATION, row
        text = _foreign.activation_text(row)
        kplay.supports_saved_output(text)  # raises for an unknown activation or parameter


def test_targets_spelled_as_kplay_spells_them():
    texts = {(row.prefix, row.cls): _foreign.activation_text(row) for row in _foreign.TABLE}
    tf, timm = _foreign.TRANSFORMERS, _foreign.TIMM
    assert texts[(tf, "NewGELUActivation")] == "gelu(approximate=tanh)"
    assert texts[(tf, "FastGELUActivation")] == "gelu(approximate=tanh)"
    assert texts[(tf, "AccurateGELUActivation")] == "gelu(approximate=tanh)"
    assert texts[(tf, "GELUTanh")] == texts[(tf, "PytorchGELUTanh")] == "gelu(approximate=tanh)"
    assert texts[(tf, "GELUActivation")] == "gelu"
    assert texts[(tf, "QuickGELUActivation")] == texts[(timm, "QuickGELU")] == "quick_gelu"
    assert texts[(tf, "SiLUActivation")] == texts[(timm, "Swish")] == "silu"
    assert texts[(tf, "ReLUSquaredActivation")] == "relu2"
    assert len(texts) == len(_foreign.TABLE)  # no class listed twice


def test_classes_match_by_module_and_name():
    tf = _foreign.TRANSFORMERS
    assert _foreign.find(_fake(tf, "NewGELUActivation")).activation == "gelu"
    assert _foreign.find(_fake(tf + ".sub", "QuickGELUActivation")).activation == "quick_gelu"
    assert _foreign.find(_fake("timm.layers.activations_me", "SwishMe")).activation == "silu"
    assert _foreign.find(_fake("transformers.activationsX", "NewGELUActivation")) is None
    assert _foreign.find(_fake("mylib.layers", "NewGELUActivation")) is None
    assert _foreign.find(_fake(tf, "ClippedGELUActivation")) is None
    assert _foreign.find(_fake(tf, "LinearActivation")) is None
    assert _foreign.find(_fake("timm.layers.activations", "GELU")).activation == "gelu"
    # timm's in-place HardSigmoid has clamp's backward at -3 and 3: left alone
    assert _foreign.find(_fake("timm.layers.activations", "HardSigmoid", inplace=False)).activation == "hardsigmoid"
    assert _foreign.find(_fake("timm.layers.activations", "HardSigmoid", inplace=True)) is None


def test_left_alone_classes_say_why_and_are_not_mapped_unconditionally():
    mapped = {(row.prefix, row.cls) for row in _foreign.TABLE if row.when is None}
    for key, why in _foreign.LEFT_ALONE.items():
        assert key not in mapped and why, key


# ---- against the libraries' classes (torch on the CPU) ---------------------------------------------

torch_reason = "torch not installed: transformers' and timm's classes not checked"


def _torch():
    return pytest.importorskip("torch", reason=torch_reason)


def _reference(activation_text):
    """The kplay activation's definition in torch (float64 on the CPU)."""
    torch = _torch()
    F = torch.nn.functional
    return {
        "gelu": F.gelu,
        "gelu(approximate=tanh)": lambda x: F.gelu(x, approximate="tanh"),
        "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
        "silu": F.silu,
        "mish": F.mish,
        "relu2": lambda x: torch.square(F.relu(x)),
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
        # kplay's derivatives at -3 and 3 (torch 2.11's; older torch's hardswish backward took the
        # middle piece's slope at both), as relu6's backward gives them
        "hardswish": lambda x: x * F.relu6(x + 3) / 6,
        "hardsigmoid": lambda x: F.relu6(x + 3) / 6,
    }[activation_text]


# The inputs: a spread, the branch points of the hard activations and relu2, and gelu's and silu's
# derivative roots' neighbourhoods.
_POINTS = [-30.0, -8.0, -3.0, -2.5, -1.2785, -0.7518, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 2.9, 3.0, 3.1, 7.5, 25.0]
# FastGELUActivation's sqrt(2/pi) has 10 digits (its row says so): in float64 values and
# derivatives agree to 1e-10 (the same float in float32); the others are the same function in torch
# ops, whose roundings (GELUActivation's Python 1 + erf(x / sqrt 2) cancels below x = -5) the
# absolute tolerance takes.
_TOL_OF = {"FastGELUActivation": 1e-10}


def _check_same_function(module, activation_text, name, grad=True):
    torch = _torch()
    x = torch.tensor(_POINTS, dtype=torch.float64, requires_grad=grad)
    xr = x.detach().clone().requires_grad_(grad)
    y = module(x.clone() if getattr(module, "inplace", False) else x)
    yr = _reference(activation_text)(xr)
    tol = _TOL_OF.get(name, 1e-12)
    torch.testing.assert_close(y, yr, rtol=tol, atol=tol)
    if grad:  # derivatives too, at the branch points exactly as the activation has them
        y.sum().backward()
        yr.sum().backward()
        torch.testing.assert_close(x.grad, xr.grad, rtol=tol, atol=tol)


def test_transformers_classes_compute_their_targets_and_act2cls_is_covered():
    torch = _torch()
    acts = pytest.importorskip("transformers.activations", reason="transformers not installed")
    seen = set()
    for key in acts.ACT2CLS:
        module = acts.ACT2FN[key]  # an instance, with the table's arguments (gelu_10, gelu_python, ...)
        cls = type(module)
        row = _foreign.find(module)
        if cls.__module__.startswith("torch.nn"):
            # torch.nn's own (nn.ReLU, nn.SiLU, ...): kplay's torch table maps them, PReLU aside
            assert cls.__name__ in _table.BY_CLASS or cls.__name__ == "PReLU", key
            continue
        seen.add(cls.__name__)
        if row is None:
            assert (_foreign.TRANSFORMERS, cls.__name__) in _foreign.LEFT_ALONE, f"{key}: {cls.__name__} is unlisted"
            continue
        _check_same_function(module, _foreign.activation_text(row), cls.__name__)
    assert {"NewGELUActivation", "QuickGELUActivation", "ReLUSquaredActivation"} <= seen
    for name in ("NewGELUActivation", "FastGELUActivation", "AccurateGELUActivation", "QuickGELUActivation",
                 "MishActivation", "ReLUSquaredActivation", "GELUActivation"):
        module = getattr(acts, name)()
        _check_same_function(module, _foreign.activation_text(_foreign.find(module)), name)
    assert torch  # imported for the classes above


def test_timm_classes_compute_their_targets_and_every_class_is_listed():
    torch = _torch()
    pytest.importorskip("timm", reason="timm not installed")
    import importlib

    for mod_name in ("timm.layers.activations", "timm.layers.activations_me"):
        mod = importlib.import_module(mod_name)
        for name, cls in vars(mod).items():
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module) and cls.__module__ == mod_name):
                continue
            for inplace in (False, True):  # in place: the values (autograd through x.mul_ is timm's)
                module = cls(inplace=inplace)
                row = _foreign.find(module)
                if row is None:
                    assert (_foreign.TIMM, name) in _foreign.LEFT_ALONE, f"{mod_name}.{name} is unlisted"
                    continue
                _check_same_function(module, _foreign.activation_text(row), name, grad=not inplace)


def test_left_alone_timm_hard_classes_differ_at_their_branch_points():
    torch = _torch()
    pytest.importorskip("timm", reason="timm not installed")
    from timm.layers import activations, activations_me

    x = torch.tensor([-3.0, 3.0], dtype=torch.float64, requires_grad=True)
    # The in-place HardSigmoid's clamp_ passes the gradient at its bounds in torch before 2.15, not after.
    t = torch.tensor(0.0, requires_grad=True)
    clamp_passes_bounds = torch.autograd.grad(torch.clamp(t, 0.0, 6.0), t)[0].item() != 0
    for module, ref, differs in ((activations.HardSigmoid(inplace=True), _reference("hardsigmoid"), clamp_passes_bounds),
                                 (activations_me.HardSigmoidMe(), _reference("hardsigmoid"), True),
                                 (activations_me.HardSwishMe(), _reference("hardswish"), True)):
        a = x.detach().clone().requires_grad_()
        b = x.detach().clone().requires_grad_()
        module(a.clone()).sum().backward()
        ref(b).sum().backward()
        assert torch.equal(a.grad, b.grad) != differs, type(module).__name__


# ---- replace_activations on model definitions ---------------------------------------------------

def _kplay_nn():
    _torch()
    return pytest.importorskip("kplay.nn")


def _activations(model, cls):
    return [m for m in model.modules() if isinstance(m, cls)]


def test_replace_activations_in_gpt2_and_llama_style_models():
    knn = _kplay_nn()
    import kplay.torch as kt

    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    from transformers import activations as acts

    gpt2 = transformers.GPT2Model(transformers.GPT2Config(n_layer=4, n_embd=32, n_head=2, vocab_size=64,
                                                          n_positions=16, activation_function="gelu_new"))
    assert len(_activations(gpt2, acts.NewGELUActivation)) == 4
    kt.replace_activations(gpt2)
    swapped = _activations(gpt2, knn.Activation)
    assert len(swapped) == 4 and not _activations(gpt2, acts.NewGELUActivation)
    assert all(isinstance(m, knn.GELU) and m.activation == "gelu(approximate=tanh)" for m in swapped)

    llama = transformers.LlamaModel(transformers.LlamaConfig(hidden_size=32, intermediate_size=64,
                                                             num_hidden_layers=4, num_attention_heads=2,
                                                             num_key_value_heads=2, vocab_size=64,
                                                             max_position_embeddings=16, hidden_act="silu"))
    kt.replace_activations(llama)
    swapped = _activations(llama, knn.Activation)
    assert len(swapped) == 4 and all(isinstance(m, knn.SiLU) for m in swapped)


def test_replace_activations_in_a_tree_of_every_act2cls_class():
    torch = _torch()
    knn = _kplay_nn()
    import kplay.torch as kt

    acts = pytest.importorskip("transformers.activations", reason="transformers not installed")
    tree = torch.nn.ModuleDict({k.replace(".", "_"): torch.nn.Sequential(torch.nn.Linear(4, 4), acts.ACT2FN[k])
                                for k in acts.ACT2CLS})
    expected = {}
    for key, seq in tree.items():
        row = _foreign.find(seq[1])
        entry = _table.BY_CLASS.get(type(seq[1]).__name__) if type(seq[1]).__module__.startswith("torch.nn") else None
        expected[key] = (_foreign.activation_text(row) if row else
                         _table.activation_string(entry.activation,
                                                  {n: getattr(seq[1], n) for n, _ in entry.params}) if entry else None)
    kt.replace_activations(tree)
    for key, seq in tree.items():
        if expected[key] is None:
            assert not isinstance(seq[1], knn.Activation), key
        else:
            assert isinstance(seq[1], knn.Activation) and seq[1].activation == expected[key], key
    for key in ("gelu_new", "gelu_fast", "quick_gelu", "relu2", "silu", "mish", "gelu_pytorch_tanh"):
        assert isinstance(tree[key][1], knn.Activation), key
    for key in ("gelu_10", "linear", "prelu"):
        assert not isinstance(tree[key][1], knn.Activation), key


def test_from_foreign_keeps_inplace_where_kplay_takes_it():
    knn = _kplay_nn()
    pytest.importorskip("timm", reason="timm not installed")
    from timm.layers import activations

    assert knn.from_foreign(activations.Swish(inplace=True)).inplace
    assert isinstance(knn.from_foreign(activations.Sigmoid(inplace=True)), knn.Sigmoid)
    quick = knn.from_foreign(activations.QuickGELU())
    assert type(quick) is knn.Activation and quick.activation == "quick_gelu"
    with pytest.raises(TypeError):
        knn.from_foreign(activations.HardMish())


# ---- the new built-ins' kernels, on a CUDA device --------------------------------------------------

def _cuda():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: kplay.torch kernels not run")
    return torch


_TOL = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float64": (1e-12, 1e-12)}


@pytest.mark.parametrize("activation", ["quick_gelu", "relu2"])
@pytest.mark.parametrize("dtype", list(_TOL))
def test_builtins_without_a_torch_class_match_their_formula(activation, dtype):
    torch = _cuda()
    import kplay.torch as kt

    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn((257, 33), device="cuda", generator=gen, dtype=torch.float64) * 3).to(dt).requires_grad_()
    g = (torch.randn((257, 33), device="cuda", generator=gen, dtype=torch.float64) * 3).to(dt)
    ours = getattr(kt, activation)(x)
    # The formula in float64 from the same inputs, rounded once; 1.702 rounded as torch's
    # opmath rounds it (float below float64), as kplay's beta.
    x64 = x.detach().double().requires_grad_()
    beta = 1.702 if dt == torch.float64 else float(torch.tensor(1.702, dtype=torch.float32))
    ref = x64 * torch.sigmoid(beta * x64) if activation == "quick_gelu" else torch.square(torch.relu(x64))
    ref.backward(g.double())
    rtol, atol = _TOL[dtype]
    torch.testing.assert_close(ours, ref.detach().to(dt), rtol=rtol, atol=atol)
    ours.backward(g)
    torch.testing.assert_close(x.grad, x64.grad.to(dt), rtol=rtol, atol=atol)
    assert math.isfinite(float(ours.float().abs().max()))


@pytest.mark.parametrize("activation", ["quick_gelu", "relu2"])
def test_builtins_without_a_torch_class_gradcheck(activation):
    torch = _cuda()
    import kplay.torch as kt

    x = torch.randn(64, device="cuda", dtype=torch.float64) * 3
    x = x[x.abs() > 0.05][:40].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: getattr(kt, activation)(t), (x,))


def test_replaced_gpt2_matches_the_original_on_cuda():
    torch = _cuda()
    import copy

    import kplay.torch as kt

    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    torch.manual_seed(0)
    for act in ("gelu_new", "quick_gelu", "relu2"):
        model = transformers.GPT2Model(transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64,
                                                               n_positions=16, activation_function=act)).cuda().eval()
        ours = kt.replace_activations(copy.deepcopy(model))
        ids = torch.randint(0, 64, (2, 16), device="cuda")
        torch.testing.assert_close(ours(ids).last_hidden_state, model(ids).last_hidden_state, rtol=1e-4, atol=1e-4)

"""kplay.torch's gated activations (torch.ops.kplay.gated_forward/gated_backward, kplay.torch.gated,
swiglu, geglu, glu, kplay.nn.GLU and GatedMLP, replace_activations on LLaMA-style MLPs).

Without a GPU (CI): the op schemas and kernels per dispatch key, the Python fallback's schemas,
Meta shapes and dtypes, opcheck and autograd on meta tensors, torch.compile(fullgraph=True) tracing
in each compile mode, the decompositions' formulas against torch in float64, argument errors, and
replace_activations on tiny LLaMA, Mistral, Qwen2 and Gemma models built from configs. On a CUDA
device (skipped visibly without one): values and gradients against torch, gradcheck in float64,
opcheck, torch's OpInfo samples of nn.functional.glu, FP8 output against a float64 reference with
saturation, a patched tiny LLaMA against the original, compiled graphs against eager, and the
extension against the Python operators."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch not installed: kplay.torch's gated tests skipped")

import torch.nn.functional as F  # noqa: E402

import kplay  # noqa: E402
import kplay.nn as knn  # noqa: E402
import kplay.torch as kt  # noqa: E402
from compiled_graphs import assert_compiled_matches_eager, compiled_graphs  # noqa: E402
from kplay import _torch_decomp  # noqa: E402

OPS = ("gated_forward", "gated_backward")
SCHEMAS = {
    "gated_forward": ("kplay::gated_forward(Tensor x, Tensor? b, str activation, ScalarType? out_dtype=None, "
                      "float scale=1.) -> Tensor"),
    "gated_backward": "kplay::gated_backward(Tensor grad, Tensor x, Tensor? b, str activation) -> Tensor[]",
}


def meta(*shape, dtype=torch.float32, grad=False):
    return torch.empty(shape, device="meta", dtype=dtype, requires_grad=grad)


# ---- without a device ---------------------------------------------------------------------------

def test_schemas_and_kernels_per_dispatch_key():
    for op in OPS:
        assert str(getattr(torch.ops.kplay, op).default._schema) == SCHEMAS[op]
        for key in ("CUDA", "Meta", "CPU", "Autograd"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"kplay::{op}", key), (op, key)


def test_python_fallback_registers_the_same_gated_ops():
    code = ("import warnings, torch\n"
            "warnings.simplefilter('ignore')\n"
            "import kplay.torch as kt\n"
            "assert not kt.EXTENSION\n"
            "print(torch.ops.kplay.gated_forward.default._schema)\n"
            "print(torch.ops.kplay.gated_backward.default._schema)\n"
            "x = torch.empty(3, 8, device='meta', requires_grad=True)\n"
            "kt.gated(x, 'gelu').sum().backward()\n"
            "print(tuple(kt.glu(torch.empty(4, 6, 2, device='meta'), 1).shape), tuple(x.grad.shape))\n")
    env = dict(os.environ, KPLAY_TORCH_OPS="python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [SCHEMAS["gated_forward"], SCHEMAS["gated_backward"], "(4, 3, 2) (3, 8)"], out


def test_meta_shapes_and_dtypes():
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        x = meta(2, 3, 10, dtype=dtype)
        assert kt.gated(x).shape == (2, 3, 5) and kt.gated(x).dtype == dtype
        assert kt.gated(x[..., :5], x[..., 5:], "relu").shape == (2, 3, 5)  # pitched slices
    wide = meta(6, 32)
    assert kt.swiglu(wide[:, 4:12], wide[:, 20:28]).shape == (6, 8)
    assert kt.geglu(meta(6, 8), approximate="tanh").shape == (6, 4)
    for fp8 in (torch.float8_e4m3fn, torch.float8_e5m2):
        assert kt.gated(meta(4, 16), out_dtype=fp8, scale=0.5).dtype == fp8
    assert kt.gated(meta(4, 16), out_dtype=torch.float32).dtype == torch.float32  # the input's dtype: not FP8
    assert kt.glu(meta(3, 8, 5), 1).shape == (3, 4, 5)
    assert kt.glu(meta(3, 8, 6)).shape == (3, 8, 3)
    assert knn.GLU(0)(meta(4, 3)).shape == (2, 3)
    assert knn.Gated("silu")(meta(4, 6)).shape == (4, 3)


def test_autograd_on_meta_gives_each_input_its_gradient():
    x = meta(5, 12, grad=True)
    kt.gated(x, "selu").sum().backward()
    assert x.grad.shape == x.shape  # the packed form: one gradient of x's shape
    a, b = meta(5, 6, grad=True), meta(5, 6, grad=True)
    kt.gated(a, b).sum().backward()
    assert a.grad.shape == b.grad.shape == (5, 6)
    a2, b2 = meta(5, 6, grad=True), meta(5, 6)
    kt.gated(a2, b2).sum().backward()  # only a needs a gradient
    assert a2.grad.shape == (5, 6) and b2.grad is None
    # gated_backward has no derivative: a double backward raises
    x = meta(5, 12, grad=True)
    (g,) = torch.autograd.grad(kt.gated(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="kplay::gated_backward"):
        g.sum().backward()


def test_autograd_saves_a_and_b():
    x = meta(16, 8, grad=True) * 1.0
    a, b = meta(16, 4, grad=True) * 1.0, meta(16, 4, grad=True) * 1.0
    for args, want in (((x,), [x]), ((a, b), [a, b])):
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            kt.gated(*args)
        assert [t for t in saved if t is not None and t.numel()] == want


@pytest.mark.parametrize("act", ["silu", "gelu(approximate=tanh)", "relu"])
def test_opcheck_on_meta_tensors(act):
    x = meta(8, 16)
    a, b = meta(8, 6), meta(8, 6)
    fwd, bwd = torch.ops.kplay.gated_forward.default, torch.ops.kplay.gated_backward.default
    torch.library.opcheck(fwd, (x.clone().requires_grad_(), None, act))
    torch.library.opcheck(fwd, (a.clone().requires_grad_(), b.clone().requires_grad_(), act))
    torch.library.opcheck(fwd, (x[:, 1:7], x[:, 9:15], act))  # row-pitched views
    torch.library.opcheck(fwd, (x, None, act, torch.float8_e4m3fn, 2.0))
    torch.library.opcheck(bwd, (meta(8, 8), x, None, act))
    torch.library.opcheck(bwd, (meta(8, 6), a, b, act))


def test_argument_errors():
    bad = kplay.InvalidArgumentError
    with pytest.raises(bad, match="last dimension must be even.*got 7"):
        kt.gated(meta(4, 7))
    with pytest.raises(bad, match=r"a has shape \[4, 3\] but b has shape \[4, 4\]"):
        kt.gated(meta(4, 3), meta(4, 4))
    with pytest.raises(bad, match="does not convert"):
        kt.gated(meta(4, 3), meta(4, 3, dtype=torch.float16))
    with pytest.raises(bad, match="float32, float16, bfloat16 or float64"):
        kt.gated(torch.empty(4, 6, dtype=torch.int32, device="meta"))
    with pytest.raises(bad, match="no dimensions"):
        kt.gated(torch.empty((), device="meta"))
    with pytest.raises(bad, match="scale is for FP8 output"):
        kt.gated(meta(4, 6), scale=2.0)
    with pytest.raises(bad, match="FP8 scale must be a finite number above 0"):
        kt.gated(meta(4, 6), out_dtype=torch.float8_e5m2, scale=-1.0)
    with pytest.raises(bad, match="out_dtype must be"):
        kt.gated(meta(4, 6), out_dtype=torch.float16)
    with pytest.raises(bad, match="has no backward"):
        kt.gated(meta(4, 6, grad=True), out_dtype=torch.float8_e4m3fn)
    with pytest.raises(bad, match=r"grad has shape \[4, 6\]; expected \[4, 3\]"):
        torch.ops.kplay.gated_backward(meta(4, 6), meta(4, 6), None, "silu")
    with pytest.raises(bad, match="must be even; its size is 5"):
        kt.glu(meta(5, 4), 0)
    with pytest.raises(bad, match="out of range"):
        kt.glu(meta(4, 4), 2)
    with pytest.raises(bad, match="at least one dimension"):
        kt.glu(torch.empty((), device="meta"))
    with pytest.raises(bad, match="approximate"):
        kt.geglu(meta(4, 4), approximate="erf")
    with pytest.raises(TypeError, match="activation twice"):
        kt.gated(meta(4, 6), "silu", "gelu")


@pytest.mark.parametrize("mode", _torch_decomp.MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("act", ["silu", "relu"])
@pytest.mark.parametrize("form", ["packed", "two"])
def test_compile_traces_and_decomposes_as_the_mode_says(compile_mode, mode, dtype, act, form):
    compile_mode(mode)
    if form == "packed":
        inputs = (meta(32, 16, dtype=dtype, grad=True),)
    else:
        inputs = (meta(32, 8, dtype=dtype, grad=True), meta(32, 8, dtype=dtype, grad=True))
    graphs = compiled_graphs(lambda *t: kt.gated(*[u * 2 for u in t], act) + 1, *inputs)
    assert len(graphs) == 2  # forward and backward, one graph each: no graph break
    kplay_ops = [t for g in graphs for t in g if t.startswith("kplay.")]
    decomposes = {"kernel": False, "decompose": True}.get(mode, act == "relu" or dtype == torch.bfloat16)
    assert _torch_decomp.gated_decomposes(act, dtype) == decomposes
    assert kplay_ops == ([] if decomposes else ["kplay.gated_forward.default", "kplay.gated_backward.default"])


@pytest.mark.parametrize("form", ["packed", "two"])
def test_compile_with_dynamic_shapes_traces_once(compile_mode, form):
    # The Meta kernels keep the sizes symbolic (guards, no specialization): a second size reuses the
    # graphs compiled for the first.
    compile_mode("kernel")
    graphs = []

    def make(n):
        if form == "packed":
            return (meta(n, 2 * n + 2, grad=True),)
        return meta(n, n + 1, grad=True), meta(n, n + 1, grad=True)

    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    def keep(gm, _):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    f = torch.compile(lambda *t: kt.gated(*t) * 2, fullgraph=True, dynamic=True,
                      backend=lambda gm, ex: aot_module_simplified(gm, ex, fw_compiler=keep, bw_compiler=keep))
    for n in (5, 7):
        inputs = make(n)
        y = f(*inputs)
        y.sum().backward()
        assert y.shape == (n, n + 1) and all(t.grad.shape == t.shape for t in inputs)
    assert len(graphs) == 2  # one forward and one backward graph, for both sizes


def test_compile_keeps_the_kernel_for_fp8_and_glu_traces(compile_mode):
    compile_mode("decompose")
    with torch.no_grad():
        graphs = compiled_graphs(lambda t: kt.gated(t, out_dtype=torch.float8_e4m3fn, scale=2.0),
                                  meta(8, 16), backward=False)
    assert graphs == [["kplay.gated_forward.default"]]
    compile_mode("kernel")
    graphs = compiled_graphs(lambda t: kt.glu(t, 1), meta(4, 6, 3, grad=True))
    assert len(graphs) == 2 and "kplay.gated_forward.default" in graphs[0]


def test_gated_decompositions_match_torch_in_float64(compile_mode):
    # The formulas Inductor gets, forward and backward in both forms, against torch's functions and
    # autograd on the CPU in float64.
    compile_mode("decompose")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(300, 16, dtype=torch.float64, generator=gen) * 3
    g = torch.randn(300, 8, dtype=torch.float64, generator=gen)
    fns = {"silu": F.silu, "gelu": F.gelu, "gelu(approximate=tanh)": lambda t: F.gelu(t, approximate="tanh"),
           "relu": F.relu, "sigmoid": torch.sigmoid, "gated(softplus(beta=2.0))": lambda t: F.softplus(t, beta=2.0)}
    for act, fn in fns.items():
        xr = x.clone().requires_grad_()
        want = fn(xr[:, :8]) * xr[:, 8:]
        (want_grad,) = torch.autograd.grad(want, xr, g)
        torch.testing.assert_close(_torch_decomp.gated_forward(x, None, act), want.detach(), msg=act)
        torch.testing.assert_close(_torch_decomp.gated_forward(x[:, :8], x[:, 8:], act), want.detach(), msg=act)
        (packed,) = _torch_decomp.gated_backward(g, x, None, act)
        torch.testing.assert_close(packed, want_grad, msg=act)
        ga, gb = _torch_decomp.gated_backward(g, x[:, :8], x[:, 8:], act)
        torch.testing.assert_close(torch.cat([ga, gb], 1), want_grad, msg=act)
    assert _torch_decomp.gated_forward(x, None, "silu", torch.float8_e4m3fn, 2.0) is NotImplemented


# ---- replace_activations: LLaMA-style gated MLPs ------------------------------------------------

def _tiny(name):
    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    common = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=2, vocab_size=64, max_position_embeddings=32)
    config, model = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "mistral": ("MistralConfig", "MistralForCausalLM"),
                     "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"), "gemma": ("GemmaConfig", "GemmaForCausalLM")}[name]
    extra = {"head_dim": 16} if name == "gemma" else {}
    torch.manual_seed(0)
    return getattr(transformers, model)(getattr(transformers, config)(**common, **extra))


# The activation each family's config gives its MLP (transformers' defaults: Gemma's gelu_pytorch_tanh).
FAMILIES = {"llama": "silu", "mistral": "silu", "qwen2": "silu", "gemma": "gelu(approximate=tanh)"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_replace_activations_fuses_the_gated_mlps(family):
    model = _tiny(family)
    mlps = {n: m for n, m in model.named_modules() if type(m).__name__.endswith("MLP")}
    assert len(mlps) == model.config.num_hidden_layers  # one per decoder layer: the test looks at each
    params = {n: p for n, p in model.named_parameters()}
    kt.replace_activations(model)
    for name, original in mlps.items():
        fused = model.get_submodule(name)
        assert isinstance(fused, knn.GatedMLP), name
        assert fused.activation == FAMILIES[family]
        assert fused.gate_proj is original.gate_proj and fused.down_proj is original.down_proj
        assert fused.act_fn.activation == FAMILIES[family]
        assert fused.replaced.endswith(type(original).__name__)
    # the same parameters under the same names: the weights are the original's
    after = dict(model.named_parameters())
    assert list(after) == list(params) and all(after[n] is p for n, p in params.items())
    with torch.no_grad():  # the model runs through kplay's gated op (its Meta kernel)
        logits = model.to("meta")(input_ids=torch.zeros(2, 5, dtype=torch.long, device="meta")).logits
    assert logits.shape == (2, 5, 64)


def test_replace_activations_leaves_other_mlps_alone():
    class Swapped(torch.nn.Module):  # gate and up the other way round: not the gated MLP's expression
        def __init__(self):
            super().__init__()
            self.gate_proj, self.up_proj = torch.nn.Linear(4, 6), torch.nn.Linear(4, 6)
            self.down_proj, self.act_fn = torch.nn.Linear(6, 4), torch.nn.SiLU()

        def forward(self, x):
            return self.down_proj(self.act_fn(self.up_proj(x)) * self.gate_proj(x))

    class Gated(Swapped):
        def forward(self, h):
            """The gated MLP, under another argument name and with a docstring."""
            out = self.down_proj(self.act_fn(self.gate_proj(h)) * self.up_proj(h))
            return out

    class NoKplayActivation(Gated):
        def __init__(self):
            super().__init__()
            self.act_fn = torch.nn.Softmax(dim=-1)

    tree = torch.nn.ModuleDict({"swapped": Swapped(), "gated": Gated(), "other": NoKplayActivation()})
    assert kt.gated_mlp_activation(tree["gated"]) == "silu"
    assert kt.gated_mlp_activation(tree["swapped"]) is None and kt.gated_mlp_activation(tree["other"]) is None
    kt.replace_activations(tree)
    assert isinstance(tree["gated"], knn.GatedMLP)
    assert type(tree["swapped"]) is Swapped and isinstance(tree["swapped"].act_fn, knn.SiLU)  # only the activation
    assert type(tree["other"]) is NoKplayActivation
    glu = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GLU(0))
    kt.replace_activations(glu)
    assert isinstance(glu[1], knn.GLU) and glu[1].dim == 0
    plain = torch.nn.ModuleDict({"gated": Gated()})
    kt.replace_activations(plain, gated_mlp=False)
    assert type(plain["gated"]) is Gated and isinstance(plain["gated"].act_fn, knn.SiLU)


# ---- on a CUDA device (the GPU machine; skipped here, saying so) ---------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: kplay's gated kernels not run")
# per dtype: a few roundings (16-bit backward: kplay's bound is up to 4 ulp, gelu's)
TOL = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-13}
ACTS = {"silu": F.silu, "gelu": F.gelu, "gelu(approximate=tanh)": lambda t: F.gelu(t, approximate="tanh"),
        "relu": F.relu, "sigmoid": torch.sigmoid}


def mixed(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, device="cuda", generator=g, dtype=torch.float64) * 3).to(dtype)


def _reference(act, a, b, g):
    """act(a) * b and its gradients in float64 from the same (rounded) inputs."""
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    y = ACTS[act](a64) * b64
    ga, gb = torch.autograd.grad(y, (a64, b64), g.double())
    return y.detach(), ga, gb


def _close(got, want, dtype, what):
    # within a few roundings of the dtype, relative to the result's scale
    tol = TOL[dtype]
    torch.testing.assert_close(got.double(), want, rtol=4 * tol, atol=4 * tol * want.abs().max().item(), msg=what)


@cuda
@pytest.mark.parametrize("dtype", list(TOL), ids=str)
@pytest.mark.parametrize("act", sorted(ACTS))
def test_values_and_gradients_match_torch(dtype, act):
    x = mixed((3, 37, 2 * 300), dtype).requires_grad_()
    g = mixed((3, 37, 300), dtype, 1)
    y = kt.gated(x, act)
    (gx,) = torch.autograd.grad(y, x, g)
    want, ga, gb = _reference(act, x[..., :300], x[..., 300:], g)
    _close(y, want, dtype, f"{act} packed forward")
    _close(gx, torch.cat([ga, gb], -1), dtype, f"{act} packed backward")
    # two tensors: row-pitched column slices of wider tensors, read where they are
    base = mixed((111, 1000), dtype, 2).requires_grad_()
    a, b = base[:, 10:310], base[:, 500:800]
    gy = mixed((111, 300), dtype, 3)
    y = kt.gated(a, b, act)
    (gbase,) = torch.autograd.grad(y, base, gy)
    want, ga, gb = _reference(act, a, b, gy)
    _close(y, want, dtype, f"{act} two-tensor forward")
    _close(gbase[:, 10:310], ga, dtype, f"{act} grad_a")
    _close(gbase[:, 500:800], gb, dtype, f"{act} grad_b")
    assert torch.equal(gbase[:, :10], torch.zeros_like(gbase[:, :10]))


@cuda
def test_layouts_that_need_a_copy_and_empty_tensors():
    x = mixed((8, 6, 40), torch.float32).transpose(0, 1)  # leading dimensions that do not fold
    want = F.silu(x[..., :20]) * x[..., 20:]
    torch.testing.assert_close(kt.gated(x), want)
    b = mixed((1, 20), torch.float32, 1).expand(16, 20)  # a broadcast b
    a = mixed((16, 20), torch.float32, 2)
    torch.testing.assert_close(kt.gated(a, b, "relu"), F.relu(a) * b)
    e = torch.empty(0, 8, device="cuda", requires_grad=True)
    y = kt.gated(e)
    assert y.shape == (0, 4)
    y.sum().backward()
    assert e.grad.shape == (0, 8)


@cuda
def test_gradcheck_float64():
    x = mixed((5, 14), torch.float64).requires_grad_()
    a = mixed((5, 7), torch.float64, 1).requires_grad_()
    b = mixed((5, 7), torch.float64, 2).requires_grad_()
    for act in ("silu", "gelu", "sigmoid", "softplus(beta=2.0)"):
        assert torch.autograd.gradcheck(lambda t: kt.gated(t, act), (x,))
        assert torch.autograd.gradcheck(lambda u, v: kt.gated(u, v, act), (a, b))
    for dim in (0, 1, -1):
        t = mixed((4, 6, 8), torch.float64, 3).requires_grad_()
        assert torch.autograd.gradcheck(lambda u: kt.glu(u, dim), (t,))


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_opcheck_on_cuda(dtype):
    x = mixed((8, 16), dtype)
    a, b = mixed((8, 6), dtype, 1), mixed((8, 6), dtype, 2)
    fwd, bwd = torch.ops.kplay.gated_forward.default, torch.ops.kplay.gated_backward.default
    for act in ("silu",):  # the op's C++ is the same for every activation
        torch.library.opcheck(fwd, (x.clone().requires_grad_(), None, act))
        torch.library.opcheck(fwd, (a.clone().requires_grad_(), b.clone().requires_grad_(), act))
        torch.library.opcheck(fwd, (x[:, 1:7], x[:, 9:15], act))
        torch.library.opcheck(bwd, (mixed((8, 8), dtype, 3), x, None, act))
        torch.library.opcheck(bwd, (mixed((8, 6), dtype, 3), a, b, act))


@cuda
@pytest.mark.parametrize("dtype", list(TOL), ids=str)
def test_glu_matches_torch_in_every_dim(dtype):
    # torch's glu rounds its float math in a few places, kplay once: a few roundings apart
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}[dtype]
    x = mixed((6, 8, 10), dtype).requires_grad_()
    for dim in (0, 1, 2, -1):
        xt = x.detach().clone().requires_grad_()
        y, yt = kt.glu(x, dim), F.glu(xt, dim)
        g = mixed(yt.shape, dtype, 1)
        torch.testing.assert_close(y, yt, rtol=tol, atol=tol)
        torch.testing.assert_close(torch.autograd.grad(y, x, g)[0], torch.autograd.grad(yt, xt, g)[0], rtol=tol,
                                   atol=tol)
    torch.testing.assert_close(knn.GLU(1)(x), torch.nn.GLU(1)(x), rtol=tol, atol=tol)


@cuda
def test_glu_on_torchs_opinfo_samples():
    pytest.importorskip("expecttest", reason="expecttest not installed: torch.testing._internal cannot be imported")
    pytest.importorskip("hypothesis", reason="hypothesis not installed: torch.testing._internal cannot be imported")
    from torch.testing._internal.common_methods_invocations import op_db

    (opinfo,) = [o for o in op_db if o.name == "nn.functional.glu" and not o.variant_test_name]
    failures, count = [], 0
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        for sample in opinfo.sample_inputs("cuda", dtype, requires_grad=dtype in (torch.float32, torch.float64)):
            count += 1
            try:
                x = sample.input.detach().clone().requires_grad_(sample.input.requires_grad)
                xt = sample.input.detach().clone().requires_grad_(sample.input.requires_grad)
                got, want = kt.glu(x, *sample.args, **sample.kwargs), opinfo.op(xt, *sample.args, **sample.kwargs)
                torch.testing.assert_close(got, want)  # torch's tolerances for the dtype
                if x.requires_grad and want.numel():
                    g = torch.randn(want.shape, device="cuda", dtype=dtype, generator=gen)
                    torch.testing.assert_close(torch.autograd.grad(got, x, g)[0], torch.autograd.grad(want, xt, g)[0])
            except Exception as e:  # noqa: BLE001  (a refusal counts as a failure, with its message)
                failures.append(f"{dtype} shape {tuple(sample.input.shape)} args {sample.args}: {type(e).__name__}: "
                                f"{str(e).strip().splitlines()[0:4]}")
    assert count and not failures, f"{len(failures)} of {count} samples differ:\n" + "\n".join(failures)


# largest finite value, mantissa bits, exponent of the smallest normal number (below it the spacing stays)
FP8 = {torch.float8_e4m3fn: (448.0, 3, -6), torch.float8_e5m2: (57344.0, 2, -14)}


@cuda
@pytest.mark.parametrize("out_dtype", list(FP8), ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_fp8_output_against_float64_with_saturation(out_dtype, dtype):
    # rows from 1e-3 to 1e2 times N(0, 9): subnormal FP8 results up to beyond both formats' largest values
    x = (mixed((64, 2 * 512), torch.float64) * torch.logspace(-3, 2, 64, device="cuda").view(-1, 1)).to(dtype)
    scale = 0.75
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) < (8, 9):
        with pytest.raises(kplay.UnsupportedError, match="sm_89"):
            kt.gated(x, out_dtype=out_dtype, scale=scale)
        return
    with torch.no_grad():
        y = kt.gated(x, out_dtype=out_dtype, scale=scale)
    assert y.dtype == out_dtype and y.shape == (64, 512)
    largest, mbits, emin = FP8[out_dtype]
    exact = (F.silu(x[:, :512].double()) * x[:, 512:].double()) / scale
    clamped = exact.clamp(-largest, largest)
    got = y.double()
    # the exact value's rounding to the format: half an ulp of its binade (the subnormals' spacing below
    # the smallest normal number)
    half_ulp = torch.exp2(torch.floor(torch.log2(clamped.abs().clamp_min(2.0 ** emin))) - mbits - 1)
    assert (got - clamped).abs().le(half_ulp * (1 + 2 ** -10)).all()
    assert got.abs().eq(largest).any() and (got.abs() <= largest).all()  # saturated, never inf
    assert torch.equal(torch.signbit(got[exact != 0]), torch.signbit(exact[exact != 0]))


@cuda
def test_patched_llama_gives_the_same_logits_and_gradients():
    import copy

    model = _tiny("llama").cuda().float()
    ours = kt.replace_activations(copy.deepcopy(model))
    assert all(isinstance(layer.mlp, knn.GatedMLP) for layer in ours.model.layers)
    ids = torch.randint(0, 64, (3, 17), device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    want = model(input_ids=ids, labels=ids)
    got = ours(input_ids=ids, labels=ids)
    torch.testing.assert_close(got.logits, want.logits, rtol=1e-5, atol=1e-5)
    want.loss.backward()
    got.loss.backward()
    for (name, p), (_, q) in zip(model.named_parameters(), ours.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)


@cuda
@pytest.mark.parametrize("mode", _torch_decomp.MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_compiled_gated_matches_eager(compile_mode, mode, dtype):
    compile_mode(mode)
    tol = {torch.float32: 1e-5, torch.bfloat16: 1.6e-2}[dtype]
    for act in ("silu", "relu"):  # a transcendental and a select: "auto" decomposes them differently
        # Neighbours that round nothing (powers of two): Inductor computes a fused 16-bit graph in
        # float32 without the rounding between ops that eager does, which near silu's derivative
        # root moves the gradient by more than the tolerance for reasons that are not kplay's.
        def f(t):
            return kt.gated(t * 2, act) * 0.5

        x = mixed((64, 2 * 129), dtype).requires_grad_()
        g = mixed((64, 129), dtype, 1)
        assert_compiled_matches_eager(f, x, g, not _torch_decomp.gated_decomposes(act, dtype), tol, act)


@cuda
def test_launches_go_on_the_current_stream():
    src = mixed((1 << 20,), torch.float32)
    x = torch.zeros_like(src)
    kt.gated(x)  # warm: no compile inside the timed part
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        x.copy_(src)
        y = kt.gated(x)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, F.silu(src[: 1 << 19]) * src[1 << 19:])


def _fallback_run():
    """Forward and gradients of both forms and glu, on the process's kplay.torch operators."""
    x = mixed((33, 140), torch.float32).requires_grad_()
    y = kt.gated(x, "gelu")
    (gx,) = torch.autograd.grad(y, x, mixed((33, 70), torch.float32, 1))
    base = mixed((33, 200), torch.bfloat16, 2)
    z = kt.gated(base[:, 3:50], base[:, 100:147], "silu")
    w = kt.glu(mixed((6, 10, 4), torch.float64, 3), 1)
    return [t.detach().cpu() for t in (y, gx, z, w)]


@cuda
def test_extension_and_python_operators_give_the_same_bits(tmp_path):
    path = tmp_path / "fallback.pt"
    code = ("import sys, torch, kplay.torch as kt\n"
            "sys.path.insert(0, sys.argv[2])\n"
            "import test_gated_torch as t\n"
            "assert not kt.EXTENSION\n"
            "torch.save(t._fallback_run(), sys.argv[1])\n")
    env = dict(os.environ, KPLAY_TORCH_OPS="python")
    subprocess.run([sys.executable, "-W", "ignore", "-c", code, str(path), os.path.dirname(__file__)], env=env,
                   check=True)
    for ours, theirs in zip(_fallback_run(), torch.load(path)):
        assert torch.equal(ours, theirs)

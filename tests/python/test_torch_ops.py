"""kplay.torch without a CUDA device: the C++ extension kplay._torch_ops loads and registers the
ops (schemas, kernels per dispatch key), opcheck, Meta kernels and autograd on meta tensors,
torch.compile(fullgraph=True) tracing with each compile mode, the decompositions' formulas against
torch's functions, the Python fallback, replace_activations on torchvision models, argument
errors. CI installs torch and builds the extension, so nothing here skips for lack of them."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch not installed: kplay.torch tests skipped")

import torch.nn.functional as F  # noqa: E402

import kplay  # noqa: E402
import kplay.nn as knn  # noqa: E402
import kplay.torch as kt  # noqa: E402
from compiled_graphs import assert_compiled_matches_eager, compiled_graphs  # noqa: E402
from kplay import _table, _torch_decomp  # noqa: E402

OPS = ("forward", "forward_", "backward")


def test_the_extension_is_loaded():
    # The package under test was built with torch present (CI: pip install --no-build-isolation .).
    assert kt.EXTENSION, kt._why_not
    from kplay import _torch_ops, _torch_ops_build

    assert _torch_ops.TORCH_VERSION == _torch_ops_build.TORCH_VERSION
    assert _torch_ops.TORCH_VERSION.split("+")[0] == torch.__version__.split("+")[0]


def test_schemas_and_kernels_per_dispatch_key():
    schemas = {op: str(getattr(torch.ops.kplay, op).default._schema) for op in OPS}
    assert schemas["forward"] == "kplay::forward(Tensor x, str activation) -> Tensor"
    assert schemas["forward_"] == "kplay::forward_(Tensor(a!) x, str activation) -> ()"
    assert schemas["backward"] == ("kplay::backward(Tensor grad, Tensor saved, str activation, bool saved_output)"
                                   " -> Tensor")
    for op in OPS:
        for key in ("CUDA", "Meta", "CPU", "Autograd"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"kplay::{op}", key), (op, key)


def test_version_mismatch_refuses_the_extension(monkeypatch):
    from kplay import _torch_ops_build

    monkeypatch.setattr(_torch_ops_build, "TORCH_VERSION", "0.0.1")
    why = kt._load_extension()
    assert "built for torch 0.0.1" in why and torch.__version__ in why
    # Another CUDA variant of the same release (its local tag) is the same C++ interface.
    monkeypatch.setattr(_torch_ops_build, "TORCH_VERSION", torch.__version__.split("+")[0] + "+cu999")
    assert kt._load_extension() == ""


def test_python_fallback_says_so_once_and_registers_the_same_ops():
    code = ("import warnings, torch\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import kplay.torch as kt\n"
            "    import kplay.nn\n"
            "print(kt.EXTENSION, sum('Python operators' in str(x.message) for x in w))\n"
            "print(torch.ops.kplay.forward.default._schema)\n"
            "print(tuple(kt.selu(torch.empty(2, 3, device='meta')).shape))\n")
    env = dict(os.environ, KPLAY_TORCH_OPS="python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == "False 1", out
    assert lines[1] == str(torch.ops.kplay.forward.default._schema)
    assert lines[2] == "(2, 3)"


@pytest.mark.parametrize("act", ["selu", "relu", "leaky_relu(negative_slope=0.2)", "gelu(approximate=tanh)",
                                 "threshold(threshold=0.1, value=-2.0)"])
def test_opcheck_on_meta_tensors(act):
    # torch.library.opcheck's schema, autograd registration, fake tensor and AOT dispatch (dynamic
    # shapes) checks, which need no device data: meta tensors. The activations cover both saved
    # kinds and parameters; the op's C++ is the same for every activation.
    x = torch.empty(8, 16, device="meta")
    torch.library.opcheck(torch.ops.kplay.forward.default, (x.clone().requires_grad_(), act))
    torch.library.opcheck(torch.ops.kplay.forward.default, (x[:, 2:9], act))  # pitched view
    torch.library.opcheck(torch.ops.kplay.forward_.default, (x.clone(), act))
    saved_output = kt.saves_output(act)
    torch.library.opcheck(torch.ops.kplay.backward.default, (torch.empty_like(x), x, act, saved_output))


def test_torch_ops_calls_are_still_dispatcher_calls():
    # torch.ops.kplay.*.default take a plain call to the dispatcher's typed call and any other to
    # the boxed one (python/src/torch_ops.cpp, "Python entry points"); either way dispatch modes
    # and torch function modes see the op, keywords work, and results are what the schema says.
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    ops = torch.ops.kplay
    x = torch.empty(8, 16, device="meta")
    seen = []

    class Dispatched(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    class Called(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Dispatched():
        assert ops.forward.default(x, "selu").shape == x.shape
        assert ops.forward_.default(x, "selu") is None
        assert ops.backward.default(x, x, "selu", False).shape == x.shape
        assert ops.gated_forward.default(x, None, "silu").shape == (8, 8)
    assert seen == [ops.forward.default, ops.forward_.default, ops.backward.default, ops.gated_forward.default]
    seen.clear()
    with Called():
        ops.forward.default(x, "selu")
    assert seen == [ops.forward.default]
    assert ops.forward.default(x, activation="selu").shape == x.shape
    assert ops.gated_forward.default(x, None, "silu", out_dtype=None, scale=1.0).shape == (8, 8)
    with pytest.raises(RuntimeError, match="missing value for argument 'activation'"):
        ops.forward.default(x)


def test_meta_kernels_keep_layouts():
    x = torch.empty(2, 3, 4, 5, device="meta").to(memory_format=torch.channels_last)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        y = kt.selu(x.to(dtype))
        assert y.dtype == dtype and y.shape == x.shape and y.stride() == x.stride()
    g = torch.ops.kplay.backward(torch.empty(6, 7, device="meta"), torch.empty(6, 7, device="meta"), "selu", False)
    assert g.shape == (6, 7)
    t = torch.empty(4, device="meta")
    v = t._version
    kt.relu_(t)
    assert t._version > v  # in place without grad bumps the version, as torch's ops do


def test_argument_errors_are_kplay_errors():
    with pytest.raises(kplay.InvalidArgumentError, match="float32, float16, bfloat16 or float64"):
        kt.selu(torch.ones(4, dtype=torch.int32, device="meta"))
    with pytest.raises(kplay.InvalidArgumentError, match="compile mode"):
        kt.set_compile_mode("fast")
    with pytest.raises(TypeError, match="unexpected argument"):
        kt.leaky_relu(torch.ones(4, device="meta"), slope=0.2)


def test_out_forms_refuse_bad_calls_and_run_the_cpu_kernel_on_cpu():
    # kplay._torch_ops.forward_out / backward_out, what compiled graphs call (_torch_inductor.py)
    from kplay import _torch_ops

    x = torch.linspace(-3, 3, 7)
    with pytest.raises(TypeError, match="2 positional arguments and a tensor out"):
        _torch_ops.forward_out(x, "selu")
    with pytest.raises(TypeError, match="saved_output a bool"):
        _torch_ops.backward_out(x, x, "selu", 1, out=x)
    out = torch.empty_like(x)
    _torch_ops.forward_out(x, "selu", out=out)
    torch.testing.assert_close(out, torch.selu(x), rtol=0, atol=0)
    _torch_ops.backward_out(x, x, "selu", False, out=out)
    torch.testing.assert_close(out, torch.ops.aten.elu_backward(x, 1.6732632423543772, 1.0507009873554805, 1,
                                                                False, x), rtol=0, atol=0)


def _saved_by(activation):
    """'input' or 'output': which tensor autograd keeps for backward of activation on meta."""
    x = torch.empty(16, device="meta", requires_grad=True)
    xin = x * 1.0
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = kt.activation(xin, activation)
    assert len(saved) == 1
    return "output" if saved[0] is y else "input" if saved[0] is xin else "other"


def test_autograd_saves_what_the_registry_says():
    for e in _table.BUILTINS:
        act = _table.activation_string(e.activation, {n: 0.5 for n, d in e.params if d is _table.REQUIRED})
        assert _saved_by(act) == ("output" if kt.saves_output(act) else "input"), act
    assert _saved_by("leaky_relu(negative_slope=-0.5)") == "input"  # a negative slope loses the sign


def test_backward_on_meta_and_no_double_backward():
    x = torch.empty(8, 3, device="meta", requires_grad=True)
    (g,) = torch.autograd.grad(kt.selu(x).sum(), x)
    assert g.shape == x.shape
    (g,) = torch.autograd.grad(kt.selu(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="kplay::backward"):
        g.sum().backward()


def test_in_place_with_grad_on_meta():
    leaf = torch.empty(10, device="meta", requires_grad=True)
    z = leaf * 2.0
    assert kt.relu_(z) is z  # output saved: in place, z is dirty
    assert "Cpp" in type(z.grad_fn).__name__
    z.sum().backward()
    w = leaf * 2.0
    assert kt.selu_(w) is w  # input saved: in place too, after a copy of w that backward reads
    assert "Cpp" in type(w.grad_fn).__name__
    w.sum().backward()
    base = leaf * 2.0
    kt.selu_(base[2:])  # a view: out of place and copied back into it
    assert "CopySlices" in type(base.grad_fn).__name__
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        kt.relu_(leaf)


@pytest.mark.parametrize("mode", _torch_decomp.MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("act", ["selu", "relu", "leaky_relu(negative_slope=0.2)", "gelu(approximate=tanh)"])
def test_compile_traces_and_decomposes_as_the_mode_says(compile_mode, mode, dtype, act):
    compile_mode(mode)
    x = torch.empty(32, 8, device="meta", dtype=dtype, requires_grad=True)
    graphs = compiled_graphs(lambda t: kt.activation(t, act) * 2, x)
    assert len(graphs) == 2  # forward and backward, one graph each: no graph break
    kplay_ops = [t for g in graphs for t in g if t.startswith("kplay.")]
    if _torch_decomp.decomposes(act, dtype):
        assert kplay_ops == []
    else:
        assert kplay_ops == ["kplay.forward.default", "kplay.backward.default"]
    want = {"kernel": False, "decompose": True}.get(mode, act.startswith(("relu", "leaky")) or dtype != torch.float32)
    assert _torch_decomp.decomposes(act, dtype) == want


def test_compile_in_place_and_modules_without_graph_break(compile_mode):
    compile_mode("kernel")
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), knn.SELU(), torch.nn.Linear(16, 16), knn.ReLU(inplace=True))
    model = model.to("meta")
    x = torch.empty(4, 16, device="meta")
    graphs = compiled_graphs(model, x)
    assert len(graphs) == 2 and "kplay.forward.default" in graphs[0]
    with torch.no_grad():
        graphs = compiled_graphs(model, x, backward=False)
    assert len(graphs) == 1
    torch._dynamo.reset()
    assert torch._dynamo.explain(model)(x).graph_break_count == 0


def test_direct_op_calls_decompose_once_registered(compile_mode):
    compile_mode("decompose")
    kt.register_decompositions()
    x = torch.empty(16, device="meta", requires_grad=True)
    graphs = compiled_graphs(lambda t: torch.ops.kplay.forward(t, "selu") + 1, x)
    assert len(graphs) == 2 and not any(t.startswith("kplay.") for g in graphs for t in g)


def test_decompositions_apply_after_a_graph_without_kplay_was_compiled(tmp_path):
    # Inductor caches its decomposition table at the first compile of the process; a model whose
    # torch variant compiles first (kplay.bench_models, examples/overhead.py) must still get
    # kplay's formulas. A fresh process, since this one may have registered them long ago, and
    # fresh on-disk caches, which are keyed on the graph before decomposition.
    code = """
import torch
import kplay.torch as kt
from torch._inductor.utils import run_and_get_code
torch.compile(lambda t: torch.selu(t) * 2, fullgraph=True)(torch.randn(64))
kt.set_compile_mode("decompose")
def chain(t):
    for _ in range(3):
        t = kt.selu(t)
    return t
_, sources = run_and_get_code(torch.compile(chain, fullgraph=True), torch.randn(64))
print(sum(s.count("kplay.forward") for s in sources))
"""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "0", out.stdout[-2000:]


def test_inductor_calls_a_kept_kernels_out_form(compile_mode, monkeypatch):
    # Where the mode keeps kplay's kernel, Inductor's generated code calls its out= form
    # (kplay/_torch_inductor.py) into buffers Inductor allocates, not the op. On CPU that form
    # refuses the tensors, as the op does; replaced here by torch's own functions, the generated
    # code runs, and its operands, layouts and results are checked. (On CUDA,
    # test_compiled_graphs_match_eager_in_every_mode compares the kernels' bits with eager's.)
    from torch._inductor.utils import run_and_get_code

    from kplay import _torch_ops

    def forward_out(x, activation, *, out):
        assert activation == "selu" and out.shape == x.shape and out.stride() == x.stride(), (x.stride(), out.stride())
        out.copy_(torch.selu(x))

    def backward_out(grad, saved, activation, saved_output, *, out):
        assert activation == "selu" and not saved_output and out.stride() == saved.stride() == grad.stride()
        with torch.enable_grad():
            xr = saved.detach().requires_grad_()
            out.copy_(torch.autograd.grad(torch.selu(xr), xr, grad)[0])

    compile_mode("kernel")
    x = torch.randn(16, 24, dtype=torch.float64)
    g = torch.randn(24, 16, dtype=torch.float64)
    # The real out= call on CPU tensors runs the op's CPU kernel (torch's selu).
    torch.testing.assert_close(torch.compile(lambda t: kt.selu(t) * 2, fullgraph=True)(x), torch.selu(x) * 2,
                               rtol=0, atol=0)
    monkeypatch.setattr(_torch_ops, "forward_out", forward_out)
    monkeypatch.setattr(_torch_ops, "backward_out", backward_out)
    cases = [
        # a chain (buffers reused), a transposed input (its layout kept) and a slice (made dense)
        (lambda t: kt.selu(kt.selu(t.t())) + 1, lambda t: torch.selu(torch.selu(t.t())) + 1, "forward_out"),
        (lambda t: kt.selu(t[:, 1:] * 2), lambda t: torch.selu(t[:, 1:] * 2), "forward_out"),
        (lambda t: torch.ops.kplay.backward(g, t.t(), "selu", False),
         lambda t: torch.ops.aten.elu_backward(g, 1.6732632423543772, 1.0507009873554805, 1.0, False, t.t()),
         "backward_out"),
    ]
    for f, want, entry in cases:
        torch._dynamo.reset()
        got, code = run_and_get_code(torch.compile(f, fullgraph=True), x)
        assert f"kplay._torch_ops.{entry}(" in code[0] and "torch.ops.kplay" not in code[0], code[0]
        torch.testing.assert_close(got, want(x), rtol=1e-15, atol=1e-15)


def test_a_mode_other_than_auto_tags_the_compile_caches(compile_mode):
    before = torch.compiler.config.cache_key_tag
    compile_mode("decompose")
    assert torch.compiler.config.cache_key_tag.startswith(before)
    decompose_tag = torch.compiler.config.cache_key_tag
    compile_mode("kernel")
    assert torch.compiler.config.cache_key_tag not in (before, decompose_tag)
    compile_mode("auto")
    assert torch.compiler.config.cache_key_tag == before


def test_user_activations_keep_the_kernel():
    assert _torch_decomp.parse("leaky_relu(negative_slope=0.2)") == ("leaky_relu", {"negative_slope": 0.2})
    assert _torch_decomp.parse("gelu") == ("gelu", {"approximate": "none"})
    assert _torch_decomp.parse("my_act") is None
    assert _torch_decomp.parse("threshold") is None  # required parameters missing: the kernel says why
    assert _torch_decomp.parse("softshrink(lambd=-1.0)") is None  # refused by kplay: so is the formula
    assert _torch_decomp.parse("elu(alpha=0.5, beta=2.0)") is None


# Torch's function for each built-in (torch.nn.functional's, with torch's parameter names), and the
# two transformers formulas torch has no function for. celu, hardsigmoid and hardswish are spelled
# out: torch's float64 kernels round alpha (celu's backward) and 1/6 to float.
def _torch_function(name):
    if name == "hardsigmoid":
        return lambda x: (x + 3).clamp(0, 6) / 6
    if name == "hardswish":
        return lambda x: x * (x + 3).clamp(0, 6) / 6
    if name == "celu":
        return lambda x, alpha: torch.where(x <= 0, alpha * torch.expm1(x / alpha), x)
    if name == "quick_gelu":
        return lambda x, beta: x * torch.sigmoid(beta * x)
    if name == "relu2":
        return lambda x: torch.square(torch.relu(x))
    return {"sigmoid": torch.sigmoid, "tanh": torch.tanh}.get(name) or getattr(F, name)


PARAMS = {"leaky_relu": {"negative_slope": 0.2}, "elu": {"alpha": 0.7}, "celu": {"alpha": 1.3},
          "softplus": {"beta": 2.0, "threshold": 3.0}, "hardtanh": {"min_val": -0.5, "max_val": 2.0},
          "softshrink": {"lambd": 0.3}, "hardshrink": {"lambd": 0.3}, "threshold": {"threshold": 0.1, "value": -2.0},
          "quick_gelu": {"beta": 1.702}}


@pytest.mark.parametrize("name", sorted(_torch_decomp.FORMULAS))
def test_decomposition_formulas_match_torch_in_float64(name):
    # Each formula (forward; backward from the input and, where it has one, from the output)
    # against torch's function and its autograd, on CPU in float64 away from the kinks.
    params = dict(PARAMS.get(name, {}))
    if name == "gelu":
        params_list = [{}, {"approximate": "tanh"}]
    else:
        params_list = [params]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2000, dtype=torch.float64, generator=gen) * 4
    x = x[(x.abs() > 1e-3) & ((x.abs() - 0.3).abs() > 1e-3) & ((x.abs() - 3).abs() > 1e-3)]
    g = torch.randn(x.shape, dtype=torch.float64, generator=gen)
    fwd, bwd_in, bwd_out = _torch_decomp.FORMULAS[name]
    for p in params_list:
        act = _table.activation_string(name, p)
        parsed_name, full = _torch_decomp.parse(act)
        assert parsed_name == name
        xr = x.clone().requires_grad_()
        want = _torch_function(name)(xr, **p)
        (want_grad,) = torch.autograd.grad(want, xr, g)
        y = fwd(x, full)
        torch.testing.assert_close(y, want.detach(), rtol=1e-12, atol=1e-12, msg=act)
        torch.testing.assert_close(bwd_in(g, x, full), want_grad, rtol=1e-10, atol=1e-12, msg=act)
        if bwd_out is not None:
            torch.testing.assert_close(bwd_out(g, y, full), want_grad, rtol=1e-7, atol=1e-9, msg=act)


def test_replace_activations_in_torchvision_models():
    tv = pytest.importorskip("torchvision", reason="torchvision not installed")
    for make in (tv.models.resnet18, tv.models.efficientnet_b0, tv.models.mobilenet_v3_small, tv.models.convnext_tiny):
        model = make(weights=None)
        kt.replace_activations(model)
        mapped = {e.torch_class for e in _table.TABLE if e.activation in kplay.activations()}
        left = [type(m).__name__ for m in model.modules()
                if type(m).__module__.startswith("torch.nn") and type(m).__name__ in mapped]
        assert left == [], make.__name__
        assert any(isinstance(m, knn.Activation) for m in model.modules()), make.__name__
        with torch.no_grad():  # the model runs through kplay's ops (Meta kernels)
            out = model.to("meta").eval()(torch.empty(2, 3, 64, 64, device="meta"))
        assert out.shape[0] == 2


# ---- on a CUDA device (the GPU machine; skipped here, saying so) -------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: C++ op kernels not run")


def _mixed(shape, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(shape, device="cuda", generator=g, dtype=torch.float64) * 3).to(dtype)


@cuda
@pytest.mark.parametrize("mode", _torch_decomp.MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_compiled_graphs_match_eager_in_every_mode(compile_mode, mode, dtype):
    # Where the graph keeps the kernel it gives eager's bits; a decomposition is kplay's formula
    # evaluated by Inductor, within the tolerances test_torch.py holds kplay to against torch.
    compile_mode(mode)
    tol = {torch.float32: 1e-5, torch.bfloat16: 1.6e-2}[dtype]
    for act in ("selu", "relu", "gelu(approximate=tanh)", "leaky_relu(negative_slope=0.2)", "softplus(beta=2.0)"):
        def f(t):
            return kt.activation(t * 1.5, act) * 2

        def sliced(t):  # a column slice: Inductor hands the kernel a dense copy
            return kt.activation((t * 1.5)[:, 1:], act) * 2

        x = _mixed((64, 129), dtype).requires_grad_()
        g = _mixed((64, 129), dtype, 1)
        assert_compiled_matches_eager(f, x, g, not _torch_decomp.decomposes(act, dtype), tol, act)
        assert_compiled_matches_eager(sliced, x, g[:, 1:], not _torch_decomp.decomposes(act, dtype), tol, act)


@cuda
def test_out_forms_refuse_an_out_of_another_shape_dtype_or_layout():
    from kplay import _torch_ops

    x = _mixed((8, 16), torch.float32)
    for out in (torch.empty(8, 15, device="cuda"), torch.empty(8, 16, device="cuda", dtype=torch.float64),
                torch.empty(8, 32, device="cuda")[:, :16]):
        with pytest.raises(kplay.InvalidArgumentError, match="must be a dense tensor of the result's"):
            _torch_ops.forward_out(x, "selu", out=out)
        with pytest.raises(kplay.InvalidArgumentError, match="must be a dense tensor of the result's"):
            _torch_ops.backward_out(x, x, "selu", False, out=out)
    out = torch.empty_like(x)
    _torch_ops.forward_out(x, "selu", out=out)
    assert torch.equal(out, kt.selu(x))


@cuda
def test_launches_go_on_the_current_stream():
    # The input is written on a side stream behind a long sleep; a launch on any other stream
    # would read it before the copy lands.
    src = _mixed((1 << 20,), torch.float32)
    x = torch.zeros_like(src)
    s = torch.cuda.Stream()
    kt.selu(x)  # warm: no compile inside the timed part
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        x.copy_(src)
        y = kt.selu(x)
        xg = x.clone().requires_grad_()
        (gx,) = torch.autograd.grad(kt.selu(xg), xg, torch.ones_like(xg))
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.selu(src))
    torch.testing.assert_close(gx, torch.where(src > 0, 1.0507009873554805, 1.7580993408473766 * src.exp()))


@cuda
def test_extension_and_python_operators_give_the_same_bits(tmp_path):
    # The fallback (KPLAY_TORCH_OPS=python, another process) and the C++ ops launch the same
    # kernels: forward, gradient, in place and a pitched view agree bit for bit.
    path = tmp_path / "fallback.pt"
    code = ("import sys, torch, kplay.torch as kt\n"
            "sys.path.insert(0, sys.argv[2])\n"
            "import test_torch_ops as t\n"
            "assert not kt.EXTENSION\n"
            "torch.save(t._fallback_run(), sys.argv[1])\n")
    env = dict(os.environ, KPLAY_TORCH_OPS="python")
    subprocess.run([sys.executable, "-c", code, str(path), os.path.dirname(__file__)], env=env, check=True)
    for ours, theirs in zip(_fallback_run(), torch.load(path)):
        assert torch.equal(ours, theirs)


def _fallback_run():
    """Forward, gradient, in place and a pitched view, on the process's kplay.torch operators."""
    x = _mixed((33, 70), torch.float32).requires_grad_()
    y = kt.selu(x)
    (gx,) = torch.autograd.grad(y, x, _mixed((33, 70), torch.float32, 1))
    z = _mixed((33, 70), torch.float32, 2)
    kt.relu_(z)
    v = kt.gelu(_mixed((33, 70), torch.float32, 3)[:, 5:40], approximate="tanh")
    return [t.detach().cpu() for t in (y, gx, z, v)]


@cuda
def test_inductor_compiles_every_decomposition(compile_mode):
    # Every activation decomposed in one graph: Inductor's code for each formula, forward and
    # backward, against the same formulas in float64 under torch's autograd. (With nothing of
    # kplay's left in the graph it runs on the CPU as well, but the CPU's C++ compile of it would
    # cost CI half a minute: it runs where the GPU tests do.)
    compile_mode("decompose")
    acts = [_table.activation_string(n, PARAMS.get(n, {})) for n in sorted(_torch_decomp.FORMULAS)]

    def f(t):
        return sum(kt.activation(t, act) * (i + 1) for i, act in enumerate(acts))

    gen = torch.Generator().manual_seed(1)
    x = (torch.randn(512, dtype=torch.float64, generator=gen) * 4).float().cuda().requires_grad_()
    g = torch.randn(512, generator=gen).cuda()
    torch._dynamo.reset()
    y = torch.compile(f, fullgraph=True)(x)
    (gx,) = torch.autograd.grad(y, x, g)
    x64 = x.detach().double().requires_grad_()
    want = sum(_torch_decomp.FORMULAS[_torch_decomp.parse(act)[0]][0](x64, _torch_decomp.parse(act)[1]) * (i + 1)
               for i, act in enumerate(acts))
    (want_grad,) = torch.autograd.grad(want, x64, g.double())
    torch.testing.assert_close(y.double(), want, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(gx.double(), want_grad, rtol=1e-5, atol=1e-4)

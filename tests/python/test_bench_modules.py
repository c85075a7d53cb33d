"""The end-to-end benchmarks (kplay.bench_models, kplay.bench_ddp) without a GPU: they import and
parse their options without torch, refuse to run without CUDA or outside torchrun, judge rows by
the stated rule, and their models hold the activation classes they are meant to measure, which
replace_activations swaps (GPT-2's NewGELUActivation and LLaMA's SiLU included). Models are built
on torch's meta device: no memory, no initialization time. What needs torch, torchvision or
transformers is skipped visibly without them."""
import pytest

from kplay import _bench, bench_ddp, bench_gated, bench_models


# ---- options --------------------------------------------------------------------------------------

def test_bench_models_options():
    args = bench_models.parse_args([])
    assert args.models == list(bench_models.MODELS) and args.modes == list(bench_models.DEFAULT_MODES)
    assert args.json is None and args.rounds > args.warmup >= 1
    quick = bench_models.parse_args(["--quick"])
    assert set(quick.models) < set(bench_models.MODELS) and quick.rounds < args.rounds
    picked = bench_models.parse_args(["--models", "gpt2,llama", "--modes", "compile_f32", "--rounds", "5",
                                      "--json", "out.json", "--quick"])
    assert picked.models == ["gpt2", "llama"] and picked.modes == ["compile_f32"] and picked.rounds == 5
    assert picked.json == "out.json"
    assert bench_models.parse_args(["--modes", "all"]).modes == list(bench_models.MODES)


@pytest.mark.parametrize("argv, words", [(["--models", "resnet51"], "unknown model 'resnet51'"),
                                         (["--modes", "eager_f16"], "unknown mode 'eager_f16'"),
                                         (["--rounds", "0"], "--rounds must be at least 1"),
                                         (["--warmup", "0"], "--warmup must be at least 1"),
                                         (["--batch-scale", "0"], "--batch-scale > 0")])
def test_bench_models_refuses_bad_options(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        bench_models.parse_args(argv)
    assert e.value.code == 2 and words in capsys.readouterr().err


def test_bench_ddp_options():
    args = bench_ddp.parse_args([])
    assert args.acts == list(bench_ddp.ACTIVATIONS) and args.batch == 512
    assert bench_ddp.parse_args(["--acts", "mish", "--db", "k.db"]).acts == ["mish"]
    with pytest.raises(SystemExit) as e:
        bench_ddp.parse_args(["--acts", "selu"])
    assert e.value.code == 2


def _cuda_present():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(_cuda_present(), reason="a CUDA device is present: the benchmark would run")
def test_bench_models_refuses_without_cuda(capsys):
    with pytest.raises(SystemExit) as e:
        bench_models.main(["--quick"])
    assert e.value.code == _bench.NO_CUDA_STATUS
    err = capsys.readouterr().err
    assert "kplay.bench_models" in err and ("CUDA" in err or "torch" in err)


def test_bench_ddp_refuses_outside_torchrun(monkeypatch, capsys):
    for var in ("LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert bench_ddp.main([]) == 2
    assert "torchrun --nproc_per_node=2 -m kplay.bench_ddp" in capsys.readouterr().err


# ---- the verdict and the statistics ---------------------------------------------------------------

def test_verdict_allows_kplay_above_torch_by_the_spread_only():
    steady = [10.0, 10.0, 10.0, 10.0, 10.0]
    assert _bench.verdict(steady, [10.0] * 5)["met"]
    assert _bench.verdict(steady, [9.0] * 5)["met"]
    assert not _bench.verdict(steady, [10.1] * 5)["met"]  # no spread: any excess fails
    noisy = [9.0, 9.5, 10.0, 10.5, 11.0]  # interquartile range 1.0
    assert _bench.verdict(noisy, [10.9] * 5)["met"]
    assert not _bench.verdict(noisy, [11.1] * 5)["met"]
    # one slow round does not widen the spread (a min-max range would take it)
    assert not _bench.verdict([10.0, 10.0, 10.0, 10.0, 50.0], [10.5] * 5)["met"]
    assert _bench.verdict(steady, [12.0] * 5)["ratio"] == pytest.approx(1.2)


def test_interleaved_warms_up_then_alternates_the_order_every_round():
    calls = []
    warm = {n: (lambda n=n: calls.append("warm " + n)) for n in ("torch", "kplay")}
    timed = {n: (lambda n=n: calls.append(n) or float(len(calls))) for n in ("torch", "kplay")}
    rounds = _bench.interleaved(warm, timed, warmup=2, rounds=3)
    assert calls == ["warm torch", "warm torch", "warm kplay", "warm kplay",
                     "torch", "kplay", "kplay", "torch", "torch", "kplay"]
    assert rounds == {"torch": [5.0, 8.0, 9.0], "kplay": [6.0, 7.0, 10.0]}


def test_summary_and_relative_difference():
    s = _bench.summary([3.0, 1.0, 2.0])
    assert (s["median"], s["min"], s["max"]) == (2.0, 1.0, 3.0)
    assert _bench.rel_diff(1.001, 1.0) == pytest.approx(1e-3)
    assert _bench.rel_diff(0.0, 0.0) == 0.0


def test_json_has_no_nan(tmp_path):
    import json

    path = tmp_path / "r.json"
    _bench.write_json(str(path), {"rows": [{"x": float("nan"), "y": [float("inf"), 1.5]}]})
    assert json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} written")) == \
        {"rows": [{"x": None, "y": [None, 1.5]}]}


def test_table_marks_misses_and_failed_rows():
    t = _bench.summary([10.0, 10.0, 10.0])
    k = _bench.summary([12.0, 12.0, 12.0])
    row = {"model": "m", "mode": "eager_f32", "batch": 4, "swapped": 3, "torch": t, "kplay": k,
           "loss_rel_diff": 0.0, **_bench.verdict(t["rounds"], k["rounds"])}
    assert "NO" in bench_models.table_row(row)
    failed = bench_models.table_row({"model": "m", "mode": "eager_f32", "swapped": 0, "error": "build: boom"})
    assert failed[3] == "0" and "boom" in failed[-1]


def test_summary_names_kplay_graph_breaks_unswapped_models_and_misses():
    def timed(model, mode, swapped, torch_ms, kplay_ms, breaks=None):
        t, k = _bench.summary([torch_ms] * 3), _bench.summary([kplay_ms] * 3)
        if breaks is not None:
            t["graph_breaks"], k["graph_breaks"] = 0, breaks
        return {"model": model, "mode": mode, "swapped": swapped, "torch": t, "kplay": k,
                **_bench.verdict(t["rounds"], k["rounds"])}

    rows = [timed("a", "eager_f32", 5, 10.0, 10.0), timed("a", "compile_bf16", 5, 10.0, 9.0, breaks=2),
            timed("b", "eager_f32", 0, 10.0, 11.0), {"model": "c", "mode": "eager_f32", "not_run": "time limit"}]
    s = bench_models.summarize(rows)
    assert (s["met"], s["timed"]) == (2, 3)
    assert s["kplay_graph_breaks"] == ["a compile_bf16: 2"] and s["unswapped"] == ["b"]
    assert s["not_run"] == ["c eager_f32"] and not s["failed"]
    assert any("not met: b eager_f32" in line for line in s["lines"])


# ---- the models and replace_activations ----------------------------------------------------------

def _needs(spec):
    pytest.importorskip("torch", reason="torch not installed: the model builders not checked")
    pytest.importorskip(spec.library, reason=f"{spec.library} not installed: {spec.name} not checked")
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", list(bench_models.MODELS))
def test_models_hold_their_activations_and_kplay_swaps_all_of_them(name):
    spec = bench_models.MODELS[name]
    torch = _needs(spec)
    import kplay.nn as knn

    with torch.device("meta"):
        model = spec.build()
    census = bench_models.activation_census(model)
    for wanted in spec.activation_classes:  # "a|b": either class
        assert any(census.get(c, 0) > 0 for c in wanted.split("|")), f"{name}: no {wanted} in {census}"
    before = {id(m) for m in model.modules()}
    ours, info = bench_models.kplay_variant(model)
    assert {id(m) for m in model.modules()} == before  # the original is left as it was
    kplay_modules = [m for m in ours.modules() if isinstance(m, knn.Activation)]
    assert info["swapped"] == len(kplay_modules) > 0
    # every activation module the census found is kplay's now: none of torch's or transformers' left
    assert info["left"] == {}, info["left"]
    assert info["swapped"] == sum(census.values())
    # the copy keeps every parameter of the original, by name
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in model.named_parameters()]


def test_gpt2_and_llama_swap_to_their_kplay_activations():
    spec = bench_models.MODELS["gpt2"]
    torch = _needs(spec)
    import kplay.nn as knn

    with torch.device("meta"):
        gpt2, llama = bench_models.build_gpt2(), bench_models.build_llama()
    _, info = bench_models.kplay_variant(gpt2)
    assert set(info["swapped_by_activation"]) == {"gelu(approximate=tanh)"}  # NewGELUActivation
    ours, info = bench_models.kplay_variant(llama)
    assert set(info["swapped_by_activation"]) == {"silu"}
    assert all(isinstance(m, knn.SiLU) for m in ours.modules() if isinstance(m, knn.Activation))
    # each layer's gated MLP is one fused kernel in kplay's variant
    assert info["fused_gated_mlps"] == llama.config.num_hidden_layers
    assert all(isinstance(layer.mlp, knn.GatedMLP) for layer in ours.model.layers)
    assert bench_models.kplay_variant(gpt2)[1]["fused_gated_mlps"] == 0


@pytest.mark.parametrize("activation", bench_ddp.ACTIVATIONS)
def test_ddp_mlp_has_its_activation_and_kplay_swaps_it(activation):
    torch = pytest.importorskip("torch", reason="torch not installed: the DDP model not checked")
    import kplay.nn as knn
    import kplay.torch as kt

    with torch.device("meta"):
        mlp = bench_ddp.build_mlp(torch, activation)
    linears = [m for m in mlp if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == list(zip(bench_ddp.WIDTHS, bench_ddp.WIDTHS[1:]))
    acts = [m for m in mlp if not isinstance(m, torch.nn.Linear)]
    assert acts and all(type(m).__name__.lower() == activation for m in acts)
    ours = kt.replace_activations(mlp)
    assert all(m.activation == activation for m in ours if isinstance(m, knn.Activation))
    assert sum(isinstance(m, knn.Activation) for m in ours) == len(acts)


# ---- kplay.bench_gated ------------------------------------------------------------------------------

def test_bench_gated_options():
    args = bench_gated.parse_args([])
    assert [f"{r}x{c}" for r, c in args.shapes] == list(bench_gated.SHAPES)
    assert args.dtypes == ["bf16", "f32"] and args.directions == ["forward", "backward"]
    picked = bench_gated.parse_args(["--shapes", "2x8,3x4", "--dtypes", "f16", "--directions", "backward"])
    assert picked.shapes == [(2, 8), (3, 4)] and picked.dtypes == ["f16"] and picked.directions == ["backward"]


@pytest.mark.parametrize("argv, words", [(["--shapes", "4x7"], "even"), (["--shapes", "4by8"], "ROWSxCOLS"),
                                         (["--dtypes", "f8"], "unknown dtype 'f8'"),
                                         (["--rounds", "0"], "--rounds must be at least 1")])
def test_bench_gated_refuses_bad_options(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        bench_gated.parse_args(argv)
    assert e.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.skipif(_cuda_present(), reason="a CUDA device is present: the benchmark would run")
def test_bench_gated_refuses_without_cuda(capsys):
    with pytest.raises(SystemExit) as e:
        bench_gated.main(["--shapes", "2x8"])
    assert e.value.code == _bench.NO_CUDA_STATUS
    assert "needs a CUDA device" in capsys.readouterr().err

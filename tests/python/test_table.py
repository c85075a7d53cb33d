"""The torch-name table, built from the registry: activation strings from torch's parameters, and
the mapping both ways (torch only for the check that torch.nn has each class)."""
import math

import pytest

import kplay
from kplay import _core, _table


def test_every_builtin_is_in_the_table_as_the_registry_describes_it():
    registry = _core.builtin_activations()
    assert [e.activation for e in _table.BUILTINS] == [a["name"] for a in registry] == kplay.activations()
    for a in registry:
        e = _table.BY_ACTIVATION[a["name"]]
        assert e.torch_class == a["torch_class"] and e.inplace == a["torch_inplace"]
        assert e.saves_output == a["saves_output"]
        for (name, default), (rname, rdefault, choices) in zip(e.params + e.options, a["parameters"]):
            assert name == rname
            if rdefault is None:
                assert default is _table.REQUIRED
            else:
                assert default == rdefault and default is not _table.REQUIRED
                # A choice's default is one of its words; a number's is a finite float.
                assert default in choices if choices else (isinstance(default, float) and math.isfinite(default))
        assert len(e.params + e.options) == len(a["parameters"])
        if not e.torch_class:
            assert not e.inplace


def test_every_torch_class_maps_both_ways():
    assert _table.TABLE == [e for e in _table.BUILTINS if e.torch_class]
    assert len(_table.BY_CLASS) == len(_table.TABLE)  # no class named twice
    for e in _table.TABLE:
        assert _table.BY_CLASS[e.torch_class] is e
        assert _table.BY_ACTIVATION[e.activation] is e


def test_torch_has_each_class_with_the_registry_parameters():
    torch = pytest.importorskip("torch", reason="torch not installed: torch.nn's classes not checked")
    import inspect

    for e in _table.TABLE:
        cls = getattr(torch.nn, e.torch_class, None)
        assert cls is not None, f"torch.nn has no {e.torch_class}"
        sig = inspect.signature(cls.__init__)
        # A class without its own __init__ (Softsign) shows Module's (*args, **kwargs).
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        names = [n for n, p in sig.parameters.items() if n != "self" and p.kind not in variadic]
        ours = [n for n, _ in e.params] + (["inplace"] if e.inplace else [])
        # torch's first parameters, in order; any after them are optional (Hardtanh's deprecated
        # min_value and max_value).
        assert names[:len(ours)] == ours, e.torch_class
        assert all(sig.parameters[n].default is not inspect.Parameter.empty for n in names[len(ours):]), e.torch_class
        for n, default in e.params:
            torch_default = sig.parameters[n].default
            if default is _table.REQUIRED:
                assert torch_default is inspect.Parameter.empty, (e.torch_class, n)
            else:
                assert torch_default == default, (e.torch_class, n)


def test_kplay_torch_has_every_builtin_and_kplay_nn_every_torch_class():
    torch = pytest.importorskip("torch", reason="torch not installed: kplay.torch and kplay.nn not imported")
    import kplay.nn as knn
    import kplay.torch as kt

    for e in _table.BUILTINS:
        assert callable(getattr(kt, e.activation)) and callable(getattr(kt, e.activation + "_")), e.activation
    # The gated modules and PReLU (a weight tensor) are kplay.nn's own classes, not registry entries.
    gated = {"GLU", "Gated", "GatedMLP"}
    # The softmax family's modules run the row kernel's op (kplay/_torch_softmax.py), not the registry's.
    rows = {"Softmax", "LogSoftmax", "Softmin", "Softmax2d", "softmax_from_torch"}
    assert set(knn.__all__) - {"Activation", "from_torch", "from_foreign", "PReLU"} - gated - rows == \
        set(_table.BY_CLASS)
    assert callable(kt.prelu) and issubclass(knn.PReLU, torch.nn.Module)
    for e in _table.TABLE:
        assert issubclass(getattr(knn, e.torch_class), knn.Activation)


def test_defaults_are_left_out_and_others_are_spelled_out():
    assert _table.activation_string("selu") == "selu"
    assert _table.activation_string("leaky_relu", {"negative_slope": 0.01}) == "leaky_relu"
    assert _table.activation_string("leaky_relu", {"negative_slope": 0.2}) == "leaky_relu(negative_slope=0.2)"
    assert _table.activation_string("gelu", {"approximate": "tanh"}) == "gelu(approximate=tanh)"
    assert _table.activation_string("softplus", {"beta": 2, "threshold": 20.0}) == "softplus(beta=2.0)"
    assert (_table.activation_string("threshold", {"threshold": 0.1, "value": 0})
            == "threshold(threshold=0.1, value=0.0)")


def test_the_accuracy_tier_is_a_keyword_only_parameter_after_torchs():
    e = _table.BY_ACTIVATION["elu"]
    assert [n for n, _ in e.options] == ["accuracy"] and "accuracy" not in dict(e.params)
    assert _table.activation_string("elu", {"accuracy": "torch"}) == "elu(accuracy=torch)"
    assert _table.activation_string("elu", {"alpha": 0.5, "accuracy": "exact"}) == "elu(alpha=0.5)"
    values, inplace = _table.bind(e, (0.5, True), {"accuracy": "torch"})  # torch's positional (alpha, inplace)
    assert values == {"alpha": 0.5, "accuracy": "torch"} and inplace
    assert kplay.supports_saved_output("elu(alpha=0.5, accuracy=torch)") == kplay.supports_saved_output("elu(alpha=0.5)")
    assert not _table.BY_ACTIVATION["relu"].options  # exact at torch's cost already: no tier
    with pytest.raises(kplay.InvalidArgumentError, match="exact, torch"):
        kplay.supports_saved_output("elu(accuracy=fast)")


def test_every_builtin_resolves_at_its_defaults_or_its_required_values():
    for e in _table.BUILTINS:
        values = {n: 0.5 for n, d in e.params if d is _table.REQUIRED}
        kplay.supports_saved_output(_table.activation_string(e.activation, values))  # raises if kplay refuses it


def test_bad_parameters_are_refused():
    with pytest.raises(TypeError, match="threshold"):
        _table.activation_string("threshold", {"value": 0.0})
    with pytest.raises(TypeError, match="alpha"):
        _table.activation_string("selu", {"alpha": 2.0})
    entry = _table.BY_CLASS["LeakyReLU"]
    assert _table.bind(entry, (0.2, True), {}) == ({"negative_slope": 0.2}, True)
    with pytest.raises(TypeError):
        _table.bind(entry, (0.2,), {"negative_slope": 0.3})
    with pytest.raises(TypeError):
        _table.bind(_table.BY_CLASS["GELU"], (), {"inplace": True})

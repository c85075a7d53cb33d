"""The torch-name table: activation strings built from torch's parameters (no torch needed)."""
import pytest

from kplay import _table


def test_all_21_torch_activations_are_mapped_once():
    assert len(_table.TABLE) == 21
    assert len(_table.BY_CLASS) == 21 and len(_table.BY_ACTIVATION) == 21


def test_defaults_are_left_out_and_others_are_spelled_out():
    assert _table.activation_string("selu") == "selu"
    assert _table.activation_string("leaky_relu", {"negative_slope": 0.01}) == "leaky_relu"
    assert _table.activation_string("leaky_relu", {"negative_slope": 0.2}) == "leaky_relu(negative_slope=0.2)"
    assert _table.activation_string("gelu", {"approximate": "tanh"}) == "gelu(approximate=tanh)"
    assert _table.activation_string("softplus", {"beta": 2, "threshold": 20.0}) == "softplus(beta=2.0)"
    assert (_table.activation_string("threshold", {"threshold": 0.1, "value": 0})
            == "threshold(threshold=0.1, value=0.0)")


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

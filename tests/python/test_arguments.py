"""The Python API holds its arguments to the command line's bounds (kplay/limits.hpp): a bad
number, name or path is a kplay.InvalidArgumentError naming it, never a hang, a silent truncation
or nanobind's bare "incompatible function arguments"; autotune picks its backend as `kplay
autotune` does; the database helpers that read create nothing and refuse a file that is not a
kplay database; an empty array is nothing to do."""
import os

import pytest

import kplay
from kplay import _core

LIMITS = _core.limits()


@pytest.mark.parametrize("field, value, words", [
    ("n", -1, "n = -1"),
    ("n", 0, "n = 0"),
    ("n", 2**70, "n = 1180591620717411303424"),
    ("n", LIMITS["max_elements"] + 1, f"{LIMITS['max_elements']}"),
    ("n", 4096.9, "whole number"),
    ("n", True, "bool"),
    ("n", "4096", "whole number"),
    ("warmup", 10**9, f"0 .. {LIMITS['max_launches']}"),
    ("warmup", -1, "warmup = -1"),
    ("repeats", LIMITS["min_repeats"] - 1, "repeats"),
    ("repeats", 2**64, "repeats"),
    ("budget", 0, "budget = 0"),
    ("budget", LIMITS["max_budget"] + 1, "budget"),
    ("device", -1, "device = -1"),
    ("device", 2**31, "device"),
    ("activation", "rel\udcffu", "surrogates not allowed"),
    ("dtype", "f3\ud800", "surrogates not allowed"),
    ("db", "k\0.db", "NUL"),
    ("db", 7, "must be a str"),
    ("resume", 1, "True or False"),
])
def test_autotune_refuses_each_bad_argument_before_any_work(field, value, words):
    args = dict(activation="relu", n=4096, strategy="random", budget=2, warmup=1, repeats=3, db=":memory:")
    args[field] = value
    with pytest.raises(kplay.InvalidArgumentError, match=words) as e:
        kplay.autotune(**args)
    assert str(e.value).startswith(field)


def test_the_cpp_api_holds_the_same_bounds_for_its_own_callers():
    # _core.autotune is the C++ API (kplay::autotune) without the Python checks in front of it.
    with pytest.raises(kplay.InvalidArgumentError, match=f"warmup = 1000000: must be 0 .. {LIMITS['max_launches']}"):
        _core.autotune("relu", 4096, "f32", "forward", "input", "auto", 0, "random", 2, 10**6, 3, True, ":memory:")
    with pytest.raises(kplay.InvalidArgumentError, match="n = 281474976710657"):
        _core.autotune("relu", LIMITS["max_elements"] + 1, "f32", "forward", "input", "auto", 0, "random", 2, 1, 3,
                       True, ":memory:")


def test_names_that_utf8_cannot_carry_are_invalid_arguments():
    for call in (lambda: kplay.forward("sel\udcffu", None), lambda: kplay.backward("sel\udcffu", None, None),
                 lambda: kplay.gated_forward("sil\udcffu", None), lambda: kplay.supports_saved_output("\udcff"),
                 lambda: kplay.db_stats("k\udcff.db"),
                 lambda: kplay.db_import({"format": "kplay-tuning"}, "k\udcff.db")):
        with pytest.raises(kplay.InvalidArgumentError, match="surrogates not allowed"):
            call()


def test_autotune_picks_its_backend_as_the_command_line_does(cl_queue, tmp_db):
    cuda = any(d["backend"] == "cuda" for d in kplay.devices())
    rec = kplay.autotune("relu", 4096, strategy="random", budget=2, warmup=1, repeats=3, db=tmp_db)
    assert rec["backend"] == ("cuda" if cuda else "opencl")
    again = kplay.autotune("relu", 4096, backend="auto", strategy="random", budget=2, warmup=1, repeats=3, db=tmp_db)
    assert again["backend"] == rec["backend"]


def test_reading_helpers_create_nothing_and_refuse_what_is_not_a_database(tmp_path):
    missing = tmp_path / "no" / "such" / "kernels.db"
    assert kplay.db_export(str(missing))["tunings"] == []
    assert kplay.db_stats(str(missing))["tunings"] == 0
    assert not (tmp_path / "no").exists()
    with pytest.raises(kplay.InvalidArgumentError, match="/dev/zero"):
        kplay.db_stats("/dev/zero")
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my thesis, chapter 1\n" * 200)
    before = notes.read_bytes()
    for call in (kplay.db_stats, kplay.db_export, kplay.db_clear):
        with pytest.raises(kplay.InvalidArgumentError, match="left exactly as it is"):
            call(str(notes))
    with pytest.raises(kplay.InvalidArgumentError):
        kplay.db_import({"format": "kplay-tuning", "version": 1, "tunings": []}, str(notes))
    assert notes.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_empty_arrays_are_nothing_to_do(cl_queue):
    np = pytest.importorskip("numpy")
    cla = pytest.importorskip("pyopencl.array")
    for shape in [(0,), (3, 0), (0, 4)]:
        x = cla.empty(cl_queue, shape, np.float32)
        y = kplay.forward("selu", x)
        assert y.shape == shape and y is not x
        assert kplay.forward("selu", x, out=x) is x
        g = kplay.backward("selu", x, x)
        assert g.shape == shape
    x = cla.empty(cl_queue, (0, 8), np.float32)
    assert kplay.gated_forward("silu", x).shape == (0, 4)
    assert kplay.gated_backward("silu", cla.empty(cl_queue, (0, 4), np.float32), x).shape == (0, 8)
    a = cla.empty(cl_queue, (5, 0), np.float32)
    ga, gb = kplay.gated_backward("silu", a, a=a, b=a)
    assert ga.shape == gb.shape == (5, 0)


def test_slope_forms_check_their_seed_and_take_empty_arrays(cl_queue):
    np = pytest.importorskip("numpy")
    cla = pytest.importorskip("pyopencl.array")
    x = cla.to_device(cl_queue, np.linspace(-2, 2, 64).astype(np.float32))
    for seed, words in ((-1, "seed = -1"), (2**64, "seed = 18446744073709551616"), (1.5, "whole number")):
        with pytest.raises(kplay.InvalidArgumentError, match=words):
            kplay.rrelu(x, training=True, seed=seed)
        with pytest.raises(kplay.InvalidArgumentError, match=words):
            kplay.rrelu_backward(x, x, training=True, seed=seed)
    with pytest.raises(kplay.InvalidArgumentError, match="offset = -3"):
        kplay.rrelu(x, training=True, offset=-3)
    empty = cla.empty(cl_queue, (0, 3), np.float32)
    assert kplay.rrelu(empty, training=True, seed=7).shape == (0, 3)
    assert kplay.rrelu_backward(empty, empty, training=True, seed=7).shape == (0, 3)
    assert kplay.prelu(empty, cla.to_device(cl_queue, np.ones(3, np.float32))).shape == (0, 3)

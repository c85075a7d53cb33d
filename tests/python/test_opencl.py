"""End to end on OpenCL (PoCL in CI) through pyopencl arrays: results against numpy in float64,
argument checks with clear exceptions, the pitched 2-D path, the database helpers."""
import math

import pytest

import kplay

np = pytest.importorskip("numpy")
cla = pytest.importorskip("pyopencl.array", reason="pyopencl not installed: OpenCL end-to-end tests skipped")

SELU_L, SELU_A = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717


def ref_forward(name, x):
    x = x.astype(np.float64)
    if name == "selu":
        return np.where(x > 0, SELU_L * x, SELU_L * SELU_A * np.expm1(np.minimum(x, 0)))
    if name == "relu":
        return np.maximum(x, 0)
    raise KeyError(name)


def ref_grad(name, x):
    x = x.astype(np.float64)
    if name == "selu":
        return np.where(x > 0, SELU_L, SELU_L * SELU_A * np.exp(np.minimum(x, 0)))
    return (x > 0).astype(np.float64)


def mixed(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 3).astype(dtype)


TOL = {np.float32: 2e-6, np.float64: 1e-12}


@pytest.mark.parametrize("name", ["selu", "relu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_and_backward_match_numpy(cl_queue, name, dtype):
    xh = mixed(10007, dtype)
    x = cla.to_device(cl_queue, xh)
    y = kplay.forward(name, x)
    want = ref_forward(name, xh)
    assert np.allclose(y.get(), want, rtol=TOL[dtype], atol=TOL[dtype])
    gh = mixed(10007, dtype, seed=1)
    g = cla.to_device(cl_queue, gh)
    want_grad = gh * ref_grad(name, xh)
    got = kplay.backward(name, g, x, saved_output=False)
    assert np.allclose(got.get(), want_grad, rtol=TOL[dtype], atol=TOL[dtype])
    if kplay.supports_saved_output(name):
        got = kplay.backward(name, g, y, saved_output=True)
        assert np.allclose(got.get(), want_grad, rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


def test_in_place_and_out(cl_queue):
    xh = mixed(4096, np.float32)
    x = cla.to_device(cl_queue, xh)
    out = cla.empty_like(x)
    assert kplay.forward("selu", x, out=out) is out
    assert kplay.forward("selu", x, out=x) is x
    assert np.array_equal(x.get(), out.get())


def test_column_view_takes_the_pitched_path(cl_queue):
    big = mixed(64 * 40, np.float32).reshape(64, 40)
    x = cla.to_device(cl_queue, big)
    view = x[:, :13]
    assert view.offset == 0 and view.strides == (160, 4)
    out = cla.empty(cl_queue, (64, 13), np.float32)
    kplay.forward("selu", view, out=out)
    assert np.allclose(out.get(), ref_forward("selu", big[:, :13]), rtol=2e-6, atol=2e-6)
    assert np.array_equal(x.get()[:, 13:], big[:, 13:])  # nothing outside the view written


def test_arguments_are_checked_with_clear_exceptions(cl_queue):
    x = cla.to_device(cl_queue, mixed(100, np.float32))
    with pytest.raises(kplay.InvalidArgumentError, match="float32, float16, bfloat16 or float64"):
        kplay.forward("selu", cla.to_device(cl_queue, np.arange(100, dtype=np.int32)))
    with pytest.raises(kplay.InvalidArgumentError, match="unknown activation"):
        kplay.forward("selux", x)
    with pytest.raises(kplay.InvalidArgumentError, match="float64"):
        kplay.forward("selu", x, out=cla.empty(cl_queue, 100, np.float64))
    with pytest.raises(kplay.InvalidArgumentError, match="shape"):
        kplay.forward("selu", x, out=cla.empty(cl_queue, 99, np.float32))
    with pytest.raises(kplay.InvalidArgumentError, match="offset"):
        kplay.forward("selu", x[3:])
    m = cla.to_device(cl_queue, mixed(60, np.float32).reshape(6, 10))
    with pytest.raises(kplay.InvalidArgumentError, match="contiguous"):
        kplay.forward("selu", m.T, out=cla.empty(cl_queue, (10, 6), np.float32))
    with pytest.raises(kplay.InvalidArgumentError, match="CPU"):  # host memory (DLPack device 1)
        kplay.forward("selu", mixed(100, np.float32))
    with pytest.raises(TypeError):
        kplay.forward("selu", [1.0, 2.0])
    with pytest.raises(TypeError):
        kplay.forward(None, x)


def test_database_helpers_and_autotune(cl_queue, tmp_db):
    assert kplay.db_path(tmp_db) == tmp_db
    name = next(d["name"] for d in kplay.devices() if d["backend"] == "opencl")
    rec = kplay.autotune("relu", 1 << 12, backend="opencl", strategy="random", budget=2, warmup=1, repeats=3,
                         db=tmp_db)
    assert rec["spec"]["activation"] == "relu" and rec["n"] == 4096 and rec["device_name"] == name
    assert rec["best_ms"] > 0 and any(c["ok"] for c in rec["candidates"])
    assert kplay.db_stats(tmp_db)["tunings"] == 1
    doc = kplay.db_export(tmp_db)
    assert doc["format"] == "kplay-tuning" and len(doc["tunings"]) == 1
    kplay.db_clear(tmp_db)
    assert kplay.db_tunings(tmp_db) == []
    assert kplay.db_import(doc, tmp_db) == 1
    assert kplay.db_tunings(tmp_db)[0]["best"] == rec["best"]
    with pytest.raises(kplay.InvalidArgumentError):
        kplay.db_import("{not json", tmp_db)
    with pytest.raises(kplay.InvalidArgumentError):
        kplay.autotune("relu", 0, backend="opencl", db=tmp_db)
    assert math.isfinite(rec["copy_gbps"])


def test_prepared_launcher_gives_the_bits_of_forward_and_backward(cl_queue):
    from kplay import _core

    q = cl_queue.int_ptr
    fwd = _core.Launcher.opencl("selu", _core.F32, False, False, q)
    bwd = _core.Launcher.opencl("selu", _core.F32, True, True, q)
    assert fwd.activation == "selu" and fwd.device == -1
    for n in (1, 4099, 100003):
        x = cla.to_device(cl_queue, mixed(n, np.float32))
        g = cla.to_device(cl_queue, mixed(n, np.float32, seed=1))
        y, gi = cla.empty_like(x), cla.empty_like(x)
        fwd.launch(x.base_data.int_ptr, 0, y.base_data.int_ptr, n, 0)
        assert np.array_equal(y.get(), kplay.forward("selu", x).get())
        bwd.launch(g.base_data.int_ptr, y.base_data.int_ptr, gi.base_data.int_ptr, n, 0, True)
        assert np.array_equal(gi.get(), kplay.backward("selu", g, y, saved_output=True).get())
    with pytest.raises(kplay.InvalidArgumentError, match="n must be >= 0"):
        fwd.launch(x.base_data.int_ptr, 0, y.base_data.int_ptr, -1, 0)
    with pytest.raises(kplay.InvalidArgumentError, match="saved is a null pointer"):
        bwd.launch(g.base_data.int_ptr, 0, gi.base_data.int_ptr, n, 0, True)
    with pytest.raises(kplay.InvalidArgumentError, match="unknown activation"):
        _core.Launcher.opencl("selux", _core.F32, False, False, q)
    with pytest.raises(kplay.UnsupportedError, match="saved output"):
        _core.Launcher.opencl("gelu", _core.F32, True, True, q)


def silu(x):
    x = x.astype(np.float64)
    return x / (1 + np.exp(-x))


def silu_grad(x):
    x = x.astype(np.float64)
    s = 1 / (1 + np.exp(-x))
    return s * (1 + x * (1 - s))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gated_forward_and_backward_match_numpy(cl_queue, dtype):
    rows, d = 37, 101
    xh = mixed(rows * 2 * d, dtype).reshape(rows, 2 * d)
    x = cla.to_device(cl_queue, xh)
    a, b = xh[:, :d].astype(np.float64), xh[:, d:].astype(np.float64)
    y = kplay.gated_forward("silu", x)
    assert y.shape == (rows, d)
    assert np.allclose(y.get(), silu(a) * b, rtol=TOL[dtype], atol=TOL[dtype])
    # The two-tensor form and "gated(silu)" give the same.
    ad, bd = cla.to_device(cl_queue, np.ascontiguousarray(xh[:, :d])), cla.to_device(cl_queue, np.ascontiguousarray(xh[:, d:]))
    y2 = kplay.gated_forward("gated(silu)", a=ad, b=bd)
    assert np.array_equal(y.get(), y2.get())
    gh = mixed(rows * d, dtype, seed=3).reshape(rows, d)
    g = cla.to_device(cl_queue, gh)
    gx = kplay.gated_backward("silu", g, x)
    assert gx.shape == (rows, 2 * d)
    want_a, want_b = gh * silu_grad(a) * b, gh * silu(a)
    assert np.allclose(gx.get()[:, :d], want_a, rtol=TOL[dtype], atol=TOL[dtype])
    assert np.allclose(gx.get()[:, d:], want_b, rtol=TOL[dtype], atol=TOL[dtype])
    ga, gb = kplay.gated_backward("silu", g, a=ad, b=bd)
    assert np.array_equal(ga.get(), gx.get()[:, :d]) and np.array_equal(gb.get(), gx.get()[:, d:])


def test_gated_raw_core_pointers_with_pitches(cl_queue):
    """The core binding takes buffers, element offsets and row pitches, as a framework layer does."""
    rows, d, ld = 9, 50, 130
    xh = mixed(rows * ld, np.float32).reshape(rows, ld)
    x = cla.to_device(cl_queue, xh)
    out = cla.zeros(cl_queue, (rows, 64), np.float32)
    # a = columns 10..59, b = columns 70..119 of each row; out into columns 0..49 of a [rows, 64].
    kplay._core.gated_forward("silu", kplay._core.F32, x.base_data.int_ptr, 10, ld, x.base_data.int_ptr, 70, ld,
                              out.base_data.int_ptr, 0, 64, rows, d, kplay._core.BACKEND_OPENCL, cl_queue.int_ptr)
    got = out.get()
    want = silu(xh[:, 10:60]) * xh[:, 70:120]
    assert np.allclose(got[:, :d], want, rtol=2e-6, atol=2e-6)
    assert np.all(got[:, d:] == 0)


def test_gated_bad_input_raises(cl_queue):
    x = cla.to_device(cl_queue, mixed(4 * 7, np.float32).reshape(4, 7))
    with pytest.raises(kplay.InvalidArgumentError, match="last dimension must be even"):
        kplay.gated_forward("silu", x)
    a = cla.to_device(cl_queue, mixed(4 * 6, np.float32).reshape(4, 6))
    b = cla.to_device(cl_queue, mixed(4 * 5, np.float32).reshape(4, 5))
    with pytest.raises(kplay.InvalidArgumentError, match="shape"):
        kplay.gated_forward("silu", a=a, b=b)
    with pytest.raises(kplay.InvalidArgumentError, match="gate another gated"):
        kplay.gated_forward("gated(gated(silu))", a=a, b=a)
    with pytest.raises(TypeError):
        kplay.gated_forward("silu", x, a=a, b=a)
    with pytest.raises(kplay.UnsupportedError, match="FP8 output is for CUDA only"):
        kplay._core.gated_forward("silu", kplay._core.F32, a.base_data.int_ptr, 0, 6, a.base_data.int_ptr, 3, 6,
                                  b.base_data.int_ptr, 0, 3, 4, 3, kplay._core.BACKEND_OPENCL, cl_queue.int_ptr,
                                  kplay._core.OUT_F8E4M3, 0, 1.0)

"""kplay.softmax, log_softmax and softmin (and their backward) end to end on OpenCL (PoCL in CI)
through pyopencl arrays: results against numpy in float64, the gradient against finite differences
of the forward in float64, torch's edge rows, the layouts read without a copy, and clear refusals."""
import pytest

import kplay

np = pytest.importorskip("numpy")
cla = pytest.importorskip("pyopencl.array", reason="pyopencl not installed: OpenCL end-to-end tests skipped")

FAMILY = {"softmax": (kplay.softmax, kplay.softmax_backward), "log_softmax": (kplay.log_softmax,
                                                                             kplay.log_softmax_backward),
          "softmin": (kplay.softmin, kplay.softmin_backward)}
TOL = {np.float32: 2e-6, np.float64: 1e-13}


def ref(name, x, axis=-1):
    """torch's definitions in float64 (numpy, max-subtracting: the same edges)."""
    v = -x.astype(np.float64) if name == "softmin" else x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(v, axis=axis, keepdims=True)
        e = np.exp(v - m)
        s = np.sum(e, axis=axis, keepdims=True)
        return (v - m - np.log(s)) if name == "log_softmax" else e / s


def ref_grad(name, g, y, axis=-1):
    g, y = g.astype(np.float64), y.astype(np.float64)
    if name == "log_softmax":
        return g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)
    r = y * (g - np.sum(g * y, axis=axis, keepdims=True))
    return -r if name == "softmin" else r


def close(got, want, dtype):
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True)


@pytest.mark.parametrize("name", sorted(FAMILY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_and_backward_match_numpy(cl_queue, name, dtype):
    rng = np.random.default_rng(3)
    xh = (rng.standard_normal((9, 301)) * 4).astype(dtype)
    fwd, bwd = FAMILY[name]
    y = fwd(cla.to_device(cl_queue, xh))
    close(y.get(), ref(name, xh), dtype)
    gh = rng.standard_normal(xh.shape).astype(dtype)
    got = bwd(cla.to_device(cl_queue, gh), y)
    close(got.get(), ref_grad(name, gh, y.get()), dtype)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_backward_is_the_derivative_of_forward_in_float64(cl_queue, name):
    # Central differences of kplay's own forward, one input element at a time (gradcheck's method).
    rng = np.random.default_rng(5)
    xh = rng.standard_normal((3, 7))
    gh = rng.standard_normal(xh.shape)
    fwd, bwd = FAMILY[name]
    y = fwd(cla.to_device(cl_queue, xh))
    analytic = bwd(cla.to_device(cl_queue, gh), y).get()
    numeric = np.zeros_like(xh)
    eps = 1e-6
    for idx in np.ndindex(xh.shape):
        hi, lo = xh.copy(), xh.copy()
        hi[idx] += eps
        lo[idx] -= eps
        f_hi = fwd(cla.to_device(cl_queue, hi)).get()
        f_lo = fwd(cla.to_device(cl_queue, lo)).get()
        numeric[idx] = np.sum(gh * (f_hi - f_lo)) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_torch_accuracy_tier_in_float32_alone(cl_queue):
    # accuracy="torch": torch's formulas in float (float32; the bound, docs/accuracy.md, is far
    # inside these tolerances), log_softmax's backward too, the others' the exact kernel's
    rng = np.random.default_rng(11)
    xh = (rng.standard_normal((5, 1001)) * 4).astype(np.float32)
    gh = rng.standard_normal(xh.shape).astype(np.float32)
    for name, (fwd, bwd) in FAMILY.items():
        y = fwd(cla.to_device(cl_queue, xh), accuracy="torch")
        np.testing.assert_allclose(y.get(), ref(name, xh), rtol=1e-5, atol=1e-5)
        got = bwd(cla.to_device(cl_queue, gh), y, accuracy="torch").get()
        np.testing.assert_allclose(got, ref_grad(name, gh, y.get()), rtol=1e-5, atol=1e-5)
        if name != "log_softmax":
            np.testing.assert_array_equal(got, bwd(cla.to_device(cl_queue, gh), y).get())
        with pytest.raises(kplay.InvalidArgumentError, match="float32"):
            fwd(cla.to_device(cl_queue, xh.astype(np.float64)), accuracy="torch")
        with pytest.raises(kplay.InvalidArgumentError, match="accuracy must be"):
            fwd(cla.to_device(cl_queue, xh), accuracy="fast")


def test_edge_rows_as_torch(cl_queue):
    inf, nan = np.inf, np.nan
    rows = np.array([[1.0, inf, 2.0, 3.0],      # +inf: the whole row NaN (inf - inf)
                     [1.0, nan, 2.0, 3.0],      # NaN: the whole row NaN
                     [-inf, -inf, -inf, -inf],  # every element -inf: NaN
                     [-inf, 0.0, -inf, 1.0],    # some -inf: 0 there (log_softmax: -inf)
                     [700.0, -700.0, 0.0, 1e-300]])
    for name, (fwd, _) in FAMILY.items():
        got = fwd(cla.to_device(cl_queue, rows)).get()
        close(got, ref(name, rows), np.float64)
    assert np.isnan(kplay.softmax(cla.to_device(cl_queue, rows)).get()[:3]).all()


def test_empty_arrays_and_rows_of_one_element(cl_queue):
    for shape in [(0, 5), (4, 0), (0,)]:
        x = cla.to_device(cl_queue, np.zeros(shape, np.float32))
        assert kplay.softmax(x).shape == shape
    one = cla.to_device(cl_queue, np.array([[3.0], [-2.0], [np.inf]], np.float32))
    close(kplay.softmax(one).get(), ref("softmax", one.get()), np.float32)  # 1, 1, NaN
    close(kplay.log_softmax(one).get(), ref("log_softmax", one.get()), np.float32)


def test_dim_other_than_last_without_a_copy(cl_queue):
    # A transposed matrix has unit stride along its first dimension: rows of pitch 11 along dim 0.
    rng = np.random.default_rng(8)
    base = rng.standard_normal((6, 11))
    xt = cla.to_device(cl_queue, base).transpose()  # shape (11, 6), strides (1, 11)
    got = kplay.softmax(xt, dim=0)
    close(got.get(), ref("softmax", base.T, axis=0), np.float64)
    # A contiguous array along a dim that is not the last: strided rows, the output contiguous like
    # it; forward and backward of every member, a [N, C, H, W] image over its channels (Softmax2d).
    img = rng.standard_normal((3, 7, 5, 4)) * 3
    g = rng.standard_normal(img.shape)
    for name, (fwd, bwd) in FAMILY.items():
        for dim in (1, 0, 2):
            y = fwd(cla.to_device(cl_queue, img), dim=dim)
            assert y.flags.c_contiguous
            close(y.get(), ref(name, img, axis=dim), np.float64)
            gi = bwd(cla.to_device(cl_queue, g), y, dim=dim)
            assert gi.flags.c_contiguous
            close(gi.get(), ref_grad(name, g, y.get(), axis=dim), np.float64)
    # Neither layout (the dims after dim not contiguous): refused, with what to do.
    gapped = cla.to_device(cl_queue, img)[:, :, :, ::2]
    with pytest.raises(kplay.InvalidArgumentError, match="cannot be read as rows along dim 1"):
        kplay.softmax(gapped, dim=1)


def test_bad_arguments_raise(cl_queue):
    x = cla.to_device(cl_queue, np.ones((4, 8), np.float32))
    with pytest.raises(kplay.InvalidArgumentError, match="out of range"):
        kplay.softmax(x, dim=2)
    with pytest.raises(TypeError):
        kplay.softmax(x, dim=1.0)
    with pytest.raises(kplay.InvalidArgumentError, match="overlaps"):
        kplay.softmax(x, out=x)  # no in place: a row is written after all of it is read
    with pytest.raises(kplay.InvalidArgumentError, match="shape"):
        kplay.softmax_backward(x, cla.to_device(cl_queue, np.ones((4, 9), np.float32)))
    with pytest.raises(kplay.InvalidArgumentError, match="row activation"):
        kplay.forward("softmax", x)  # the element-wise call refuses the family, naming the row one

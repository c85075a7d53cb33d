"""Shared fixtures: an OpenCL queue (PoCL in CI) through pyopencl, skipped visibly without one; a
temporary database; kplay.torch's compile mode, restored after the test."""
import pytest


@pytest.fixture(scope="session")
def cl_queue():
    cl = pytest.importorskip("pyopencl", reason="pyopencl not installed: OpenCL end-to-end tests skipped")
    pytest.importorskip("numpy")
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        pytest.skip(f"no OpenCL platform: {e}")
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        pytest.skip("no OpenCL device")
    ctx = cl.Context([devices[0]])
    return cl.CommandQueue(ctx)


@pytest.fixture()
def tmp_db(tmp_path):
    return str(tmp_path / "kernels.db")


@pytest.fixture
def compile_mode():
    """kplay.torch.set_compile_mode for the test; the mode before it and a fresh dynamo after."""
    torch = pytest.importorskip("torch")
    import kplay.torch as kt

    before = kt.compile_mode()
    yield kt.set_compile_mode
    kt.set_compile_mode(before)
    torch._dynamo.reset()

"""The package imports without torch or a GPU and says clearly what it has."""
import subprocess
import sys

import kplay


def test_import_needs_neither_torch_nor_a_gpu():
    code = "import sys, kplay; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_version_and_activations():
    assert kplay.__version__.count(".") == 2
    names = kplay.activations()
    assert "selu" in names and "relu" in names
    assert kplay.supports_saved_output("selu")


def test_the_shipped_tunings_are_installed_where_the_extension_looks():
    # kplay/_core.so reads the tunings shipped per device class from kplay/tunings (docs/design.md,
    # "Shipped tunings"); a missing folder would cost every process a warning.
    import os
    from kplay import _core
    folder = os.path.join(os.path.dirname(_core.__file__), "tunings")
    assert os.path.isdir(folder), folder
    assert os.path.isfile(os.path.join(folder, "README.md"))


def test_unknown_activation_is_a_value_error_with_kplays_message():
    try:
        kplay.supports_saved_output("no_such_act")
    except kplay.InvalidArgumentError as e:
        assert isinstance(e, ValueError) and isinstance(e, kplay.Error)
        assert "no_such_act" in str(e) and "selu" in str(e)
    else:
        raise AssertionError("unknown activation accepted")


def test_backends_report_every_backend_with_a_status():
    reports = {b["backend"]: b for b in kplay.backends()}
    assert set(reports) == {"cuda", "opencl"}
    for b in reports.values():
        assert b["status"]
        assert b["available"] or not b["devices"]
    assert len(kplay.devices()) == sum(len(b["devices"]) for b in reports.values())


def test_no_cuda_device_is_a_clear_exception():
    cuda = next(b for b in kplay.backends() if b["backend"] == "cuda")
    if cuda["available"]:
        import pytest

        pytest.skip("this machine has CUDA")
    try:
        kplay._core.forward("selu", kplay._core.F32, 4096, 8192, 16, kplay._core.BACKEND_CUDA, 0)
    except kplay.NoDeviceError as e:
        assert "CUDA" in str(e)
    else:
        raise AssertionError("a CUDA launch without CUDA did not raise")


def test_launcher_refuses_bad_activations_before_looking_for_a_device():
    import pytest

    with pytest.raises(kplay.InvalidArgumentError, match="unknown activation 'no_such_act'"):
        kplay._core.Launcher.cuda("no_such_act", kplay._core.F32, False, False, 0)
    with pytest.raises(kplay.UnsupportedError, match="saved output"):
        kplay._core.Launcher.cuda("gelu", kplay._core.F32, True, True, 0)
    with pytest.raises(kplay.InvalidArgumentError, match="dtype code"):
        kplay._core.Launcher.cuda("selu", 99, False, False, 0)
    cuda = next(b for b in kplay.backends() if b["backend"] == "cuda")
    if not cuda["available"]:
        with pytest.raises(kplay.NoDeviceError, match="CUDA"):
            kplay._core.Launcher.cuda("selu", kplay._core.F32, False, False, 0)

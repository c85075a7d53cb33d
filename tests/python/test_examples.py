"""examples/*.py where what they need is missing: one line on stderr saying what, exit status 3
(examples/_needs.py), never a traceback. Each example runs in a subprocess as a user would start
it: once in this environment as it is, and once with stand-in torch and kplay packages whose
torch sees no CUDA GPU, so the GPU check is exercised where torch is not installed too."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted(p for p in (pathlib.Path(__file__).parents[2] / "examples").glob("*.py")
                  if not p.name.startswith("_"))


def run(example, env=None):
    return subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300, env=env)


def check_one_line(r, expected):
    assert r.returncode == 3, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "nothing run: " + expected in lines[0]
    assert "Traceback" not in r.stderr


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_without_its_needs_says_what_is_missing(example):
    if importlib.util.find_spec("torch") is None:
        check_one_line(run(example), "needs the Python package torch")
        return
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is here: the example would run for real (tools/gpu_check.sh runs them)")
    if importlib.util.find_spec("kplay") is None:
        check_one_line(run(example), "needs the Python package kplay")
        return
    check_one_line(run(example), "needs a CUDA GPU")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_without_a_gpu_says_so(example, tmp_path, monkeypatch):
    # Stand-ins ahead of site-packages: a torch that sees no GPU, and an empty kplay.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "__version__ = 'stand-in'\n"
        "class cuda:\n"
        "    @staticmethod\n"
        "    def is_available():\n"
        "        return False\n")
    (tmp_path / "kplay").mkdir()
    (tmp_path / "kplay" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    check_one_line(run(example, dict(os.environ)), "needs a CUDA GPU")

"""The `kplay` command a pip install puts on PATH (pyproject.toml's entry point, kplay/_cli.py):
it runs the executable installed inside the package, which finds the shipped tunings there."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import kplay
from kplay import _cli


def _installed_command():
    command = shutil.which("kplay", path=os.path.dirname(sys.executable))
    if command is None or not os.access(_cli.executable(), os.X_OK):
        pytest.skip("kplay is not pip-installed in this Python's environment (pip install . installs the command)")
    return command


def test_the_command_runs_the_packaged_executable_and_finds_the_shipped_tunings():
    command = _installed_command()
    env = {k: v for k, v in os.environ.items() if k != "KPLAY_SHIPPED_TUNINGS"}
    run = subprocess.run([command, "db", "list", "--layer", "shipped"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "no shipped tunings found" not in run.stderr
    # The device of a record in the package's own tunings is listed, from the shipped layer.
    tunings = os.path.join(os.path.dirname(kplay.__file__), "tunings")
    name = sorted(f for f in os.listdir(tunings) if f.endswith(".json"))[0]
    with open(os.path.join(tunings, name)) as f:
        device = json.load(f)["tunings"][0]["device_name"]
    rows = [line for line in run.stdout.splitlines() if device in line]
    assert rows and all(" shipped " in f" {row} " for row in rows), run.stdout

    bad = subprocess.run([command, "no-such-command"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and bad.stderr


def test_a_missing_executable_is_a_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(_cli, "executable", lambda: str(tmp_path / "kplay"))
    assert _cli.main() == 2
    assert "the kplay executable is missing" in capsys.readouterr().err

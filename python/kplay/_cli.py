"""The `kplay` command of a pip install: pyproject.toml's entry point, which replaces this Python
process with the kplay executable installed inside the package (python/CMakeLists.txt). The
executable lives there, not in the scripts directory, because it finds the shipped tunings
(kplay/tunings) relative to where it runs, and an install's bin/ has no fixed path to
site-packages.
"""
from __future__ import annotations

import os
import sys


def executable() -> str:
    """The path of the installed kplay executable."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "kplay")


def main() -> int:
    exe = executable()
    if not os.access(exe, os.X_OK):
        print(f"kplay: the kplay executable is missing from this install ({exe}); reinstall kplay with "
              "pip install .", file=sys.stderr)
        return 2
    os.execv(exe, ["kplay", *sys.argv[1:]])  # returns only by raising OSError
    return 2  # pragma: no cover

"""What this fastbatch was built with: ``_build_info.json``, written by CMakeLists.txt beside the
extension (the MuJoCo version its MuJoCo envs were compiled against, whether the rollout op was
built, the compiler, the sanitizers). ``fastbatch.mujoco`` checks the installed MuJoCo against it;
``python -m fastbatch --info`` prints it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["build_info", "package_dir"]


def package_dir() -> Path:
    """The installed package's folder: where the extension and the prebuilt libraries lie."""
    return Path(__file__).resolve().parent


def build_info() -> dict[str, Any]:
    """The build's facts, or {} in a source tree that was never built (no file)."""
    path = package_dir() / "_build_info.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}

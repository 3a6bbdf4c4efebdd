"""``python -m fastbatch --info``: what a bug report needs, in one paste.

The versions (fastbatch, Python, the packages fastbatch works with), the CPU and which of the
features fastbatch dispatches on it uses, what this fastbatch was built with, and which native
libraries the process loaded, from where (read from ``/proc/self/maps`` after loading the MuJoCo
envs and the env packages, so the paths are the ones the loader really picked).
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

from fastbatch import _core, cpu, env_packages, mujoco
from fastbatch._build_info import build_info, package_dir
from fastbatch._compile import package_version

__all__ = ["report"]

# Distributions whose versions matter to fastbatch's behaviour, in the order printed.
PACKAGES = (
    "numpy",
    "gymnasium",
    "tensorflow",
    "mujoco-core",
    "mujoco",
    "ale-py",
    "fastbatch-atari",
    "pettingzoo",
    "stable-baselines3",
)
# Parts of a mapped file's name that mark a library worth naming.
LIBRARY_MARKS = ("fastbatch", "_core.", "mujoco", "ale", "tensorflow_framework")


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _features() -> list[str]:
    lines = []
    flags, off = cpu.flags(), cpu.disabled()
    for feature, where in cpu.DISPATCHED.items():
        if feature not in flags:
            state = "absent"
        elif cpu.has(feature):
            state = "used"
        else:
            state = f"present, switched off ({cpu.DISABLE_VARIABLE}={','.join(sorted(off))})"
        lines.append(f"  {feature}: {state}: {where}")
    return lines


def _loaded_libraries() -> list[str]:
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(maxsplit=5)[-1].strip() for line in f if "/" in line}
    except OSError:
        return ["  (no /proc/self/maps: cannot tell)"]
    names = sorted(p for p in paths if p.endswith(".so") or ".so." in p)
    return [f"  {p}" for p in names if any(mark in os.path.basename(p) for mark in LIBRARY_MARKS)]


def report() -> str:
    """The report, as text (loads the MuJoCo envs and env packages it can, to name them)."""
    info = build_info()
    lines = [
        f"fastbatch {package_version()} at {package_dir()}",
        f"python {platform.python_version()} ({sys.executable}) on {platform.platform()}",
        f"cpu: {cpu.model()}, {os.cpu_count()} logical CPUs; dispatched features:",
        *_features(),
        f"built with: {info.get('compiler', 'unknown compiler')}; MuJoCo envs for mujoco "
        f"{info.get('mujoco') or '(none: not built)'}; rollout op: "
        f"{'yes' if info.get('tf_op') else 'no'}"
        + (f"; sanitizers: {info['sanitize']}" if info.get("sanitize") else ""),
        "packages: " + ", ".join(f"{name} {_version(name)}" for name in PACKAGES),
    ]
    try:
        found = mujoco.installed()
        lines.append(f"mujoco library: {found.library} ({found.distribution} {found.version})")
        mujoco.register()
        lines.append(f"MuJoCo envs: {mujoco.library_path()}")
    except mujoco.MujocoUnavailableError as exc:
        lines.append(f"MuJoCo envs: unavailable: {exc}")
    for entry in env_packages.native_packages():
        try:  # registered as a make() of one of its ids would
            family = entry.load()
            prefixes = tuple(getattr(family, "ID_PREFIXES", ()))
            exact = tuple(getattr(family, "ENV_IDS", ()))
            for env_id in (*prefixes, *exact)[:1]:
                env_packages.register_native_package_for(env_id)
            ids = ", ".join([f"{p}..." for p in prefixes] + list(exact))
            lines.append(f"env family {entry.name}: {entry.value} (ids {ids})")
        except Exception as exc:  # a broken package is what the report is for
            lines.append(f"env family {entry.name}: {entry.value} fails to load: {exc}")
    lines.append(f"extension: {_core.__file__}")
    lines.append("native libraries loaded:")
    lines += _loaded_libraries()
    op = package_dir() / "fastbatch_tf_op.so"
    where = op if op.is_file() else "(not in this install)"
    lines.append(
        f"rollout op: {where} (loaded by the trainer, not here: TensorFlow is not imported)"
    )
    return "\n".join(lines)

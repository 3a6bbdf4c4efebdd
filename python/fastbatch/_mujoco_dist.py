"""Where the installed MuJoCo is: the distribution that ships ``libmujoco`` and its C headers,
its version, and their paths.

Since MuJoCo 4.0 that is ``mujoco-core`` (``mujoco`` became a meta package over it, and MuJoCo's
docs tell headless users to install ``mujoco-core`` alone); before 4.0 it was ``mujoco`` itself.
Both install the ``mujoco/`` folder of site-packages, so one lookup serves either. The rule is
written once, here, for fastbatch's build (CMakeLists.txt runs this file as a script, before
fastbatch is importable) and for its run time (``fastbatch.mujoco``): standard library only.
"""

from __future__ import annotations

import importlib.metadata
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DISTRIBUTIONS", "MujocoInstall", "find"]

# Looked up in this order: the library's own package first, then the pre-4.0 all-in-one.
DISTRIBUTIONS = ("mujoco-core", "mujoco")


@dataclass(frozen=True)
class MujocoInstall:
    distribution: str  # "mujoco-core" or "mujoco"
    version: str
    include: Path  # holds mujoco/mujoco.h
    library: Path  # libmujoco.so.<version>


def find() -> MujocoInstall | None:
    """The installed MuJoCo library, or None when neither distribution is installed.

    Raises FileNotFoundError (its message says what to reinstall) when a distribution is
    installed but its library or headers are missing."""
    for name in DISTRIBUTIONS:
        try:  # the installed distribution, not whatever `mujoco` module sys.path finds first
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        root = Path(dist.locate_file("mujoco"))
        libraries = sorted(root.glob("libmujoco.so*"))
        include = root / "include"
        if libraries and (include / "mujoco" / "mujoco.h").is_file():
            exact = [p for p in libraries if p.name == f"libmujoco.so.{dist.version}"]
            return MujocoInstall(name, dist.version, include, (exact or libraries)[-1])
        if name == "mujoco" and dist.version.split(".")[0].isdigit():
            if int(dist.version.split(".")[0]) >= 4:  # the meta package, without mujoco-core
                continue
        raise FileNotFoundError(
            f"the {name} {dist.version} package at {root} ships no libmujoco.so and C headers; "
            f"reinstall it: pip install --force-reinstall '{name}=={dist.version}'"
        )
    return None


def _main() -> int:
    """For CMake: prints "<version>;<include>;<library>", or a reason on stderr and exits 1."""
    try:
        found = find()
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    if found is None:
        print(f"none of {', '.join(DISTRIBUTIONS)} is installed", file=sys.stderr)
        return 1
    print(f"{found.version};{found.include};{found.library}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())

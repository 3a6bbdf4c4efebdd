"""fastbatch's native MuJoCo envs: gymnasium 1.x's v5 envs in C++, prebuilt with the wheel.

The envs (``ENV_IDS``) are one plugin library on the public env contract,
``fastbatch/fastbatch_mujoco.so``, compiled with fastbatch against the mujoco-core version that
the ``mujoco`` extra pins (``_build_info.json`` records it) and linked to that wheel's
``libmujoco``: no compiler is needed at run time. Either ``mujoco-core`` alone or the ``mujoco``
meta package over it will do. This module is a native env family like any other: fastbatch's
own ``pyproject.toml`` names it in the ``fastbatch.envs`` entry points (`fastbatch.env_packages`
has the protocol: ``ENV_IDS``, `register`, `native_kwargs`), so ``fastbatch.make("HalfCheetah-v5",
...)`` calls :func:`register`, which loads and registers the ids, and the native envs replace the
process backend for these ids whenever MuJoCo is installed (``backend="process"`` still runs
gymnasium's own envs). gymnasium's XML assets are found at run time.

Another MuJoCo than the one built against is refused with both versions named, unless the user
opts in to compiling the envs on first use against the installed one: ``FASTBATCH_MUJOCO_BUILD=1``
(needs a C++ compiler; :func:`build` caches the library under
``$XDG_CACHE_HOME/fastbatch/mujoco-<mujoco>-fb-<fastbatch>-<hash>/``, written atomically;
``FASTBATCH_MUJOCO_CXXFLAGS`` adds compiler flags, part of the hash). A fastbatch built without
MuJoCo (Python 3.10) compiles only that way.

Every failure is a :class:`MujocoUnavailableError` that says what to install or set, never a
crash: no MuJoCo, a MuJoCo of another version, no compiler or a failed compile (with the
compiler's output).

Kwargs are gymnasium's v5 kwargs, checked as typed params (``ValueError``/``TypeError`` naming
the param). A ``(low, high)`` range kwarg such as ``healthy_z_range`` becomes two params,
``healthy_z_range_low`` and ``healthy_z_range_high``; ``make`` accepts either spelling.
``xml_file``, ``default_camera_config``, ``visual_options`` and ``max_geom`` are not supported.

Frames: every env draws itself in the pool's threads over EGL (``fastbatch/mujoco_render.h``,
``src/cpp/mujoco/frames.h``), as gymnasium's renderer draws its twin in ``rgb_array`` mode:
``width`` and ``height`` (480); ``camera`` or gymnasium's ``camera_id`` (-1, the default: the
free camera, placed as gymnasium places it at the first frame) or ``camera_name`` (e.g.
``"track"``, which follows the body; the default before gymnasium 1.4, and with pixels); and
``visuals="match"`` (gymnasium's frame pixel for pixel on the same renderer) or
``"fast"`` (no shadows, reflections, skybox or multisampling). ``render_mode="rgb_array"`` gives
``render()`` those frames; ``pixels=True`` makes them the observation, uint8 ``(height, width,
3)``, with the defaults `PIXEL_DEFAULTS`.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import numbers
import os
import shlex
import threading
from pathlib import Path
from typing import Any

from fastbatch import _core, _gl, _mujoco_dist
from fastbatch._build_info import build_info, package_dir
from fastbatch._compile import compile_shared, package_version
from fastbatch.plugins import register_native_env
from fastbatch.registry import NativeEnvSpec

__all__ = [
    "ENV_IDS",
    "MIN_MUJOCO",
    "PIXEL_DEFAULTS",
    "MujocoUnavailableError",
    "build",
    "compile_family",
    "drop_default_timer",
    "family_sources",
    "installed",
    "isolate_gl",
    "library_path",
    "native_kwargs",
    "register",
]

ENV_IDS = (
    "Ant-v5",
    "HalfCheetah-v5",
    "Hopper-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "InvertedDoublePendulum-v5",
    "InvertedPendulum-v5",
    "Pusher-v5",
    "Reacher-v5",
    "Swimmer-v5",
    "Walker2d-v5",
)
"""The ids of the native MuJoCo envs: gymnasium's v5 ids (also ``fastbatch/<id>``)."""
PIXEL_DEFAULTS = {"height": 84, "width": 84, "visuals": "fast"}
"""What ``pixels=True`` draws unless told otherwise: 84x84 frames with ``visuals="fast"``, from
the model's "track" camera (which follows the body) where it has one, else the free camera."""
MIN_MUJOCO = (3, 0)  # the oldest MuJoCo the opt-in compile on first use takes
_EXTRA = "pip install 'fastbatch[mujoco]'"
_OPT_IN = "FASTBATCH_MUJOCO_BUILD"  # "1": compile the envs against the installed MuJoCo
_LOCK = threading.Lock()
_registered: list[str] = []
_library: list[ctypes.CDLL] = []  # the loaded env library, once registered


class MujocoUnavailableError(ImportError):
    """The native MuJoCo envs cannot run here: mujoco is missing, too old, or not the version
    they were built against (the message names the versions and the extra to install)."""


def family_sources(folder: str, source_folder: str) -> Path:
    """The C++ sources of a MuJoCo env family: installed beside the extension as `folder`
    (``mujoco_src``), or ``src/cpp/<source_folder>`` of a source tree."""
    installed = Path(_core.__file__).parent / folder
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "src" / "cpp" / source_folder


def isolate_gl() -> str:
    """Loads Mesa's EGL so that drawing MuJoCo frames survives TensorFlow in the same process
    (`fastbatch._gl`); `register` calls it. Call it yourself before rendering gymnasium's or
    dm_control's MuJoCo envs in a process that imports tensorflow, if fastbatch's envs are not
    made first. Returns what it did ("isolated", "not needed (...)", "off (...)",
    "too late (...)")."""
    return _gl.isolate()


def installed() -> _mujoco_dist.MujocoInstall:
    """The installed MuJoCo library (mujoco-core's, or a pre-4.0 mujoco's).

    Returns:
        Its distribution, version, headers and libmujoco.

    Raises:
        MujocoUnavailableError: There is none (the message names what to install).
    """
    try:
        found = _mujoco_dist.find()
    except FileNotFoundError as exc:
        raise MujocoUnavailableError(str(exc)) from None
    if found is None:
        built = build_info().get("mujoco")
        pin = f"mujoco-core=={built}" if built else "mujoco-core"
        raise MujocoUnavailableError(
            f"fastbatch's native MuJoCo envs need MuJoCo, which is not installed: {_EXTRA}, "
            f"or pip install '{pin}' (or the mujoco package, which installs it)"
        )
    return found


def _mujoco() -> tuple[str, Path, Path]:
    """(version, include directory, libmujoco path) of the installed MuJoCo."""
    found = installed()
    return found.version, found.include, found.library


def library_path(found: _mujoco_dist.MujocoInstall | None = None) -> Path:
    """The MuJoCo env library to load for the installed MuJoCo.

    Args:
        found: The installed MuJoCo (`installed`), looked up when None.

    Returns:
        The prebuilt library when it was built for this version, else (with
        FASTBATCH_MUJOCO_BUILD=1) one compiled on first use (`build`).

    Raises:
        MujocoUnavailableError: Neither: the message names both versions and both ways out.
    """
    found = found or installed()
    built = build_info().get("mujoco")
    prebuilt = package_dir() / "fastbatch_mujoco.so"
    if os.environ.get(_OPT_IN) == "1":
        return build()
    if built == found.version and prebuilt.is_file():
        return prebuilt
    compile_hint = (
        f"or set {_OPT_IN}=1 to compile them against mujoco {found.version} on first use "
        f"(needs a C++ compiler)"
    )
    if built is None or not prebuilt.is_file():
        raise MujocoUnavailableError(
            f"this fastbatch was built without its MuJoCo envs (no mujoco-core at build time); "
            f"{compile_hint}"
        )
    raise MujocoUnavailableError(
        f"mujoco {found.version} is installed ({found.distribution}), but this fastbatch's MuJoCo "
        f"envs were built for mujoco {built}: pip install 'mujoco-core=={built}' "
        f"(what {_EXTRA} installs), {compile_hint}"
    )


def _assets() -> Path:
    dist = importlib.metadata.distribution("gymnasium")
    assets = Path(dist.locate_file("gymnasium")) / "envs" / "mujoco" / "assets"
    if not (assets / "half_cheetah.xml").is_file():
        raise MujocoUnavailableError(f"gymnasium's MuJoCo assets are missing ({assets}): {_EXTRA}")
    return assets


def _cache_dir(version: str, inputs: list[Path], salt: str, flags: list[str]) -> Path:
    digest = hashlib.sha256("\0".join([salt, *flags]).encode())
    for path in inputs:
        digest.update(path.name.encode() + path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    name = f"mujoco-{version}-fb-{package_version()}-{digest.hexdigest()[:12]}"
    return base / "fastbatch" / name


def _compilable_mujoco() -> tuple[str, Path, Path]:
    """`_mujoco`, refusing a MuJoCo older than the opt-in compile takes."""
    version, include, library = _mujoco()
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if parts < MIN_MUJOCO:
        raise MujocoUnavailableError(
            f"fastbatch's native MuJoCo envs need mujoco >= {'.'.join(map(str, MIN_MUJOCO))}, "
            f"but mujoco {version} is installed: {_EXTRA} --upgrade"
        )
    return version, include, library


def compile_family(library_name: str, sources: Path, salt: str = "") -> Path:
    """Compiles a MuJoCo env family's ``plugin.cc`` (with the headers beside it) against the
    installed MuJoCo, unless a library for the same inputs is cached.

    The opt-in path (FASTBATCH_MUJOCO_BUILD=1) of every family on MuJoCo; the wheel's own
    libraries are prebuilt. ``FASTBATCH_MUJOCO_CXXFLAGS`` adds compiler flags.

    Args:
        library_name: The library's file name, e.g. ``fastbatch_mujoco.so``.
        sources: The family's C++ folder (`family_sources`).
        salt: Anything else the cached library depends on (part of the cache key).

    Returns:
        The path of the library, cached under ``$XDG_CACHE_HOME/fastbatch/``.

    Raises:
        MujocoUnavailableError: No usable MuJoCo (none, or older than 3.0), no compiler, or the
            compile failed (with the compiler's message).
    """
    version, include, library = _compilable_mujoco()
    headers = Path(_core.__file__).parent / "include"
    inputs = [*sorted(sources.glob("*.h")), sources / "plugin.cc"]
    inputs += sorted((headers / "fastbatch").glob("*.h"))
    flags = shlex.split(os.environ.get("FASTBATCH_MUJOCO_CXXFLAGS", ""))
    target = _cache_dir(version, inputs, salt, flags) / library_name
    try:
        return compile_shared(
            target,
            [
                "-ffp-contract=off",  # the reference's float64 arithmetic, operation by operation
                "-fno-fast-math",
                f"-I{headers}",
                f"-I{include}",
                *flags,
                str(sources / "plugin.cc"),
                f"-L{library.parent}",
                f"-l:{library.name}",
                f"-Wl,-rpath,{library.parent}",
            ],
            f"{library_name} against mujoco {version} ({_OPT_IN}=1)",
        )
    except RuntimeError as exc:
        raise MujocoUnavailableError(str(exc)) from exc


def build() -> Path:
    """Compiles the MuJoCo env library against the installed MuJoCo if it is not cached.

    The opt-in path (FASTBATCH_MUJOCO_BUILD=1, `compile_family`): the wheel's own is
    prebuilt. ``FASTBATCH_MUJOCO_CXXFLAGS`` adds compiler flags.

    Returns:
        The path of the library, cached under ``$XDG_CACHE_HOME/fastbatch/``.

    Raises:
        MujocoUnavailableError: No usable MuJoCo (none, or older than 3.0), gymnasium's assets
            missing, no compiler, or the compile failed (with the compiler's message).
    """
    _compilable_mujoco()  # an old MuJoCo is refused before gymnasium's assets are looked for
    assets = _assets()
    return compile_family(
        "fastbatch_mujoco.so", family_sources("mujoco_src", "mujoco"), salt=str(assets)
    )


def _version_name(code: int) -> str:
    return f"{code // 1000000}.{code // 1000 % 1000}.{code % 1000}"


def register() -> list[str]:
    """Builds (if needed), loads and registers the native MuJoCo envs; returns their ids.

    Idempotent and thread-safe; ``fastbatch.make`` calls it for a MuJoCo id. Afterwards
    ``fastbatch.make``, ``gymnasium.make("fastbatch/<id>")`` and ``fastbatch.list_envs()``
    know them. It also calls `drop_default_timer` and `isolate_gl`.

    Returns:
        `ENV_IDS`, as a list.

    Raises:
        MujocoUnavailableError: MuJoCo is missing or of another version than the library was
            built against (the message says what to install or set), or the opt-in compile
            failed.
    """
    isolate_gl()  # before anything here can load Mesa
    with _LOCK:
        if not _registered:
            found = installed()
            version = found.version
            path = library_path(found)
            # libmujoco by its path first: the env library's DT_NEEDED then binds to it by
            # soname, wherever mujoco-core lies relative to fastbatch.
            ctypes.CDLL(str(found.library))
            library = ctypes.CDLL(str(path))
            built = _version_name(library.fastbatch_mujoco_header_version())
            if built != version:
                raise MujocoUnavailableError(
                    f"fastbatch's MuJoCo envs at {path} were built against mujoco {built}, but "
                    f"mujoco {version} is installed: {_EXTRA} (or delete that file to rebuild)"
                )
            library.fastbatch_mujoco_set_assets(str(_assets()).encode())
            for env_id in ENV_IDS:  # each draws itself (frames.h)
                register_native_env(env_id, path, replace=True)
            _library.append(library)
            _registered.extend(ENV_IDS)
        drop_default_timer()
        return list(_registered)


def drop_default_timer() -> bool:
    """Removes the profiling clock that importing the mujoco Python package installs.

    MuJoCo calls one process-wide timer callback (``mjcb_time``) around every stage of
    ``mj_step``, only to fill ``MjData.timer``; the mujoco package sets it to a clock on import,
    and removing it made these envs' steps up to 1.58x faster (bench/README.md). ``fastbatch.make``
    calls this for every native MuJoCo env, after importing mujoco (so a later import cannot
    reinstall the clock). A timer the user set with ``mujoco.set_mjcb_time(f)`` is kept;
    ``mujoco.set_mjcb_time(None)`` puts the package's clock back. Physics never reads the timer,
    so results do not change; ``MjData.timer`` of every model in the process stays zero.

    Returns:
        Whether the timer was cleared: False before `register`, or when a timer set by the
        user is in place (it is kept).

    Raises:
        ImportError: The mujoco Python package is not installed.
    """
    import mujoco  # the package, not this module: absolute import

    if not _library or mujoco.get_mjcb_time() is not None:
        return False
    _library[0].fastbatch_mujoco_clear_timer()
    return True


def _gymnasium_draws_track() -> bool:
    """Whether the installed gymnasium draws its MuJoCo envs from their "track" camera by default
    (before 1.4; since 1.4 from the free camera)."""
    version = importlib.metadata.version("gymnasium").split(".")
    return tuple(int(p) for p in version[:2] if p.isdigit()) < (1, 4)


def native_kwargs(spec: NativeEnvSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with each ``(low, high)`` range kwarg of gymnasium split into two params,
    gymnasium's ``camera_id`` as the ``camera`` param, `PIXEL_DEFAULTS` filled in where
    ``pixels=True``, and the "track" camera chosen where no camera is given and either pixels
    are observed or the installed gymnasium draws from it by default (before 1.4).

    ``healthy_z_range=(a, b)`` becomes the env's ``healthy_z_range_low`` and
    ``healthy_z_range_high``; other kwargs pass unchanged.

    Args:
        spec: The env's spec (its ``params`` name the ranges).
        kwargs: `fastbatch.make`'s keyword arguments.

    Returns:
        A new dict.

    Raises:
        ValueError: A range value that is not two numbers with low <= high (naming the env
            and the kwarg), or ``camera`` and ``camera_id`` both given.
    """
    params = spec.params
    out = {
        k: v for k, v in kwargs.items() if k not in ("camera_id", "camera_name") or v is not None
    }
    if "camera_id" in out:
        if "camera" in out:
            raise ValueError(f"{spec.id}: give camera or camera_id (the same param), not both")
        out["camera"] = out.pop("camera_id")
    if out.get("pixels"):
        for name, value in PIXEL_DEFAULTS.items():
            out.setdefault(name, value)
    if "camera" not in out and "camera_name" not in out:
        tracked = "track" in spec.param_info["camera_name"].choices
        if tracked and (out.get("pixels") or _gymnasium_draws_track()):
            out["camera_name"] = "track"
    for name, value in kwargs.items():
        if name in params or f"{name}_low" not in params:
            continue
        ok = isinstance(value, (tuple, list)) and len(value) == 2
        ok = ok and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value)
        if not ok or not float(value[0]) <= float(value[1]):
            raise ValueError(
                f"{spec.id} parameter {name!r} must be a pair (low, high) of "
                f"numbers with low <= high, got {value!r}"
            )
        del out[name]
        out[f"{name}_low"], out[f"{name}_high"] = float(value[0]), float(value[1])
    return out

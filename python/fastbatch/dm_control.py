"""fastbatch's native dm_control envs: tasks of DeepMind's Control Suite in C++, prebuilt with
the wheel beside the MuJoCo envs.

The tasks (``ENV_IDS``) carry shimmy's gymnasium ids (``dm_control/<domain>-<task>-v0``) and
run in the C++ pool: ``fastbatch.make("dm_control/cheetah-run-v0", 64, seed=0)``. They are one
plugin library on the public env contract, ``fastbatch/fastbatch_dm_control.so``, built against
the mujoco-core version the ``mujoco`` extra pins (as `fastbatch.mujoco`'s are) and reading
dm_control's own XML files from the installed ``dm_control`` package at run time, without
importing it: ``pip install --no-deps dm-control`` is enough (dm_control's labmaze dependency
has no wheels past CPython 3.12). ``backend="process"`` and ``gymnasium.make(id)`` keep
shimmy's env.

What an env gives, and how it matches shimmy's env under ``FlattenObservation``:

- observation: float64, dm_control's observation keys in gymnasium's Dict order (sorted by
  name), each flattened; ``fastbatch.spec(id).observation_keys`` gives each key's slice
  (`observation_keys` for either order). ``flat_observation=True``
  (dm_control's environment kwarg) keeps dm_control's own key order instead;
- action: float64, dm_control's action spec, passed to the controls unclipped (MuJoCo clamps
  limited controls in the physics, and rewards that read the controls see the raw values);
- reward: dm_control's, float32 in the batch as every fastbatch reward;
- episode end: the time limit (1000 steps for every task here) as truncation, dm_control's
  discount-0 ends as termination;
- seeding: env i of ``reset(seed=s)`` seeds its task's ``RandomState(s + i)``, as shimmy's
  ``reset(seed=s + i)`` does, and replays that env's episode bit for bit (tests/test_dm_control.py
  steps both in lockstep); an autoreset keeps the task's stream going, as shimmy's ``reset()``
  does. Seeds of 2**32 and above, which numpy's RandomState refuses, seed it with their 32-bit
  words (``RandomState([low, high])``).

Kwargs: shimmy's ``task_kwargs={"time_limit": t}`` and
``environment_kwargs={"flat_observation": b}`` (or ``time_limit=`` and ``flat_observation=``
directly). Everything else is refused with a message, never ignored: ``task_kwargs["random"]``
(seed with ``seed=``), ``control_timestep``/``n_sub_steps``/``legacy_step``, and
``visualize_reward=True``.

Frames (fastbatch/mujoco_render.h): ``pixels=True`` makes the observation the frame, uint8
``(height, width, 3)``, drawn by the pool's threads after each step with MuJoCo's renderer over
EGL (``width``, ``height``, ``camera``, or shimmy's ``render_kwargs={"height", "width",
"camera_id"}``; defaults `PIXEL_DEFAULTS`). ``visuals="match"`` draws what dm_control's
``physics.render(height, width, camera_id)`` draws, pixel for pixel on the same renderer;
``visuals="fast"`` (the default with ``pixels=True``) leaves out shadows, reflections, the skybox
and multisampling. ``render_mode="rgb_array"`` draws the same frame for ``render()``
(``physics.render``'s defaults: 240x320 from the free camera, ``visuals="match"``). Mesa's driver
is loaded so that it binds to its own LLVM, not TensorFlow's, so TensorFlow in the same process
does not crash it, in either import order.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from fastbatch import mujoco as _mujoco
from fastbatch._build_info import build_info, package_dir
from fastbatch.plugins import register_native_env
from fastbatch.registry import NativeEnvSpec

__all__ = [
    "ENV_IDS",
    "PIXEL_DEFAULTS",
    "DmControlUnavailableError",
    "native_kwargs",
    "observation_keys",
    "register",
    "suite_dir",
]

ENV_IDS = (
    "dm_control/acrobot-swingup-v0",
    "dm_control/acrobot-swingup_sparse-v0",
    "dm_control/ball_in_cup-catch-v0",
    "dm_control/cartpole-balance-v0",
    "dm_control/cartpole-balance_sparse-v0",
    "dm_control/cartpole-swingup-v0",
    "dm_control/cartpole-swingup_sparse-v0",
    "dm_control/cartpole-three_poles-v0",
    "dm_control/cartpole-two_poles-v0",
    "dm_control/cheetah-run-v0",
    "dm_control/finger-spin-v0",
    "dm_control/finger-turn_easy-v0",
    "dm_control/finger-turn_hard-v0",
    "dm_control/fish-swim-v0",
    "dm_control/fish-upright-v0",
    "dm_control/hopper-hop-v0",
    "dm_control/hopper-stand-v0",
    "dm_control/humanoid-run-v0",
    "dm_control/humanoid-run_pure_state-v0",
    "dm_control/humanoid-stand-v0",
    "dm_control/humanoid-walk-v0",
    "dm_control/manipulator-bring_ball-v0",
    "dm_control/manipulator-bring_peg-v0",
    "dm_control/manipulator-insert_ball-v0",
    "dm_control/manipulator-insert_peg-v0",
    "dm_control/pendulum-swingup-v0",
    "dm_control/point_mass-easy-v0",
    "dm_control/point_mass-hard-v0",
    "dm_control/quadruped-run-v0",
    "dm_control/quadruped-walk-v0",
    "dm_control/reacher-easy-v0",
    "dm_control/reacher-hard-v0",
    "dm_control/swimmer-swimmer15-v0",
    "dm_control/swimmer-swimmer6-v0",
    "dm_control/walker-run-v0",
    "dm_control/walker-stand-v0",
    "dm_control/walker-walk-v0",
)
"""The native dm_control tasks: shimmy's gymnasium ids."""

_INSTALL = "pip install --no-deps 'dm-control>=1.0.52'"
_LOCK = threading.Lock()
_registered: list[str] = []
_library: list[ctypes.CDLL] = []
# shimmy's kwargs that the native envs take, and the param each becomes.
_TASK_KWARGS = {"time_limit": "time_limit"}
_ENVIRONMENT_KWARGS = {"flat_observation": "flat_observation"}
_RENDER_KWARGS = {"height": "height", "width": "width", "camera_id": "camera"}
PIXEL_DEFAULTS = {"height": 84, "width": 84, "camera": 0, "visuals": "fast"}
"""What ``pixels=True`` draws unless told otherwise: DrQ-v2's 84x84 frames from camera 0 (use
``camera=2`` for quadruped, as DrQ-v2 does), with `visuals="fast"`."""


class DmControlUnavailableError(_mujoco.MujocoUnavailableError):
    """The native dm_control envs cannot run here: dm_control's files or MuJoCo are missing, or
    this fastbatch was built without them (the message says what to install)."""


def suite_dir() -> Path:
    """The installed dm_control's suite directory (its XML files), found without importing it.

    Raises:
        DmControlUnavailableError: dm_control is not installed, or has no suite files.
    """
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        raise DmControlUnavailableError(
            f"fastbatch's native dm_control envs read dm_control's model files, and dm_control "
            f"is not installed: {_INSTALL} (its Python dependencies are not needed), or "
            f"pip install 'fastbatch[dm_control]'"
        )
    suite = Path(next(iter(spec.submodule_search_locations))) / "suite"
    if not (suite / "cheetah.xml").is_file():
        raise DmControlUnavailableError(
            f"dm_control's suite files are missing ({suite}): {_INSTALL}"
        )
    return suite


def _with_common_includes(root: ElementTree.Element, suite: Path) -> str:
    """`root` as XML text, its includes (``./common/*.xml``) naming the suite's files by path:
    the text is loaded from memory, where a relative include has no folder to start from."""
    for include in root.iter("include"):
        include.set("file", str(suite / include.get("file")))
    return ElementTree.tostring(root, encoding="unicode")


def _cartpole_model(suite: Path, poles: int) -> str:
    """dm_control's ``cartpole._make_model(poles)``: a chain of poles, the floor and cameras
    moved to fit."""
    root = ElementTree.parse(suite / "cartpole.xml").getroot()
    parent = root.find("./worldbody/body/body")  # the first pole
    for index in range(2, poles + 1):
        child = ElementTree.Element("body", name=f"pole_{index}", pos="0 0 1", childclass="pole")
        ElementTree.SubElement(child, "joint", name=f"hinge_{index}")
        ElementTree.SubElement(child, "geom", name=f"pole_{index}")
        parent.append(child)
        parent = child
    root.find("./worldbody/geom").set("pos", f"0 0 {1 - poles - 0.05}")
    cameras = root.findall("./worldbody/camera")
    cameras[0].set("pos", f"0 {-1 - 2 * poles} 1")
    cameras[1].set("pos", f"0 {-2 * poles} 2")
    return _with_common_includes(root, suite)


def _swimmer_model(suite: Path, bodies: int) -> str:
    """dm_control's ``swimmer._make_model(bodies)``: a chain of bodies, each with a joint, a
    motor, a velocimeter and a gyro."""
    root = ElementTree.parse(suite / "swimmer.xml").getroot()
    parent = root.find("./worldbody/body")  # the head
    actuator = ElementTree.SubElement(root, "actuator")
    sensor = ElementTree.SubElement(root, "sensor")
    for index in range(bodies - 1):
        child = ElementTree.Element("body", name=f"segment_{index}")
        child.set("pos", "0 .1 0")
        ElementTree.SubElement(child, "geom", {"class": "visual", "name": f"visual_{index}"})
        ElementTree.SubElement(child, "geom", {"class": "inertial", "name": f"inertial_{index}"})
        child.append(ElementTree.Element("site", name=f"site_{index}"))
        limit = 360.0 / bodies
        child.append(
            ElementTree.Element("joint", {"name": f"joint_{index}", "range": f"{-limit} {limit}"})
        )
        actuator.append(ElementTree.Element("motor", name=f"motor_{index}", joint=f"joint_{index}"))
        sensor.append(
            ElementTree.Element("velocimeter", name=f"velocimeter_{index}", site=f"site_{index}")
        )
        sensor.append(ElementTree.Element("gyro", name=f"gyro_{index}", site=f"site_{index}"))
        parent.append(child)
        parent = child
    scale = bodies / 6.0
    for camera in root.findall("./worldbody/body/camera"):
        if camera.get("mode") == "trackcom":
            camera.set("pos", " ".join(str(float(v) * scale) for v in camera.get("pos").split(" ")))
    return _with_common_includes(root, suite)


_MANIPULATOR_PROPS = ("ball", "target_ball", "cup", "peg", "target_peg", "slot")


def _manipulator_model(suite: Path, peg: bool, insert: bool) -> str:
    """dm_control's ``manipulator.make_model(use_peg, insert)``: the arm with only the props
    the task uses."""
    root = ElementTree.parse(suite / "manipulator.xml").getroot()
    used = ["peg", "target_peg"] if peg else ["ball", "target_ball"]
    if insert:
        used.append("slot" if peg else "cup")
    parents = {child: parent for parent in root.iter() for child in parent}
    for prop in sorted(set(_MANIPULATOR_PROPS) - set(used)):
        body = next(b for b in root.iter("body") if b.get("name") == prop)
        parents[body].remove(body)
    return _with_common_includes(root, suite)


def _quadruped_model(suite: Path, floor_size: float) -> str:
    """dm_control's ``quadruped.make_model(floor_size)``: the floor sized to the task, without
    the walls, ball, target, terrain and rangefinders (walk and run)."""
    root = ElementTree.parse(suite / "quadruped.xml").getroot()
    parents = {child: parent for parent in root.iter() for child in parent}

    def remove(tag: str, name: str) -> None:
        element = next(e for e in root.iter(tag) if e.get("name") == name)
        parents[element].remove(element)

    root.find(".//geom[@name='floor']").set("size", f"{floor_size} {floor_size} .5")
    for wall in ("wall_px", "wall_py", "wall_nx", "wall_ny"):
        remove("geom", wall)
    remove("body", "ball")
    remove("site", "target")
    remove("geom", "terrain")
    for rangefinder in list(root.iter("rangefinder")):
        parents[rangefinder].remove(rangefinder)
    return _with_common_includes(root, suite)


def _generated_models(suite: Path) -> dict[str, str]:
    """The models dm_control generates in Python, by the name their tasks load them under."""
    return {
        "cartpole_2.xml": _cartpole_model(suite, 2),
        "cartpole_3.xml": _cartpole_model(suite, 3),
        "swimmer6.xml": _swimmer_model(suite, 6),
        "swimmer15.xml": _swimmer_model(suite, 15),
        "manipulator_ball.xml": _manipulator_model(suite, peg=False, insert=False),
        "manipulator_ball_insert.xml": _manipulator_model(suite, peg=False, insert=True),
        "manipulator_peg.xml": _manipulator_model(suite, peg=True, insert=False),
        "manipulator_peg_insert.xml": _manipulator_model(suite, peg=True, insert=True),
        # _DEFAULT_TIME_LIMIT * _WALK_SPEED and * _RUN_SPEED, as dm_control writes them
        "quadruped_walk.xml": _quadruped_model(suite, 20 * 0.5),
        "quadruped_run.xml": _quadruped_model(suite, 20 * 5),
    }


def _library_path(found: Any) -> Path:
    """The prebuilt library when it was built for the installed MuJoCo; with
    FASTBATCH_MUJOCO_BUILD=1 one compiled on first use, as `fastbatch.mujoco` does."""
    if os.environ.get("FASTBATCH_MUJOCO_BUILD") == "1":
        try:
            sources = _mujoco.family_sources("dm_control_src", "dm_control")
            return _mujoco.compile_family("fastbatch_dm_control.so", sources)
        except _mujoco.MujocoUnavailableError as exc:
            raise DmControlUnavailableError(str(exc)) from None
    built = build_info().get("mujoco")
    path = package_dir() / "fastbatch_dm_control.so"
    compile_hint = (
        f"or set FASTBATCH_MUJOCO_BUILD=1 to compile them against mujoco {found.version} on "
        f"first use (needs a C++ compiler)"
    )
    if built is None or not path.is_file():
        raise DmControlUnavailableError(
            "this fastbatch was built without its dm_control envs (no mujoco-core at build "
            f"time); {compile_hint}, or use backend='process'"
        )
    if built != found.version:
        raise DmControlUnavailableError(
            f"mujoco {found.version} is installed ({found.distribution}), but this fastbatch's "
            f"dm_control envs were built for mujoco {built}: pip install 'mujoco-core=={built}', "
            f"{compile_hint}"
        )
    return path


def register() -> list[str]:
    """Loads and registers the native dm_control envs; returns their ids.

    Idempotent and thread-safe; ``fastbatch.make`` calls it for one of `ENV_IDS`.

    Returns:
        `ENV_IDS`, as a list.

    Raises:
        DmControlUnavailableError: dm_control's files or the matching MuJoCo are missing (the
            message says what to install).
    """
    _mujoco.isolate_gl()  # before anything here can load Mesa
    with _LOCK:
        if not _registered:
            try:
                found = _mujoco.installed()
            except _mujoco.MujocoUnavailableError as exc:
                raise DmControlUnavailableError(str(exc)) from None
            suite = suite_dir()
            path = _library_path(found)
            ctypes.CDLL(str(found.library))  # libmujoco by its path first, as fastbatch.mujoco
            library = ctypes.CDLL(str(path))
            library.fastbatch_dm_control_set_assets(str(suite).encode())
            for name, xml in _generated_models(suite).items():
                library.fastbatch_dm_control_set_model(name.encode(), xml.encode())
            _library.append(library)
            for env_id in ENV_IDS:
                keys = _keys(env_id, flat_observation=False)
                register_native_env(env_id, path, replace=True, observation_keys=keys)
            _registered.extend(ENV_IDS)
        _mujoco.drop_default_timer()
        return list(_registered)


def observation_keys(env_id: str, flat_observation: bool = False) -> dict[str, slice]:
    """Where each of dm_control's observation keys lies in the native env's observation.

    Args:
        env_id: One of `ENV_IDS`.
        flat_observation: The env's ``flat_observation`` (dm_control's key order when True,
            gymnasium's sorted order otherwise).

    Returns:
        Key -> slice of one env's observation row, in the row's order.

    Raises:
        ValueError: ``env_id`` is not a native dm_control id.
        DmControlUnavailableError: As `register`.
    """
    if env_id not in ENV_IDS:
        raise ValueError(f"{env_id!r} is not a native dm_control id; they are {list(ENV_IDS)}")
    register()
    return _keys(env_id, flat_observation)


def _keys(env_id: str, flat_observation: bool) -> dict[str, slice]:
    """`observation_keys` from the loaded library."""
    out = ctypes.create_string_buffer(4096)
    size = _library[0].fastbatch_dm_control_obs_keys(env_id.encode(), out, len(out))
    if size <= 0:
        raise DmControlUnavailableError(f"cannot read the observation keys of {env_id}")
    keys = [item.split(":") for item in out.value.decode().rstrip(";").split(";")]
    if not flat_observation:
        keys.sort(key=lambda item: item[0])
    slices, start = {}, 0
    for name, size_text in keys:
        slices[name] = slice(start, start + int(size_text))
        start += int(size_text)
    return slices


def native_kwargs(spec: NativeEnvSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    """shimmy's keyword arguments as the native env's params.

    ``task_kwargs`` and ``environment_kwargs`` (dicts) are unpacked into the params they map to;
    ``visualize_reward=False`` is dropped.

    Args:
        spec: The env's spec.
        kwargs: `fastbatch.make`'s keyword arguments.

    Returns:
        A new dict of params.

    Raises:
        ValueError: A kwarg the native env cannot honour (naming it, and what to do instead).
        TypeError: ``task_kwargs`` or ``environment_kwargs`` is not a dict.
    """
    out = dict(kwargs)
    for group, known in (
        ("task_kwargs", _TASK_KWARGS),
        ("environment_kwargs", _ENVIRONMENT_KWARGS),
    ):
        values = out.pop(group, None)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise TypeError(f"{spec.id} {group} must be a dict, got {type(values).__name__}")
        for name, value in values.items():
            if name == "random":
                raise ValueError(
                    f"{spec.id}: task_kwargs['random'] is not taken by the native env; seed it "
                    f"with fastbatch.make(..., seed=s) or reset(seed=s) (env i gets "
                    f"RandomState(s + i), as shimmy's reset(seed=s + i))"
                )
            if name not in known:
                raise ValueError(
                    f"{spec.id}: {group}[{name!r}] is not supported by the native env (it takes "
                    f"{sorted(known)}); use backend='process' for dm_control's own env"
                )
            if known[name] in out:
                raise ValueError(f"{spec.id}: {name!r} is given twice")
            out[known[name]] = value
    if "visualize_reward" in out:
        if out.pop("visualize_reward") is not False:
            raise ValueError(
                f"{spec.id}: visualize_reward=True (recolouring frames by reward) is not "
                f"supported by the native env; use backend='process' for dm_control's own env"
            )
    _frame_kwargs(spec, out)
    return out


def _frame_kwargs(spec: NativeEnvSpec, out: dict[str, Any]) -> None:
    """Maps shimmy's ``render_kwargs`` (``height``, ``width``, ``camera_id``) onto the frame
    params, and fills the defaults of pixel observations (`PIXEL_DEFAULTS`) where
    ``pixels=True``; frames for ``render()`` alone keep ``physics.render``'s."""
    render_kwargs = out.pop("render_kwargs", None)
    if render_kwargs is not None:
        if not isinstance(render_kwargs, dict):
            raise TypeError(
                f"{spec.id} render_kwargs must be a dict, got {type(render_kwargs).__name__}"
            )
        for name, value in render_kwargs.items():
            param = _RENDER_KWARGS.get(name)
            if param is None:
                raise ValueError(
                    f"{spec.id}: render_kwargs[{name!r}] is not supported by the native env (it "
                    f"takes {sorted(_RENDER_KWARGS)})"
                )
            if param in out:
                raise ValueError(f"{spec.id}: {param!r} is given twice")
            out[param] = value
    if out.get("pixels"):
        for name, value in PIXEL_DEFAULTS.items():
            out.setdefault(name, value)

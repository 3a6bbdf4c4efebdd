"""Episodes of a policy recorded as a video file (`fastbatch eval --video FILE`).

A native env that draws itself (an env class with ``Render``, ABI version 7: fastbatch-atari's
envs, a plugin's) is played on one such native env, made with the run's env kwargs and
``render_mode="rgb_array"``. Any other env is played in this process on gymnasium's own env of
the same id, made with ``render_mode="rgb_array"`` (the process backend keeps its envs in worker
processes, and the built-in classic-control and MuJoCo envs follow their gymnasium twins'
dynamics bit for bit). Either way the recorded episodes are played afresh, not replayed from the
evaluation. An env without an ``rgb_array`` renderer (a native plugin without ``Render``, a
custom env) cannot be recorded, and says so.

Headless: gymnasium's classic-control envs draw with pygame into an off-screen surface, so they
record without a display (pygame comes with ``gymnasium[classic-control]``); MuJoCo envs need
an OpenGL context (``MUJOCO_GL=egl`` or ``osmesa`` on a machine without a display).

Files: ``.gif`` through Pillow (installed with matplotlib, so always there with the trainer);
any other suffix (``.mp4``, ...) through imageio with its ffmpeg plugin
(``pip install "imageio[ffmpeg]"``). Frames are streamed to the writer as they are drawn.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import gymnasium
import numpy as np

from fastbatch import api
from fastbatch.errors import EnvError, PluginError, UnknownEnvError

__all__ = ["check_recordable", "record_video"]


def record_video(
    policy: Callable[[np.ndarray, np.ndarray], np.ndarray],
    env_id: str,
    path: str | Path,
    episodes: int = 1,
    seed: int = 0,
    env_kwargs: dict | None = None,
    backend: str | None = None,
) -> list[float]:
    """Plays `episodes` episodes of `env_id` with `policy` (a batch of float32 observations and
    of episode-start flags -> a batch of actions, as `export.Player`), writes their frames to
    `path`; returns their returns. `env_kwargs` and `backend` are the training run's: a native
    env that draws itself (backend None or "native") is made with the kwargs; otherwise
    gymnasium's env of the id is, its ``wrappers`` and ``frame_stack`` wrapping it as the
    process backend's workers do and the rest going to gymnasium.make."""
    env = _rendering_env(env_id, env_kwargs or {}, backend)
    returns: list[float] = []
    try:
        frames = _play(env, policy, episodes, seed, returns)
        _write(frames, Path(path), fps=env.metadata.get("render_fps") or 30)
    finally:
        env.close()
    return returns


def check_recordable(env_id: str, backend: str | None = None) -> None:
    """Raises ValueError, saying why, unless `env_id` can be recorded (before a long run)."""
    _rendering_env(env_id, {}, backend).close()


def _rendering_env(env_id: str, env_kwargs: dict, backend: str | None) -> gymnasium.Env:
    """The env the video plays, routed by `fastbatch.api`: the native env when it draws itself,
    else gymnasium's env of the id wrapped as the process backend's workers wrap it."""
    kwargs = dict(env_kwargs)
    native = None
    # A process-backend run's ``wrappers`` play gymnasium's env of the id.
    if backend in (None, "native") and "wrappers" not in kwargs:
        try:
            native = api.route(env_id, backend=backend, **kwargs)
        except (UnknownEnvError, PluginError):  # e.g. a broken ALE/ package: gymnasium's env
            native = None
    if native is not None and native.kind == "native" and native.spec.frame is not None:
        try:
            return api.make_single(native, render_mode="rgb_array")
        except EnvError as exc:  # e.g. fastbatch-atari without its ROMs
            raise ValueError(f"cannot record {env_id}: making its env failed: {exc}") from None
    try:
        found = api.route(env_id, backend="process", **kwargs)
    except UnknownEnvError:
        found = None
    if found is None or not isinstance(found.target, str):
        is_native = native is not None and native.backend == "native"
        what = "a native env without a gymnasium twin" if is_native else "unknown"
        raise ValueError(
            f"cannot record {env_id}: it does not draw itself (a native env class with Render, "
            f"fastbatch/env.h), and the recording then plays gymnasium's own env of that id, "
            f"which is {what} to gymnasium"
        )
    # pygame (gymnasium's classic-control renderer) starts SDL's video and audio drivers,
    # which rgb_array rendering (an off-screen surface) does not use; without a display or a
    # sound server they print "XDG_RUNTIME_DIR is invalid". Yours win if set.
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    env = api.make_single(found, render_mode="rgb_array")
    if env.render_mode != "rgb_array":
        env.close()
        raise ValueError(f"cannot record {env_id}: it has no rgb_array renderer")
    return env  # the frames drawn are the game's, not the network's


def _play(env, policy, episodes: int, seed: int, returns: list[float]) -> Iterator[np.ndarray]:
    """The frames of `episodes` episodes, drawn as the writer asks for them; each episode's
    return is appended to `returns` when it ends."""
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        yield env.render()
        total, done, start = 0.0, False, True
        while not done:
            action = policy(np.asarray(obs, dtype=np.float32)[None], np.array([start]))[0]
            start = False
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
            yield env.render()
        returns.append(total)


def _write(frames: Iterator[np.ndarray], path: Path, fps: float) -> None:
    if path.suffix.lower() == ".gif":
        from PIL import Image

        # A 64-colour palette per frame: classic-control frames use a handful of colours, and
        # the fast quantiser keeps a 500-frame episode to a few seconds.
        images = (
            Image.fromarray(f).quantize(colors=64, method=Image.Quantize.FASTOCTREE) for f in frames
        )
        first = next(images)
        first.save(path, save_all=True, append_images=images, duration=round(1000 / fps), loop=0)
        return
    try:
        import imageio.v2 as imageio
    except ImportError:
        raise RuntimeError(
            f"writing a {path.suffix} video needs imageio with ffmpeg (pip install "
            '"imageio[ffmpeg]"); a .gif file name needs only Pillow'
        ) from None
    with imageio.get_writer(path, fps=fps) as writer:
        for frame in frames:
            writer.append_data(frame)

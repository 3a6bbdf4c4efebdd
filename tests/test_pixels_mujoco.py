"""Frames of the native MuJoCo v5 envs (src/cpp/mujoco/frames.h): drawn by the pool's threads
over EGL, equal to gymnasium's own ``rgb_array`` renders with ``visuals="match"``, as the
observation (``pixels=True``) and as ``render()``.

gymnasium's reference frames are drawn in a child process that imports no fastbatch:
gymnasium's renderer draws in whatever GL context is current on its thread, so beside other
renderers in one process its frames are not its own (fastbatch's are: each model draws in an
EGL context of its own).

Needs EGL (Mesa's llvmpipe on a CPU); skipped without it, and left out of the sanitizer passes
(see tests/test_pixels.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import gymnasium
import numpy as np
import pytest

import fastbatch
from fastbatch import mujoco as fb_mujoco
from tests.bench_scripts import run_bench_script
from tests.egl import has_egl

pytestmark = [
    pytest.mark.no_sanitizer,
    pytest.mark.skipif(not has_egl(), reason="no EGL on this machine (libEGL.so.1)"),
]

STEPS = 5
SEED = 7

# gymnasium's frames of each env, one env per id: reset(seed), then STEPS actions drawn from
# default_rng(SEED) in the action space's bounds, a frame after each; written to an .npz.
_REFERENCE = """
    import json, sys
    import numpy as np, gymnasium
    ids, size, camera, seed, steps, out = json.loads(sys.argv[1])
    frames = {}
    for env_id in ids:
        env = gymnasium.make(env_id, render_mode="rgb_array", width=size[1], height=size[0],
                             **camera)
        env.reset(seed=seed)
        space = env.action_space
        actions = np.random.default_rng(seed).uniform(space.low, space.high, (steps, *space.shape))
        drawn = [env.render()]
        for action in actions.astype(np.float32):
            env.step(action)
            drawn.append(env.render())
        frames[env_id] = np.stack(drawn)
        env.close()
    np.savez(out, **frames)
"""


def _gymnasium_frames(tmp_path, ids, size, camera):
    out = tmp_path / "reference.npz"
    args = json.dumps([ids, size, camera, SEED, STEPS, str(out)])
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_REFERENCE), args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out))


def _native_frames(env_id, size, camera, **kwargs):
    env = fastbatch.make(
        env_id, 1, seed=SEED, visuals="match", height=size[0], width=size[1], **camera, **kwargs
    )
    try:
        space = env.single_action_space
        rng = np.random.default_rng(SEED)
        actions = rng.uniform(space.low, space.high, (STEPS, *space.shape)).astype(np.float32)
        obs, _ = env.reset(seed=SEED)
        drawn = [obs[0] if kwargs.get("pixels") else env.render()[0]]
        for action in actions:
            obs, _, terminated, truncated, _ = env.step(action[None])
            drawn.append(obs[0] if kwargs.get("pixels") else env.render()[0])
            if terminated[0] or truncated[0]:
                break  # (the pendulums fall within a few random actions) gymnasium's goes on
        return np.stack(drawn)
    finally:
        env.close()


@pytest.mark.parametrize(
    "camera, size",
    [({"camera_id": -1}, (64, 64)), ({"camera_name": "track"}, (48, 72))],
    ids=["free", "track"],
)
def test_match_frames_equal_gymnasiums_render(tmp_path, camera, size):
    """visuals="match", pixels=True: every frame of every v5 env equals gymnasium's rgb_array
    render of the same state, pixel for pixel on the same renderer: from the free camera
    (placed at the first frame, with the env's DEFAULT_CAMERA_CONFIG) and from the "track"
    camera where the model has one."""
    ids = list(fb_mujoco.ENV_IDS)
    if "camera_name" in camera:  # the models with a "track" camera
        ids = [i for i in ids if "track" in fastbatch.spec(i).param_info["camera_name"].choices]
        assert len(ids) == 7
    reference = _gymnasium_frames(tmp_path, ids, size, camera)
    for env_id in ids:
        frames = _native_frames(env_id, size, camera, pixels=True)
        assert frames.dtype == np.uint8 and frames.shape[1:] == (*size, 3) and len(frames) >= 3
        np.testing.assert_array_equal(frames, reference[env_id][: len(frames)], err_msg=env_id)
        assert frames.std() > 0


def test_render_equals_gymnasiums_default_frame(tmp_path):
    """render_mode="rgb_array" without pixels: gymnasium's frame at gymnasium's default camera
    (the free camera since gymnasium 1.4; "track" before), here at 96x128."""
    ids = ["HalfCheetah-v5", "InvertedDoublePendulum-v5"]
    reference = _gymnasium_frames(tmp_path, ids, (96, 128), {})
    for env_id in ids:
        frames = _native_frames(env_id, (96, 128), {}, render_mode="rgb_array")
        np.testing.assert_array_equal(frames, reference[env_id][: len(frames)], err_msg=env_id)


def test_pixel_space_defaults_and_kwargs():
    env = fastbatch.make("HalfCheetah-v5", 2, pixels=True, seed=0)
    try:
        assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (84, 84, 3), np.uint8)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (2, 84, 84, 3) and obs.std() > 0
        assert env.metadata["render_fps"] == 20  # 1 / dt, as gymnasium's
    finally:
        env.close()
    spec = fastbatch.spec("HalfCheetah-v5")
    assert spec.param_info["camera"].default == -1
    assert spec.param_info["camera_name"].choices == ("", "track")
    resolved = fb_mujoco.native_kwargs(spec, {"pixels": True})
    assert resolved == {"pixels": True, **fb_mujoco.PIXEL_DEFAULTS, "camera_name": "track"}
    assert fb_mujoco.native_kwargs(spec, {"camera_id": 0}) == {"camera": 0}
    assert fb_mujoco.native_kwargs(spec, {"camera_id": None, "camera_name": None}) == {}
    # No "track" camera: the free camera.
    reacher = fb_mujoco.native_kwargs(fastbatch.spec("Reacher-v5"), {"pixels": True})
    assert "camera_name" not in reacher and "camera" not in reacher
    with pytest.raises(ValueError, match="camera or camera_id"):
        fastbatch.make("HalfCheetah-v5", 1, camera=0, camera_id=0)
    with pytest.raises(ValueError, match="not both"):
        fastbatch.make("HalfCheetah-v5", 1, camera=0, camera_name="track")
    with pytest.raises(ValueError, match="camera 3 does not exist"):
        fastbatch.make("HalfCheetah-v5", 1, camera=3)
    with pytest.raises(ValueError, match="camera_name"):
        fastbatch.make("Reacher-v5", 1, camera_name="track")


def test_the_default_camera_follows_the_installed_gymnasium(monkeypatch):
    """gymnasium draws from the "track" camera by default before 1.4 and from the free camera
    since: render()'s default camera follows the installed version; pixels take "track"."""
    spec = fastbatch.spec("HalfCheetah-v5")
    for version, default in [("1.3.0", {"camera_name": "track"}), ("1.4.0", {}), ("2.0.1", {})]:
        monkeypatch.setattr(fb_mujoco.importlib.metadata, "version", lambda name, v=version: v)
        assert fb_mujoco.native_kwargs(spec, {}) == default, version
        assert fb_mujoco.native_kwargs(spec, {"pixels": True})["camera_name"] == "track"
        assert fb_mujoco.native_kwargs(spec, {"camera": -1}) == {"camera": -1}


def test_state_and_rewards_are_unchanged_by_pixels():
    """pixels=True changes the observation only: rewards, ends and infos are the state env's."""
    kwargs = {"seed": 3}
    state, pixels = (
        fastbatch.make("Hopper-v5", 2, **kwargs),
        fastbatch.make("Hopper-v5", 2, pixels=True, height=24, width=24, **kwargs),
    )
    try:
        state.reset(seed=3)
        pixels.reset(seed=3)
        rng = np.random.default_rng(0)
        for _ in range(30):
            action = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
            a, b = state.step(action), pixels.step(action)
            np.testing.assert_array_equal(a[1], b[1])
            np.testing.assert_array_equal(a[2], b[2])
            np.testing.assert_array_equal(a[4]["x_velocity"], b[4]["x_velocity"])
            np.testing.assert_array_equal(state.get_env_state(0), pixels.get_env_state(0))
    finally:
        state.close()
        pixels.close()


def test_fast_frames_are_the_same_at_any_worker_count():
    runs = []
    for threads in (1, 2):
        env = fastbatch.make("Walker2d-v5", 3, pixels=True, num_workers=threads, seed=1)
        try:
            obs, _ = env.reset(seed=1)
            frames = [obs]
            for _ in range(4):
                obs, *_ = env.step(np.full((3, 6), 0.3, np.float32))
                frames.append(obs)
            runs.append(np.stack(frames))
        finally:
            env.close()
    np.testing.assert_array_equal(runs[0], runs[1])


def test_the_pixel_benchmark_runs_on_a_v5_env(tmp_path):
    """bench/pixels.py --env HalfCheetah-v5 (figures in bench/README.md): fastbatch against
    gymnasium's own renderer, one short round, written to its JSON."""
    short = ("--num-envs", "2", "--repeats", "1", "--budget", "0.05")
    methods = ("--env", "HalfCheetah-v5", "--methods", "fb-fast,gym-fast")
    result = run_bench_script("pixels", tmp_path / "pixels.json", *short, *methods)
    rates = result["results"][0]["median"]
    assert rates["fb-fast"] > 0 and rates["gym-fast"] > 0

"""Pixel observations of the native dm_control envs (fastbatch/mujoco_render.h): frames drawn by
the pool's threads over EGL, equal to dm_control's own ``physics.render`` with
``visuals="match"``; action repeat; and drawing frames in a process that runs TensorFlow, in
either import order (fastbatch._gl).

Needs EGL (Mesa's llvmpipe on a CPU); skipped without it. Left out of the sanitizer passes:
Mesa and its LLVM are not instrumented, and AddressSanitizer refuses the RTLD_DEEPBIND that
keeps Mesa's LLVM apart from TensorFlow's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("shimmy")

import gymnasium

import fastbatch
from fastbatch import dm_control as fb_dmc
from tests.bench_scripts import run_bench_script
from tests.egl import has_egl

pytestmark = [
    pytest.mark.no_sanitizer,
    pytest.mark.skipif(not has_egl(), reason="no EGL on this machine (libEGL.so.1)"),
]

CHEETAH = "dm_control/cheetah-run-v0"
# Tasks whose frames depend on what the task edits in its model each episode (finger and fish
# hide sites and geoms, reacher sizes its target, swimmer moves a light, manipulator places
# bodies), plus quadruped's own camera and the two classics.
MATCH_TASKS = [
    CHEETAH,
    "dm_control/walker-walk-v0",
    "dm_control/finger-spin-v0",
    "dm_control/fish-upright-v0",
    "dm_control/reacher-hard-v0",
    "dm_control/swimmer-swimmer6-v0",
    "dm_control/manipulator-bring_ball-v0",
    "dm_control/quadruped-run-v0",
]


def _dm_control_frames(env_id, seeds, size, camera, actions):
    """dm_control's own frames (shimmy's env, `physics.render(height, width, camera_id)`) after
    reset and after each action, one env per seed."""
    import shimmy  # noqa: F401  (registers the dm_control/ ids)

    height, width = size
    render_kwargs = {"height": height, "width": width, "camera_id": camera}
    envs = [
        gymnasium.make(env_id, render_mode="rgb_array", render_kwargs=render_kwargs) for _ in seeds
    ]
    try:
        for env, seed in zip(envs, seeds):
            env.reset(seed=seed)
        frames = [np.stack([env.render() for env in envs])]
        for action in actions:
            for env, a in zip(envs, action):
                env.step(a)
            frames.append(np.stack([env.render() for env in envs]))
        return frames
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("env_id", MATCH_TASKS)
@pytest.mark.parametrize("camera, size", [(0, (84, 84)), (-1, (60, 80))])
def test_match_frames_equal_dm_control_render(env_id, camera, size):
    """visuals="match": every frame equals dm_control's render of the same state, pixel for
    pixel (on the same renderer), from a fixed camera and from the free camera."""
    if "quadruped" in env_id and camera == 0:
        camera = 2  # DrQ-v2's quadruped camera
    env = fastbatch.make(
        env_id,
        2,
        seed=5,
        pixels=True,
        visuals="match",
        height=size[0],
        width=size[1],
        camera=camera,
    )
    try:
        rng = np.random.default_rng(0)
        space = env.single_action_space
        actions = [rng.uniform(space.low, space.high, (2, *space.shape)) for _ in range(8)]
        ref = _dm_control_frames(env_id, [5, 6], size, camera, actions)
        obs, _ = env.reset(seed=5)
        assert obs.dtype == np.uint8 and obs.shape == (2, *size, 3)
        np.testing.assert_array_equal(obs, ref[0], err_msg=f"{env_id} reset")
        for t, action in enumerate(actions):
            obs, *_ = env.step(action)
            np.testing.assert_array_equal(obs, ref[t + 1], err_msg=f"{env_id} step {t}")
        assert obs.std() > 0  # a picture, not a blank
    finally:
        env.close()


def test_pixel_space_defaults_and_render_kwargs():
    env = fastbatch.make(CHEETAH, 2, pixels=True)
    assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (84, 84, 3), np.uint8)
    env.close()
    assert fb_dmc.PIXEL_DEFAULTS == {"height": 84, "width": 84, "camera": 0, "visuals": "fast"}
    env = fastbatch.make(
        CHEETAH, 2, pixels=True, render_kwargs={"height": 48, "width": 64, "camera_id": 1}
    )
    assert env.single_observation_space.shape == (48, 64, 3)
    env.close()
    with pytest.raises(ValueError, match="render_kwargs\\['depth'\\]"):
        fastbatch.make(CHEETAH, 2, pixels=True, render_kwargs={"depth": True})
    with pytest.raises(ValueError, match="given twice"):
        fastbatch.make(CHEETAH, 2, pixels=True, height=10, render_kwargs={"height": 10})
    with pytest.raises(ValueError, match="camera 7 does not exist"):
        fastbatch.make(CHEETAH, 2, pixels=True, camera=7)


def test_render_draws_the_observed_frame_and_stacks_stay_whole():
    """render() (render_mode="rgb_array") draws the frame a pixel observation holds; frame_stack
    keeps whole frames, newest last; the frame rate counts the action repeat."""
    env = fastbatch.make(
        CHEETAH, 2, seed=1, pixels=True, render_mode="rgb_array", frame_stack=3, action_repeat=2
    )
    try:
        assert env.single_observation_space.shape == (3, 84, 84, 3)
        assert env.metadata["render_fps"] == pytest.approx(50.0)  # 1 / (0.01 s x 2)
        obs, _ = env.reset(seed=1)
        obs, *_ = env.step(np.zeros((2, 6)))
        frames = env.render()
        np.testing.assert_array_equal(obs[:, -1], np.stack(frames))
    finally:
        env.close()


def test_fast_frames_leave_out_the_costly_visuals_and_are_deterministic():
    frames = {}
    for visuals, workers in (("match", 1), ("fast", 1), ("fast", 2)):
        env = fastbatch.make(CHEETAH, 4, seed=2, pixels=True, visuals=visuals, num_workers=workers)
        env.reset(seed=2)
        obs, *_ = env.step(np.full((4, 6), 0.5))
        frames[visuals, workers] = obs.copy()
        env.close()
    np.testing.assert_array_equal(frames["fast", 1], frames["fast", 2])
    assert (frames["fast", 1] != frames["match", 1]).mean() > 0.2  # no skybox, shadows...


def test_action_repeat_sums_rewards_and_halves_the_episode():
    """action_repeat=2 equals stepping twice with the same action: the rewards summed, the
    second step's observation; 1000 control steps are 500 steps."""
    single = fastbatch.make(CHEETAH, 2, seed=4)
    double = fastbatch.make(CHEETAH, 2, seed=4, action_repeat=2)
    try:
        single.reset(seed=4)
        double.reset(seed=4)
        rng = np.random.default_rng(4)
        for t in range(500):
            action = rng.uniform(-1, 1, (2, 6))
            _, r1, *_ = single.step(action)
            obs1, r2, term1, trunc1, _ = single.step(action)
            obs, reward, term, trunc, _ = double.step(action)
            np.testing.assert_array_equal(obs, obs1)
            expected = r1.astype(np.float64) + r2.astype(np.float64)
            np.testing.assert_allclose(reward, expected, rtol=1e-6)
            np.testing.assert_array_equal(trunc, trunc1)
            np.testing.assert_array_equal(term, term1)
            assert not term.any()
            assert trunc.all() == (t == 499)
    finally:
        single.close()
        double.close()


def _run(code: str, **env_vars) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env_vars}
    for name, value in env_vars.items():
        if value is None:
            env.pop(name)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


# A PPO update of the Nature CNN over stacked pixel frames, with frames drawn before and after
# TensorFlow is imported (or TensorFlow first), in one process.
_TRAIN_WITH_PIXELS = """
    import json, sys, tempfile
    if sys.argv[1] == "tensorflow":
        import tensorflow
    import numpy as np
    import fastbatch
    kwargs = {"pixels": True, "height": 36, "width": 36, "action_repeat": 2, "frame_stack": 3}
    env = fastbatch.make("dm_control/cheetah-run-v0", 2, seed=0, **kwargs)
    env.reset(seed=0)
    before, *_ = env.step(np.zeros((2, 6)))
    from fastbatch.ppo import PRESETS, train
    config = PRESETS["dmc_pixels_cheetah_run"].replace(
        env_kwargs=kwargs, num_envs=2, rollout_steps=16, total_steps=64, minibatches=2,
        epochs=1, eval_episodes=0
    )
    result = train(config, tempfile.mkdtemp(), progress=False)
    after, *_ = env.step(np.zeros((2, 6)))
    env.close()
    from fastbatch import _gl
    print(json.dumps({"steps": result["env_steps"], "gl": _gl.state(),
                      "before": float(before.std()), "after": float(after.std())}))
"""


@pytest.mark.parametrize("first", ["tensorflow", "fastbatch"])
def test_pixel_env_and_tensorflow_share_a_process(first):
    """MUJOCO_GL=egl, Mesa's llvmpipe: a pixel env steps and a CNN PPO update runs in one process
    whichever was imported first (unisolated, Mesa and TensorFlow's LLVM crash it)."""
    pytest.importorskip("tensorflow")
    done = _run(_TRAIN_WITH_PIXELS.replace("sys.argv[1]", repr(first)), MUJOCO_GL="egl")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["steps"] == 64
    assert out["before"] > 0 and out["after"] > 0
    assert out["gl"] in ("isolated", "not needed (no Mesa: libEGL_mesa.so.0)") or out[
        "gl"
    ].startswith("not needed")


def test_rendering_set_up_is_reported():
    """Headless, MuJoCo's Python renderers get MUJOCO_GL=egl; FASTBATCH_GL_ISOLATE=0 turns the
    isolation off; a MUJOCO_GL fastbatch cannot draw with (GLFW) is refused with what to set."""
    code = """
        import os, fastbatch
        fastbatch.make("dm_control/cheetah-run-v0", 1)
        from fastbatch import _gl
        print(os.environ.get("MUJOCO_GL"), os.environ.get("LP_NUM_THREADS"), _gl.state())
    """
    done = _run(code, MUJOCO_GL=None, DISPLAY=None, WAYLAND_DISPLAY=None, LP_NUM_THREADS=None)
    assert done.returncode == 0, done.stderr[-3000:]
    gl, lp_threads, state = done.stdout.split(maxsplit=2)
    assert gl == "egl" and lp_threads == "0" and not state.startswith("off")
    done = _run(code, FASTBATCH_GL_ISOLATE="0")
    assert done.stdout.split(maxsplit=2)[2].strip() == "off (FASTBATCH_GL_ISOLATE=0)"
    refused = """
        import fastbatch
        env = fastbatch.make("dm_control/cheetah-run-v0", 1, pixels=True)
        try:
            env.reset(seed=0)
        except fastbatch.EnvError as exc:
            print("refused:", exc)
    """
    done = _run(refused, MUJOCO_GL="glfw")
    assert "refused:" in done.stdout and "MUJOCO_GL=glfw" in done.stdout, done.stderr[-2000:]
    assert "set MUJOCO_GL=egl (or osmesa)" in done.stdout


def test_mujoco_v5_frames_beside_tensorflow_headless():
    """A native MuJoCo v5 env's own frame (what `fastbatch eval --video` records) in a process
    that imported TensorFlow first, with no display and MUJOCO_GL unset."""
    pytest.importorskip("tensorflow")
    code = """
        import tensorflow, fastbatch
        env = fastbatch.make("HalfCheetah-v5", 1, render_mode="rgb_array")
        env.reset(seed=0)
        frame = env.render()[0]
        print(frame.shape, frame.std() > 0)
    """
    done = _run(code, MUJOCO_GL=None, DISPLAY=None, WAYLAND_DISPLAY=None)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "(480, 480, 3) True"


def test_the_pixel_benchmark_runs(tmp_path):
    """bench/pixels.py (its figures are in bench/README.md): one short round of fastbatch's
    and shimmy's contenders, written to its JSON; EnvPool reported as not run where it has no
    pixel envs."""
    short = ("--num-envs", "2", "--repeats", "1", "--budget", "0.05")
    methods = ("--methods", "fb-fast,shimmy-fast,envpool")
    result = run_bench_script("pixels", tmp_path / "pixels.json", *short, *methods)
    rates = result["results"][0]["median"]
    assert rates["fb-fast"] > 0 and rates["shimmy-fast"] > 0
    assert "envpool" in rates or "envpool" in result["meta"]["not_run"]

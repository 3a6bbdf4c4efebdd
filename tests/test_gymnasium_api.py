"""The parts of gymnasium's VectorEnv API that gymnasium's own vector tests exercise beyond
reset/step: its wrappers with default arguments, its error types, get_attr/set_attr/call,
np_random_seed and render (tests/vector/test_vector_env.py, tests/wrappers/vector/ in
gymnasium's repository assert the same of SyncVectorEnv and AsyncVectorEnv)."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import fastbatch

CLASSIC = ("CartPole-v1", "Pendulum-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0")


def _zeros(env) -> np.ndarray:
    space = env.single_action_space
    return np.zeros((env.num_envs, *space.shape), dtype=space.dtype)


# ---------------------------------------------------------------------------- wrappers
@pytest.mark.parametrize("backend", ["native", "process"])
def test_record_episode_statistics_composes_with_the_defaults(backend):
    """Made with default arguments, fastbatch leaves info["episode"] to the wrapper, whose
    returns and lengths equal fastbatch's own statistics for the same episodes."""
    envs = RecordEpisodeStatistics(fastbatch.make("CartPole-v1", 4, backend=backend))
    own = fastbatch.make("CartPole-v1", 4, backend=backend, stats_key="episode")
    envs.reset(seed=3)
    own.reset(seed=3)
    ended = 0
    for _ in range(60):
        *_, info = envs.step(np.ones(4, np.int64))
        *_, own_info = own.step(np.ones(4, np.int64))
        assert ("episode" in info) == ("episode" in own_info)
        if "episode" in info:
            done = info["_episode"]
            np.testing.assert_array_equal(done, own_info["_episode"])
            np.testing.assert_allclose(info["episode"]["r"][done], own_info["episode"]["r"][done])
            np.testing.assert_array_equal(
                info["episode"]["l"][done], own_info["episode"]["l"][done]
            )
            ended += int(done.sum())
    assert ended >= 4
    envs.close()
    own.close()


# ---------------------------------------------------------------------------- error types
def test_errors_are_gymnasium_errors(backend):
    env = backend.make(2)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="got a scalar"):
        env.step(0)  # gymnasium's vector envs raise TypeError for a non-batch too
    env.close()
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        env.step(np.zeros(2, np.int64))


def test_async_state_errors_are_gymnasium_errors(async_backend):
    env = async_backend.make_async(4, 2)
    env.reset(seed=0)
    env.send(np.zeros(4, np.int64))
    with pytest.raises(gymnasium.error.AlreadyPendingCallError):
        env.send(np.zeros(4, np.int64))
    env.recv()
    env.recv()
    with pytest.raises(gymnasium.error.NoAsyncCallError):
        env.recv()
    env.close()


def test_an_unknown_id_is_gymnasium_name_not_found():
    with pytest.raises(gymnasium.error.NameNotFound, match="nor a gymnasium id"):
        fastbatch.make("NoSuchEnv-v0", 2)


def test_a_first_reset_takes_an_all_true_mask(backend):
    env = backend.make(3)
    obs, _ = env.reset(seed=0, options={"reset_mask": np.ones(3, bool)})
    np.testing.assert_array_equal(obs, backend.make(3).reset(seed=0)[0])


# ---------------------------------------------------------------------------- attributes
def test_native_get_attr_answers_params_spaces_spec_and_state():
    env = fastbatch.make("Pendulum-v1", 3, g=9.81, seed=7)
    env.reset()
    assert env.get_attr("g") == (9.81, 9.81, 9.81)
    assert env.get_attr("observation_space") == (env.single_observation_space,) * 3
    assert env.get_attr("action_space") == (env.single_action_space,) * 3
    spec = env.get_attr("spec")[0]
    assert spec.id == "fastbatch/Pendulum-v1" and spec.kwargs["g"] == 9.81
    assert env.get_attr("render_mode") == (None, None, None)
    for i, state in enumerate(env.get_attr("state")):
        np.testing.assert_array_equal(state, env.get_env_state(i))
    assert env.call("state")[2].shape == (2,)  # call() reads what is not callable, as gymnasium


def test_native_np_random_seed_is_the_per_env_seed():
    env = fastbatch.make("CartPole-v1", 3)
    entropy = env.np_random_seed  # never seeded: what each env drew, as gymnasium reports it
    assert len(set(entropy)) == 3 and all(s >= 2**64 for s in entropy)
    twin = fastbatch.make("CartPole-v1", 3, seed=list(entropy))  # reseeding replays the stream
    np.testing.assert_array_equal(env.reset()[0], twin.reset()[0])
    env.reset(seed=10)
    assert env.np_random_seed == (10, 11, 12) == env.get_attr("np_random_seed")
    env.reset(seed=[None, 5, None])
    assert env.np_random_seed == (10, 5, 12)
    env.reset(seed=20, options={"reset_mask": np.array([True, False, True])})
    assert env.np_random_seed == (20, 5, 22)
    assert fastbatch.make("CartPole-v1", 2, seed=3).np_random_seed == (3, 4)


def test_native_set_attr_and_unknown_names_raise_what_they_can_do():
    env = fastbatch.make("CartPole-v1", 2)
    with pytest.raises(AttributeError, match="fixed when they are made.*sutton_barto_reward="):
        env.set_attr("sutton_barto_reward", 1.0)
    with pytest.raises(AttributeError, match="no attribute 'length'; native envs answer"):
        env.get_attr("length")
    with pytest.raises(AttributeError, match="no attribute 'reset_noise'"):
        env.set_attr("reset_noise", 1.0)
    env.close()
    with pytest.raises(gymnasium.error.ClosedEnvironmentError):
        env.get_attr("spec")


# ---------------------------------------------------------------------------- render
@pytest.mark.parametrize("env_id", CLASSIC)
def test_native_classic_control_renders_gymnasiums_frame_of_its_state(env_id):
    env = fastbatch.make(env_id, 2, render_mode="rgb_array", seed=1)
    assert env.metadata["render_modes"] == ["rgb_array"] and env.render_mode == "rgb_array"
    env.reset()
    for _ in range(3):
        env.step(_zeros(env))
    frames = env.render()
    reference = gymnasium.make(env_id, render_mode="rgb_array")
    reference.reset(seed=0)
    for i, frame in enumerate(frames):
        reference.unwrapped.state = env.get_env_state(i)
        if env_id == "Pendulum-v1":
            reference.unwrapped.last_u = None
        np.testing.assert_array_equal(frame, reference.render())
    assert not np.array_equal(frames[0], frames[1])  # each env drawn from its own state
    assert env.call("render")[1].shape == frames[1].shape
    reference.close()
    env.close()


def test_render_without_a_mode_is_none_and_bad_modes_are_refused():
    env = fastbatch.make("CartPole-v1", 2)
    assert env.render() is None
    with pytest.raises(
        ValueError, match=r"render_mode in \['rgb_array'\], got 'human'.*HumanRendering"
    ):
        fastbatch.make("CartPole-v1", 2, render_mode="human")
    with pytest.raises(ValueError, match="_TestCounter-v0 does not render"):
        fastbatch.make("_TestCounter-v0", 2, render_mode="rgb_array")


def test_gymnasiums_vector_human_rendering_shows_the_native_envs_frames_tiled(monkeypatch):
    pygame = pytest.importorskip("pygame", reason="gymnasium[classic-control] installs it")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # a window without a display
    env = gymnasium.wrappers.vector.HumanRendering(
        fastbatch.make("CartPole-v1", 4, render_mode="rgb_array")
    )
    try:
        assert env.render_mode == "human"
        env.reset(seed=0)
        env.step(np.ones(4, np.int64))
        frames = env.env.render()
        assert (env.num_rows, env.num_cols) == (2, 2)
        window = pygame.surfarray.array3d(pygame.display.get_surface()).transpose(1, 0, 2)
        # The top-left tile is env 0's frame, scaled to the tile's size.
        tile = window[: window.shape[0] // 2, : window.shape[1] // 2]
        drawn = pygame.surfarray.array3d(
            pygame.transform.scale(
                pygame.surfarray.make_surface(frames[0].transpose(1, 0, 2)), tile.shape[1::-1]
            )
        ).transpose(1, 0, 2)
        assert np.abs(tile.astype(int) - drawn).mean() < 1.5  # (a blank tile: 2.7)
        assert tile.min() < 128  # the cart and pole are drawn, not a blank tile
    finally:
        env.close()


def test_gymnasium_make_renders_a_native_single_env():
    env = gymnasium.make("fastbatch/CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    assert env.render().shape == (400, 600, 3)
    env.close()


MUJOCO_RENDER = """
import numpy as np, fastbatch
env = fastbatch.make("Hopper-v5", 2, render_mode="rgb_array", seed=0)
env.reset()
frames = env.render()
assert len(frames) == 2 and frames[0].shape == (480, 480, 3) and frames[0].std() > 0
print("ok")
"""


def test_native_mujoco_renders_with_egl():
    pytest.importorskip("mujoco")
    run = {**os.environ, "MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"}
    out = subprocess.run(
        [sys.executable, "-c", MUJOCO_RENDER], env=run, capture_output=True, text=True, timeout=300
    )
    if "ok" not in out.stdout and ("EGL" in out.stderr or "OpenGL" in out.stderr):
        pytest.skip(f"no EGL OpenGL on this machine: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_make_with_a_seed_seeds_the_action_spaces(backend):
    """As gymnasium's vector envs over action-space-seeded envs: the same seed, the same samples
    (gymnasium's tests/vector/test_sync_vector_env.py::test_sync_vector_determinism)."""
    a, b = backend.make(3, seed=123), backend.make(3, seed=123)
    for _ in range(20):
        np.testing.assert_array_equal(a.action_space.sample(), b.action_space.sample())
        assert a.single_action_space.sample() == b.single_action_space.sample()

"""Setting a native env's state: `NativeVectorEnv.set_env_state` over the env contract's optional
``SetState`` (ABI version 5), the inverse of `get_env_state`.

The classic-control envs take gymnasium's ``env.state``: a native env set to the state of a
gymnasium env steps on exactly as that env does. Bad arguments raise before any env is touched;
an env without ``SetState`` (or a table older than version 5) raises naming the env.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest

import fastbatch
from tests.native_builds import built_plugin

pytestmark = pytest.mark.engine

PLUGINS = Path(__file__).parents[1] / "plugins"
# Each classic-control id with a state of its size, inside the reference's usual range.
STATES = {
    "CartPole-v1": [0.03, -0.4, 0.05, 0.7],
    "Pendulum-v1": [2.5, -3.0],
    "MountainCar-v0": [-0.52, 0.013],
    "MountainCarContinuous-v0": [-0.47, -0.021],
    "Acrobot-v1": [0.3, -1.2, 2.0, -4.5],
}


# The NoVel envs hold the full env's state.
FULL_ENV = {"CartPoleNoVel-v1": "CartPole-v1", "PendulumNoVel-v1": "Pendulum-v1"}


@pytest.mark.parametrize("env_id", sorted(STATES) + sorted(FULL_ENV))
def test_set_then_get_round_trips_and_touches_no_other_env(env_id):
    env = fastbatch.make(env_id, 3, seed=1)
    env.reset()
    others = [env.get_env_state(i) for i in (0, 2)]
    state = np.array(STATES[FULL_ENV.get(env_id, env_id)])
    env.set_env_state(1, state)
    np.testing.assert_array_equal(env.get_env_state(1), state)
    for i, before in zip((0, 2), others):
        np.testing.assert_array_equal(env.get_env_state(i), before)
    # A strided float64 array is taken as is (nothing to convert).
    env.set_env_state(2, np.repeat(state, 2)[::2])
    np.testing.assert_array_equal(env.get_env_state(2), state)
    env.close()


def gymnasium_actions(env, count: int, seed: int) -> list:
    env.action_space.seed(seed)
    return [env.action_space.sample() for _ in range(count)]


@pytest.mark.parametrize("warmup", [0, 7], ids=["after_reset", "after_steps"])
@pytest.mark.parametrize("env_id", sorted(STATES))
def test_a_native_env_set_to_a_gymnasium_state_steps_as_gymnasium_does(env_id, warmup):
    # gymnasium's env runs `warmup` steps from its own seed; the native env, reset from another
    # seed, takes its state and both step on with the same actions, bit for bit. After a reset
    # and after steps, gymnasium's state may differ in dtype (MountainCarContinuous: float64,
    # then float32; Acrobot: float32, then float64): both are followed.
    reference = gymnasium.make(env_id)
    reference.reset(seed=3)
    actions = gymnasium_actions(reference, warmup + 20, seed=3)
    for action in actions[:warmup]:
        reference.step(action)
    native = fastbatch.make(env_id, 2, seed=50)
    native.reset()
    native.set_env_state(1, np.asarray(reference.unwrapped.state, dtype=np.float64))
    for t, action in enumerate(actions[warmup:]):
        g_obs, g_reward, g_terminated, g_truncated, _ = reference.step(action)
        obs, reward, terminated, _, _ = native.step(np.stack([action, action]))
        np.testing.assert_array_equal(obs[1], g_obs, err_msg=f"step {t}")
        assert reward[1] == np.float32(g_reward) and terminated[1] == g_terminated
        if g_terminated or g_truncated:
            break
    reference.close()
    native.close()


def test_cartpole_takes_the_state_gymnasium_is_given():
    # gymnasium's own `env.unwrapped.state = ...`, then the same on the native env.
    state = np.array([-1.1, 0.8, -0.15, 1.9])
    reference = gymnasium.make("CartPole-v1")
    reference.reset(seed=0)
    reference.unwrapped.state = state.copy()
    native = fastbatch.make("CartPole-v1", 1, seed=0)
    native.reset()
    native.set_env_state(0, state)
    for t, action in enumerate([1, 1, 0, 1, 0, 0, 1, 1]):
        g_obs, g_reward, g_terminated, _, _ = reference.step(action)
        obs, reward, terminated, _, _ = native.step(np.array([action]))
        np.testing.assert_array_equal(obs[0], g_obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(native.get_env_state(0), reference.unwrapped.state)
        assert reward[0] == g_reward and terminated[0] == g_terminated
        if g_terminated:
            break
    reference.close()
    native.close()


@pytest.mark.parametrize(
    "index, state, error, match",
    [
        (3, np.zeros(4), IndexError, "env index 3 is out of range for 3 envs"),
        (-1, np.zeros(4), IndexError, "env index -1 is out of range"),
        (0, np.zeros(3), ValueError, r"float64 numpy array of shape \(4,\), got shape \(3,\)"),
        (0, np.zeros((1, 4)), ValueError, r"got shape \(1, 4\)"),
        (0, np.zeros(4, np.float32), TypeError, r"shape \(4,\), got dtype float32"),
        (0, np.zeros(4, np.int64), TypeError, "got dtype int64"),
        (0, [0.0, 0.0, 0.0, 0.0], TypeError, "float64 numpy array of shape .*, got list"),
        (0, None, TypeError, "got NoneType"),
    ],
)
def test_bad_arguments_raise_and_change_nothing(index, state, error, match):
    env = fastbatch.make("CartPole-v1", 3, seed=2)
    env.reset()
    before = [env.get_env_state(i) for i in range(3)]
    with pytest.raises(error, match=match):
        env.set_env_state(index, state)
    for i in range(3):
        np.testing.assert_array_equal(env.get_env_state(i), before[i])
    env.close()


def test_an_env_without_set_state_raises_naming_the_env():
    env = fastbatch.make("_TestCounter-v0", 2)
    env.reset()
    state = env.get_env_state(0)  # it has GetState, not SetState
    with pytest.raises(NotImplementedError, match=r"_TestCounter-v0 .*no `void SetState"):
        env.set_env_state(0, state)
    env.close()


def test_a_table_older_than_version_5_raises_naming_the_env_and_its_version(tmp_path):
    library = built_plugin(PLUGINS / "rng_plugins.cc", tmp_path / "librng_plugins.so")
    fastbatch.register_native_env("StateWordsV4-v0", library, replace=True)
    env = fastbatch.make("StateWordsV4-v0", 1)
    with pytest.raises(NotImplementedError, match="StateWordsV4-v0 .*ABI version 4"):
        env.set_env_state(0, np.zeros(4))
    env.close()


def test_an_env_in_flight_is_refused_until_received():
    env = fastbatch.make("CartPole-v1", 4, batch_size=2, num_workers=1, seed=0)
    env.reset()
    env.send(np.ones(4, np.int64))
    _, _, _, _, info = env.recv()
    in_flight = int(np.setdiff1d(np.arange(4), info["env_id"])[0])
    with pytest.raises(fastbatch.AsyncStateError, match=f"env {in_flight} is in flight"):
        env.set_env_state(in_flight, np.zeros(4))
    received = int(info["env_id"][0])
    env.set_env_state(received, np.full(4, 0.01))
    np.testing.assert_array_equal(env.get_env_state(received), np.full(4, 0.01))
    env.close()


def test_a_closed_env_refuses():
    env = fastbatch.make("CartPole-v1", 1)
    env.close()
    with pytest.raises(fastbatch.ClosedEnvError):
        env.set_env_state(0, np.zeros(4))

"""Where gymnasium's own vector tests (tests/vector/test_async_vector_env.py and
test_vector_env.py), run against the process backend, found it behaving unlike
``AsyncVectorEnv``/``SyncVectorEnv``: each test here mirrors the gymnasium test that showed it.
An env's error is re-raised as the env's own exception type (and as ``fastbatch.EnvError``);
envs with different spaces raise gymnasium's RuntimeError in gymnasium's words, naming the env;
``np_random_seed`` is what the envs themselves report."""

from __future__ import annotations

import pickle

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import SyncVectorEnv

import fastbatch


class NeedsTwoArguments(Exception):
    """An exception type that cannot be rebuilt from a message alone."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)


class FailingEnv(gymnasium.Env):
    """gymnasium's ``raise_error_reset``/``raise_error_step`` test env: reset with seed 1
    raises ValueError("Error in reset"); action a >= 1 raises ValueError("Error in step with a"),
    except action 3, which raises an exception type that needs two arguments."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed, options=options)
        if seed == 1:
            raise ValueError("Error in reset")
        return self.observation_space.sample(), {}

    def step(self, action):
        if action == 3:
            raise NeedsTwoArguments(3, "not rebuilt")
        if action >= 1:
            raise ValueError(f"Error in step with {action}")
        return self.observation_space.sample(), 0.0, False, False, {}


class SeededAtConstruction(gymnasium.Env):
    """An env whose generator is seeded in ``__init__`` (as gymnasium's ``make_env`` helper
    seeds its envs by resetting them once), never by the vector env."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, seed: int) -> None:
        self.reset(seed=seed)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed, options=options)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


def _cartpole(seed: int):
    """gymnasium's tests/vector ``make_env``: made, action space seeded, reset with `seed`."""

    def make():
        env = gymnasium.make("CartPole-v1", disable_env_checker=True)
        env.action_space.seed(seed)
        env.reset(seed=seed)
        return env

    return make


def _make(factories, **kwargs):
    kwargs.setdefault("num_workers", 2)
    return fastbatch.make(factories, backend="process", **kwargs)


# ------------------------------------------------------------ 1. the env's own exception type
@pytest.mark.parametrize("in_parent", [False, True], ids=["workers", "in_parent"])
def test_an_envs_error_is_raised_as_its_own_type_and_as_an_env_error(in_parent):
    """gymnasium's test_async_vector_subenv_error (with in_parent, env 0 runs in the caller)."""
    env = _make([FailingEnv] * 2, in_parent=in_parent)
    env.reset(seed=[0, 0])
    with pytest.raises(ValueError, match="Error in reset") as caught:
        env.reset(seed=[1, 0])
    error = caught.value
    assert isinstance(error, fastbatch.EnvError) and error.env_index == 0
    assert 'in reset\n    raise ValueError("Error in reset")\nValueError: Error in reset' in str(
        error
    )
    assert type(pickle.loads(pickle.dumps(error))) is type(error)  # it travels as it is
    env.reset(seed=[0, 0])
    with pytest.raises(fastbatch.EnvError, match="Error in step with 1") as caught:
        env.step(np.array([0, 1]))
    assert isinstance(caught.value, ValueError) and caught.value.env_index == 1
    assert type(caught.value) is type(error)  # one type per env exception type
    env.reset(seed=[0, 0])
    with pytest.raises(fastbatch.EnvError, match="NeedsTwoArguments") as caught:
        env.step(np.array([3, 0]))  # a type that cannot be built from a message: plain EnvError
    assert type(caught.value) is fastbatch.EnvError and caught.value.env_index == 0
    env.close()
    three = _make([FailingEnv] * 3, num_workers=3)
    three.reset(seed=[0, 0, 0])
    with pytest.raises(ValueError, match="Error in step") as caught:
        three.step(np.array([0, 1, 2]))
    assert caught.value.env_index == 1  # the first env to fail, in env order
    three.close()


# ------------------------------------------------------------ 2. envs with different spaces
def test_envs_with_different_spaces_raise_gymnasiums_runtime_error_naming_the_env():
    """gymnasium's test_check_spaces_async_vector_env: 8 CartPoles, env 1 a FrozenLake."""
    factories = [_cartpole(i) for i in range(8)]
    factories[1] = lambda: gymnasium.make("FrozenLake-v1")
    with pytest.raises(
        RuntimeError, match="sub-environments observation spaces are not equivalent"
    ):
        SyncVectorEnv(factories)  # the words gymnasium's vector envs share
    with pytest.raises(
        RuntimeError,
        match=r"some of the sub-environments observation spaces are not equivalent: env 1 has "
        r"Discrete\(16\) where env 0 has Box.*\(a Discrete, not a Box\)",
    ):
        _make(factories)
    pendulum = [_cartpole(i) for i in range(4)]
    pendulum[3] = lambda: gymnasium.make("Pendulum-v1")  # another Box: shape (3,)
    with pytest.raises(RuntimeError, match=r"env 3 has Box.*\(shape \(3,\), not \(4,\)\)"):
        _make(pendulum, in_parent=True)
    with pytest.raises(
        RuntimeError,
        match=r"Some environments have an action space different from `Discrete\(2\)`\. In order "
        r"to batch actions, the action spaces from all environments must be equal: env 2 has "
        r"Discrete\(4\) \(the same type, shape and dtype, with other bounds or parameters\)",
    ):
        _make([_cartpole(0), _cartpole(1), _other_actions, _cartpole(3)])


def _other_actions():
    """CartPole's observation space, with four actions."""
    env = gymnasium.make("CartPole-v1")
    env.action_space = spaces.Discrete(4)
    return env


# ------------------------------------------------------------ 3. np_random_seed
@pytest.mark.parametrize("in_parent", [False, True], ids=["workers", "in_parent"])
def test_np_random_seed_is_what_envs_seeded_at_construction_report(in_parent):
    """gymnasium's test_random_seeds_set_at_retrieval and test_random_seeding_basics."""
    factories = [_cartpole(i) for i in range(4)]
    env = _make(factories, in_parent=in_parent)
    ref = SyncVectorEnv(factories)
    assert env.np_random_seed == ref.np_random_seed == (0, 1, 2, 3)
    env.reset(seed=42)
    assert env.np_random_seed == (42, 43, 44, 45)
    env.reset(seed=None)  # an unseeded reset keeps the seeds
    assert env.np_random_seed == (42, 43, 44, 45)
    env.close()
    own = _make([lambda i=i: SeededAtConstruction(i) for i in range(4)], in_parent=in_parent)
    assert own.np_random_seed == (0, 1, 2, 3)
    own.close()

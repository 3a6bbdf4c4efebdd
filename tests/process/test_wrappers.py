"""The process backend's ``wrappers``: callables or "module:name" paths around each env in its
worker, in order, before the frame stack; checked in the caller; refused for native envs."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.wrappers import FrameStackObservation, TransformObservation

import fastbatch
from fastbatch.process import wrapping


def plus_one(env):
    """Adds 1 to every observation (a module-level function: it pickles by reference)."""
    return TransformObservation(env, lambda obs: obs + 1, env.observation_space)


def times_two(env):
    return TransformObservation(env, lambda obs: obs * 2, env.observation_space)


def by_hand(seed: int, actions, frames: int):
    """CartPole under times_two(plus_one(...)) and stacked, stepped in this process."""
    env = FrameStackObservation(times_two(plus_one(gymnasium.make("CartPole-v1"))), frames)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, *_ = env.step(a)
        out.append(obs)
    return np.stack(out)


@pytest.mark.parametrize("as_paths", [False, True])
def test_wrappers_apply_in_order_before_the_frame_stack(as_paths):
    wrappers = (
        [f"{__name__}:plus_one", f"{__name__}:times_two"] if as_paths else [plus_one, times_two]
    )
    actions = [0, 1, 1, 0, 1, 0, 0, 1]
    env = fastbatch.make(
        "CartPole-v1", 2, backend="process", wrappers=wrappers, frame_stack=3, seed=5
    )
    try:
        assert env.single_observation_space.shape == (3, 4)
        obs, _ = env.reset()
        got = [obs]
        for a in actions:
            obs, *_ = env.step(np.array([a, a]))
            got.append(obs)
    finally:
        env.close()
    got = np.stack(got)
    for i in range(2):
        np.testing.assert_array_equal(got[:, i], by_hand(5 + i, actions, 3))


def test_one_wrapper_may_be_given_alone():
    assert wrapping.resolve(plus_one) == (plus_one,)
    assert wrapping.resolve(f"{__name__}:plus_one") == (plus_one,)
    assert wrapping.resolve(None) == ()


@pytest.mark.parametrize(
    "wrappers, error, match",
    [
        ([3], TypeError, "callables env -> env or their import paths"),
        (["no_colon"], TypeError, "'module:name'"),
        (["no_such_module_here:f"], ImportError, "does not import"),
        ([f"{__name__}:nothing"], ImportError, "has no 'nothing'"),
    ],
)
def test_bad_wrappers_are_refused_before_any_worker_starts(wrappers, error, match):
    with pytest.raises(error, match=match):
        fastbatch.make("CartPole-v1", 2, backend="process", wrappers=wrappers)


def test_native_envs_refuse_wrappers():
    with pytest.raises(TypeError, match="wrappers apply to Python envs"):
        fastbatch.make("CartPole-v1", 2, wrappers=[plus_one])
    fastbatch.make("CartPole-v1", 2, wrappers=[]).close()  # none: nothing to refuse

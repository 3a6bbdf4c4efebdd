"""The in-graph rollout (ppo/rollout.py) keeps observations in the env's dtype, of any rank: the
rollout op and the tf.numpy_function fallbacks collect the same rollouts, bit for bit, and hand
back the storage dtype (uint8 images, float32 vectors, float64 MuJoCo states)."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")  # installed by the test extra

import fastbatch
from fastbatch.ppo import tf_op
from fastbatch.ppo.rollout import Rollout

NUM_ENVS = 4
STEPS = 40  # past _TestImage-v0's 32-step limit: final_obs rows are written


def fixed_actions(env, steps: int) -> np.ndarray:
    """[steps, N, ...] actions that depend only on (t, env): the same for both paths."""
    space = env.single_action_space
    t = np.arange(steps)[:, None]
    i = np.arange(env.num_envs)[None, :]
    if hasattr(space, "n"):
        return ((t * 7 + i * 3) // 5 % space.n).astype(np.int64)
    phase = (t + i)[..., None] * 0.37 + np.arange(space.shape[0])
    return (np.sin(phase) * space.high).astype(space.dtype)


def collect(env_id: str, use_op: bool, **params):
    """One rollout of STEPS fixed actions: (the Rollout, the observations `step` returned)."""
    env = fastbatch.make(
        env_id,
        NUM_ENVS,
        autoreset_mode="same_step",
        stats_key="episode",
        num_workers=1,
        **params,
    )
    rollout = Rollout(env, STEPS, use_op=use_op)
    rollout.start(3)
    actions = tf.constant(fixed_actions(env, STEPS))
    dtype = tf.as_dtype(rollout.obs_dtype)

    @tf.function(autograph=False)
    def run():
        def body(t, done, seen):
            with tf.control_dependencies([done]):  # one step after the other, as a policy would
                action = tf.gather(actions, t)
            next_obs, done = rollout.step(t, action)
            assert next_obs.dtype == dtype and next_obs.shape == rollout.obs_shape
            return t + 1, done, seen.write(t, next_obs)

        start = (tf.constant(0), tf.zeros([NUM_ENVS], tf.bool), tf.TensorArray(dtype, STEPS))
        _, _, seen = tf.while_loop(lambda t, *_: t < STEPS, body, start)
        return seen.stack()

    seen = run().numpy()
    rollout.finish()
    env.close()
    return rollout, seen


def assert_same_rollouts(env_id: str, **params) -> Rollout:
    assert tf_op.load() is not None, "the prebuilt op must load"
    op, op_seen = collect(env_id, True, **params)
    fallback, fallback_seen = collect(env_id, False, **params)
    assert op.uses_op and not fallback.uses_op
    assert op_seen.dtype == op.obs_dtype == fallback_seen.dtype
    np.testing.assert_array_equal(op_seen, fallback_seen)
    np.testing.assert_array_equal(op_seen, op.arrays["obs"][1:])  # next_obs is obs[t + 1]
    for key in ("obs", "final_obs", "reward", "terminated", "truncated"):
        a, b = op.arrays[key], fallback.arrays[key]
        assert a.dtype == b.dtype, key
        np.testing.assert_array_equal(a, b, err_msg=key)
    assert op.episode_returns == fallback.episode_returns
    assert op.episode_lengths == fallback.episode_lengths
    return op


@pytest.mark.parametrize(
    "params, shape",
    [
        ({}, (3, 8, 8)),  # a row of 4 images fills whole cache lines: the step_into fallback
        ({"size": 5, "channels_last": True}, (5, 5, 3)),  # it does not: the env.step fallback
        ({"size": 84, "channels": 4, "channels_last": True}, (84, 84, 4)),
    ],
)
def test_uint8_images_take_the_op_and_match_the_fallback_bit_for_bit(params, shape):
    rollout = assert_same_rollouts("_TestImage-v0", **params)
    obs, final_obs = rollout.arrays["obs"], rollout.arrays["final_obs"]
    assert rollout.obs_shape == [NUM_ENVS, *shape]
    assert obs.dtype == final_obs.dtype == np.uint8
    assert obs.shape == (STEPS + 1, NUM_ENVS, *shape)
    assert obs.nbytes == np.empty(obs.shape, np.float32).nbytes // 4
    assert final_obs.nbytes == STEPS * NUM_ENVS * int(np.prod(shape))
    assert rollout.arrays["truncated"][31].all()  # the 32-step limit ...
    lit = final_obs[31].reshape(NUM_ENVS, -1) == 255
    assert (lit.sum(axis=1) == shape[-1 if params.get("channels_last") else 0]).all()
    assert not final_obs[30].any()  # ... and only there a final observation
    assert rollout.episode_lengths == [32] * NUM_ENVS


def test_the_image_env_rewards_naming_the_previous_pixels_half():
    def half(obs):  # 0: the lit pixel is in the left columns, 1: in the right ones
        column = np.argwhere(obs[..., 0] == 255)[:, 2]  # one lit pixel an env, in env order
        return (2 * column >= obs.shape[2]).astype(np.int64)

    env = fastbatch.make(
        "_TestImage-v0", 2, size=6, channels=1, channels_last=True, autoreset_mode="same_step"
    )
    obs, _ = env.reset(seed=5)  # 40 steps: across the 32-step limit, into the next episode
    first = obs.copy()
    for _ in range(20):
        obs, reward, *_ = env.step(half(obs))
        np.testing.assert_array_equal(reward, [1.0, 1.0])
        obs, reward, *_ = env.step(1 - half(obs))
        np.testing.assert_array_equal(reward, [0.0, 0.0])
    np.testing.assert_array_equal(env.reset(seed=5)[0], first)  # deterministic given the seed
    env.close()


def test_float32_vectors_match_between_op_and_fallback():
    rollout = assert_same_rollouts("CartPole-v1")
    assert rollout.arrays["obs"].dtype == np.float32 and rollout.obs_shape == [NUM_ENVS, 4]


def test_float64_observations_come_out_float64_from_both_paths():
    pytest.importorskip("mujoco")
    rollout = assert_same_rollouts("HalfCheetah-v5")
    assert rollout.arrays["obs"].dtype == np.float64 and rollout.obs_shape == [NUM_ENVS, 17]

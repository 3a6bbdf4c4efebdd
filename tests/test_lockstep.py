"""Lockstep agreement of the built-in envs with gymnasium's own Python implementations.

The partially observed NoVel envs (rl-baselines3-zoo's) run against gymnasium's full env with
the velocity columns taken out of its observation; their internal state, velocities included,
is compared in full.

For each env and seed, a batch of native envs and one gymnasium env per batch slot run side by
side. At every native reset the native env's full internal state is injected into the
gymnasium env; from then on both step on their own, and observation, reward, terminated and
truncated are compared at every step (plus the full internal state). Policies mix a
goal-seeking heuristic with random (and out-of-bounds, for continuous actions) actions so that
episodes end both by termination and by truncation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gymnasium
import numpy as np
import pytest

import fastbatch

NUM_ENVS = 4
STEPS = 2_600  # per env: 4 envs x 2,600 = 10,400 env steps per seed
# Under the sanitizers (the tests marked `engine`, .ci/run) one seed runs: the others take the
# same code paths with other numbers.
SEEDS = (pytest.param(0, marks=pytest.mark.engine), 1, 2)


@dataclass(frozen=True)
class Case:
    inject: Callable[[object, np.ndarray], None]  # writes a native state into gymnasium's env
    observe: Callable[[object], np.ndarray]  # gymnasium's observation for its current state
    # Action from (rng, observation, explore probability). Envs 0-1 of the batch explore a lot
    # (long episodes, time limits), envs 2-3 mostly follow the heuristic (terminations). The
    # observation is the full one (the reference's, in lockstep), also for envs that hide part.
    policy: Callable[[np.random.Generator, np.ndarray, float], object]
    can_terminate: bool = True
    reference: str | None = None  # gymnasium's id, when it is not the native id
    columns: tuple[int, ...] | None = None  # the reference's observation columns the env shows


def _set_state(dtype):
    def inject(env, state):
        env.state = np.array(state, dtype=dtype)

    return inject


def _state_obs(env):
    return np.array(env.state, dtype=np.float32)


def _cartpole_policy(rng, obs, explore):
    # Balance (push towards the pole's lean) or act at random.
    if rng.random() < explore:
        return int(rng.integers(2))
    return int(obs[2] + 0.5 * obs[3] > 0)


def _pump(rng, obs, explore, velocity_index, n_actions=3):
    # Push along the velocity (pumps energy, reaches the goal) or act at random.
    if rng.random() < explore:
        return int(rng.integers(n_actions))
    return 2 if obs[velocity_index] >= 0 else 0


def _continuous(rng, explore, low, high, towards):
    # Push along `towards`, or act at random up to 1.5x the bounds (exercises clipping).
    if rng.random() >= explore:
        return np.array([np.sign(towards) * rng.uniform(0.5, 1.5) * high], dtype=np.float32)
    return rng.uniform(1.5 * low, 1.5 * high, size=(1,)).astype(np.float32)


CASES = {
    "CartPole-v1": Case(_set_state(np.float64), _state_obs, _cartpole_policy),
    "Pendulum-v1": Case(
        _set_state(np.float64),
        lambda env: env._get_obs(),
        lambda rng, obs, p: _continuous(rng, p, -2.0, 2.0, towards=obs[2]),
        can_terminate=False,
    ),
    "MountainCar-v0": Case(
        _set_state(np.float64), _state_obs, lambda rng, obs, p: _pump(rng, obs, p, 1)
    ),
    "MountainCarContinuous-v0": Case(
        _set_state(np.float64),
        _state_obs,
        lambda rng, obs, p: _continuous(rng, p, -1.0, 1.0, towards=obs[1] if obs[1] != 0 else 1.0),
    ),
    "CartPoleNoVel-v1": Case(
        _set_state(np.float64),
        _state_obs,
        _cartpole_policy,
        reference="CartPole-v1",
        columns=(0, 2),
    ),
    "PendulumNoVel-v1": Case(
        _set_state(np.float64),
        lambda env: env._get_obs(),
        lambda rng, obs, p: _continuous(rng, p, -2.0, 2.0, towards=obs[2]),
        can_terminate=False,
        reference="Pendulum-v1",
        columns=(0, 1),
    ),
    "Acrobot-v1": Case(
        _set_state(np.float32),
        lambda env: env._get_ob(),
        lambda rng, obs, p: _pump(rng, obs, p, 5),
    ),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("env_id", sorted(CASES))
def test_lockstep_with_gymnasium(env_id, seed):
    case = CASES[env_id]
    native = fastbatch.make(env_id, num_envs=NUM_ENVS, num_workers=2)
    refs = [
        gymnasium.make(case.reference or env_id, disable_env_checker=True) for _ in range(NUM_ENVS)
    ]
    rng = np.random.default_rng(1000 + seed)
    columns = list(case.columns) if case.columns else slice(None)

    def sync(i, native_obs):
        refs[i].reset(seed=seed * 100 + i)
        case.inject(refs[i].unwrapped, native.get_env_state(i))
        np.testing.assert_array_equal(case.observe(refs[i].unwrapped)[columns], native_obs[i])

    obs, _ = native.reset(seed=seed)
    for i in range(NUM_ENVS):
        sync(i, obs)
    prev_done = np.zeros(NUM_ENVS, dtype=bool)
    terminations = truncations = 0
    obs = obs.copy()
    for t in range(STEPS):
        full = [case.observe(ref.unwrapped) for ref in refs] if case.columns else obs
        actions = [case.policy(rng, full[i], 0.9 if i < 2 else 0.2) for i in range(NUM_ENVS)]
        batch = np.array(actions) if isinstance(actions[0], int) else np.stack(actions)
        obs, reward, terminated, truncated, _ = native.step(batch)
        for i, ref in enumerate(refs):
            if prev_done[i]:  # NEXT_STEP autoreset: this step reset env i
                assert reward[i] == 0 and not terminated[i] and not truncated[i]
                sync(i, obs)
                continue
            r_obs, r_reward, r_term, r_trunc, _ = ref.step(actions[i])
            where = f"{env_id} seed {seed} env {i} step {t}"
            np.testing.assert_allclose(obs[i], r_obs[columns], rtol=1e-5, atol=1e-6, err_msg=where)
            np.testing.assert_allclose(
                native.get_env_state(i),
                np.asarray(ref.unwrapped.state, dtype=np.float64),
                rtol=1e-9,
                atol=1e-12,
                err_msg=where,
            )
            assert reward[i] == pytest.approx(float(r_reward), rel=1e-6, abs=1e-6), where
            assert bool(terminated[i]) == r_term, where
            assert bool(truncated[i]) == r_trunc, where
            terminations += bool(r_term)
            truncations += bool(r_trunc) and not r_term
        prev_done = terminated | truncated
        obs = obs.copy()
    native.close()
    assert truncations > 0, "no episode ended by the time limit"
    if case.can_terminate:
        assert terminations > 0, "no episode ended by termination"


@pytest.mark.engine
@pytest.mark.parametrize("env_id", sorted(CASES))
def test_spaces_and_spec_match_gymnasium(env_id):
    case = CASES[env_id]
    ref = gymnasium.make(case.reference or env_id, disable_env_checker=True)
    spec = fastbatch.spec(env_id)
    space = ref.observation_space
    if case.columns:  # the reference's bounds of the columns shown
        columns = list(case.columns)
        space = gymnasium.spaces.Box(space.low[columns], space.high[columns], dtype=space.dtype)
    assert spec.observation_space == space
    assert spec.action_space == ref.action_space
    assert spec.max_episode_steps == ref.spec.max_episode_steps
    assert spec.reward_threshold == ref.spec.reward_threshold

"""The agents-as-batch env equals its ParallelEnvs stepped by hand through PettingZoo's API
(tests/agents/envs.py, `ByHand`): same seeds, same actions, whole episodes with agents leaving at
different steps, bit for bit, in every autoreset mode; for the tiny `DyingAgents` (no masks,
masks in the observations, masks in the infos) and for mpe2's simple_spread_v3 (discrete and
continuous actions)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from mpe2 import simple_spread_v3

import fastbatch
from tests.agents.envs import MODES, ByHand, assert_rows, assert_workers_exit, dying

pytestmark = pytest.mark.no_tsan  # worker processes

NUM_ENVS, SEED = 3, 7


def _random_actions(envs, rng: np.random.Generator) -> np.ndarray:
    space = envs.single_action_space
    if hasattr(space, "n"):
        return rng.integers(space.n, size=envs.num_envs)
    return rng.uniform(space.low, space.high, (envs.num_envs, *space.shape)).astype(space.dtype)


def _check_final_obs(info: dict, finals: dict, rows: int) -> None:
    """SAME_STEP: ``final_obs`` holds the final observation of exactly the flagged rows."""
    if not finals:
        assert "final_obs" not in info
        return
    assert info["_final_obs"].tolist() == [r in finals for r in range(rows)]
    for r in range(rows):
        if r in finals:
            np.testing.assert_array_equal(info["final_obs"][r], finals[r], err_msg=f"row {r}")
        else:
            assert info["final_obs"][r] is None


def _lockstep(env_fn, mode: AutoresetMode, steps: int, **kwargs) -> None:
    hand = ByHand(env_fn, NUM_ENVS, mode)
    envs = fastbatch.make_agents(
        env_fn, NUM_ENVS, num_workers=2, seed=SEED, autoreset_mode=mode, **kwargs
    )
    rng = np.random.default_rng(0)
    try:
        assert envs.num_envs == NUM_ENVS * envs.num_agents
        assert envs.possible_agents == tuple(hand.agents)
        obs, info = envs.reset()
        assert obs.shape == (envs.num_envs, *envs.single_observation_space.shape)
        assert_rows(hand.reset(SEED), obs, info)
        for _ in range(steps):
            actions = _random_actions(envs, rng)
            expected, finals = hand.step(actions)
            obs, reward, terminated, truncated, info = envs.step(actions)
            assert_rows(expected, obs, info, reward, terminated, truncated)
            if mode == AutoresetMode.SAME_STEP:
                _check_final_obs(info, finals, envs.num_envs)
            if mode == AutoresetMode.DISABLED and hand.ended.any():
                ended = hand.ended.copy()
                obs, info = envs.reset(options={"reset_mask": ended})
                assert_rows(hand.reset(SEED, ended), obs, info)
        assert hand.episodes > NUM_ENVS, "the run should hold several whole episodes"
    finally:
        hand.close()
        assert_workers_exit(envs)


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("mask", [None, "obs", "info"])
def test_dying_agents_equal_stepping_by_hand(mode, mask):
    _lockstep(dying(mask=mask), mode, steps=30)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_simple_spread_equals_stepping_by_hand(mode):
    _lockstep(lambda: simple_spread_v3.parallel_env(N=3, max_cycles=4), mode, steps=14)


def test_continuous_actions_are_stacked_boxes():
    env_fn = lambda: simple_spread_v3.parallel_env(N=2, max_cycles=3, continuous_actions=True)  # noqa: E731
    _lockstep(env_fn, AutoresetMode.SAME_STEP, steps=8)

"""The PettingZoo-parallel facade over a batch of one env: PettingZoo's own `parallel_api_test`
passes on it (agents leaving at different steps, masks in observations and in infos, mpe2's
simple_spread_v3), it replays the ParallelEnv it wraps, and it refuses what the API forbids."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from mpe2 import simple_spread_v3

import fastbatch
from fastbatch.agents import ParallelFacade, parallel_env
from tests.agents.envs import DyingAgents, dying

with warnings.catch_warnings():  # pettingzoo.test imports connect_four_v3 by its deprecated path
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.test import parallel_api_test

pytestmark = pytest.mark.no_tsan  # worker processes


@pytest.mark.parametrize(
    "env_fn",
    [dying(), dying(mask="obs"), dying(mask="info"), simple_spread_v3.parallel_env, "Spread-v0"],
    ids=["dying", "mask-in-obs", "mask-in-info", "simple_spread_v3", "native-Spread-v0"],
)
def test_parallel_api_test_passes(env_fn):
    with parallel_env(env_fn, seed=0) as env:
        parallel_api_test(env, num_cycles=50)


def test_the_facade_replays_the_env_it_wraps():
    """Same observations, flags, infos and agents as the ParallelEnv itself, episode after
    episode."""
    reference = DyingAgents(mask="obs")
    with parallel_env(dying(mask="obs"), seed=3) as env:
        rng = np.random.default_rng(1)
        for episode in range(3):
            seed = 3 if episode == 0 else None
            got, want = env.reset(seed=seed), reference.reset(seed=seed)
            np.testing.assert_equal(got, want)
            while reference.agents:
                assert env.agents == reference.agents
                actions = {a: int(rng.integers(3)) for a in reference.agents}
                got, want = env.step(actions), reference.step(actions)
                np.testing.assert_equal(got[0], want[0])
                # Rewards are float32 rows in the batch (docs/multi-agent.md, Differences).
                assert got[1] == {a: float(np.float32(r)) for a, r in want[1].items()}
                np.testing.assert_equal(got[2:], want[2:])
            assert env.agents == []
            with pytest.raises(ValueError, match="call reset"):
                env.step({})


def test_the_facade_refuses_bad_actions_and_batches():
    with parallel_env(dying(), seed=0) as env:
        env.reset()
        with pytest.raises(ValueError, match=r"no action for the live agents \['agent_1'\]"):
            env.step({"agent_0": 0, "agent_2": 0})
        with pytest.raises(ValueError, match="unknown agents \\['agent_9'\\]"):
            env.step({"agent_0": 0, "agent_1": 0, "agent_2": 0, "agent_9": 0})
        with pytest.raises(TypeError, match="dict keyed by agent"):
            env.step([0, 0, 0])
        with pytest.raises(ValueError, match="unknown agent 'nobody'"):
            env.observation_space("nobody")
    with fastbatch.make_agents(dying(), 2, num_workers=1) as batch:
        with pytest.raises(ValueError, match="a batch of one env, got 2 envs"):
            ParallelFacade(batch)
    with fastbatch.make_agents(dying(), 1, num_workers=1) as batch:
        with pytest.raises(ValueError, match="autoreset_mode=DISABLED"):
            ParallelFacade(batch)
    assert batch.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP

"""What the agents-as-batch env promises beyond stepping in lockstep (tests/agents/
test_lockstep.py): its attributes and spaces, rows that are views of the backend's results,
actions of gone agents ignored, clear errors for bad input and for envs it cannot batch, and no
worker process left behind."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from mpe2 import simple_spread_v3

import fastbatch
from tests.agents.envs import assert_workers_exit, dying

pytestmark = pytest.mark.no_tsan  # worker processes


def test_a_module_name_builds_its_parallel_envs():
    with fastbatch.make_agents("mpe2.simple_spread_v3", 2, num_workers=1, seed=0, N=2) as envs:
        assert (envs.num_agents, envs.num_envs) == (2, 4)
    with fastbatch.make_agents("tests.agents.envs:DyingAgents", 1, num_workers=1) as envs:
        assert envs.possible_agents == ("agent_0", "agent_1", "agent_2")


def test_attributes_and_spaces():
    with fastbatch.make_agents(dying(mask="info"), 2, num_workers=2, seed=0) as envs:
        assert (envs.num_parallel_envs, envs.num_agents, envs.num_envs) == (2, 3, 6)
        assert envs.possible_agents == ("agent_0", "agent_1", "agent_2")
        assert envs.single_observation_space == spaces.Box(-100.0, 100.0, (4,), np.float32)
        assert envs.single_action_space == spaces.Discrete(3)
        assert envs.observation_space.shape == (6, 4)
        assert envs.action_space.shape == (6,)
        assert envs.metadata["name"] == "dying_agents_v0"
        obs, info = envs.reset()
        assert obs.shape == (6, 4) and info["action_mask"].shape == (6, 3)
        assert info["active"].dtype == np.bool_ and info["active"].all()
        result = envs.step(np.zeros(6, np.int64))
        assert result[0].base is not None, "rows are a view of the backend's result arrays"
        assert [a.shape for a in result[1:4]] == [(6,)] * 3
    assert envs.closed
    envs.close()  # twice is harmless


def test_seeds_are_per_env_as_in_make():
    """``seed=s`` gives env ``i`` the episodes of ``seed=[s + i, ...]`` (and of a ParallelEnv
    reset with ``s + i``)."""
    with (
        fastbatch.make_agents(dying(), 3, num_workers=1, seed=4) as a,
        fastbatch.make_agents(dying(), 3, num_workers=1, seed=[4, 5, 6]) as b,
    ):
        np.testing.assert_array_equal(a.reset()[0], b.reset()[0])
        obs, _ = dying()().reset(seed=5)
        np.testing.assert_array_equal(a.reset(seed=4)[0][3:6], np.stack(list(obs.values())))


def test_a_module_is_an_env_fn_and_env_kwargs_reach_the_env():
    with fastbatch.make_agents(simple_spread_v3, 1, num_workers=1, N=2) as envs:
        assert envs.num_agents == 2 and envs.single_observation_space.shape == (12,)


def test_actions_for_gone_agents_are_ignored():
    """A gone agent's row may hold any valid action: results do not change (DyingAgents raises
    if one reaches it)."""
    a = fastbatch.make_agents(dying(), 2, num_workers=1, seed=5)
    b = fastbatch.make_agents(dying(), 2, num_workers=1, seed=5)
    rng = np.random.default_rng(0)
    try:
        _, info = a.reset()
        b.reset()
        gone_rows = 0
        for _ in range(20):
            actions = rng.integers(3, size=a.num_envs)
            other = np.where(info["active"], actions, (actions + 1) % 3)
            gone_rows += int((~info["active"]).sum())
            got = a.step(actions)
            want = b.step(other)
            for x, y in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(x, y)
            info = got[4]
        assert gone_rows > 0
    finally:
        assert_workers_exit(a)
        assert_workers_exit(b)


def test_bad_actions_and_reset_masks_raise_naming_the_expected_form():
    with fastbatch.make_agents(dying(), 2, num_workers=1, seed=0) as envs:
        envs.reset()
        with pytest.raises(ValueError, match=r"shape \(6,\).*2 envs x 3 agents.*got \(2,\)"):
            envs.step(np.zeros(2, np.int64))
        with pytest.raises(ValueError, match="outside the MultiDiscrete space"):
            envs.step(np.full(6, 3))
        with pytest.raises(ValueError, match=r"reset_mask.*shape `\(2,\)`"):
            envs.reset(options={"reset_mask": np.ones(6, np.bool_)})


def test_envs_it_cannot_batch_are_refused_clearly():
    with pytest.raises(ValueError, match=r"\['agent_0', 'agent_1'\] have Box.*\['agent_2'\] have"):
        fastbatch.make_agents(dying(odd_agent=True), 1)
    with pytest.raises(TypeError, match="must be a callable returning a PettingZoo ParallelEnv"):
        fastbatch.make_agents(42, 1)
    with pytest.raises(ValueError, match="cannot import 'simple_spread_v3'.*mpe2.simple_spread"):
        fastbatch.make_agents("simple_spread_v3", 1)  # a name is a module's: mpe2.simple_spread_v3
    with pytest.raises(TypeError, match="for an AEC env use its module's parallel_env"):
        fastbatch.make_agents(simple_spread_v3.env, 1)
    with pytest.raises(ValueError, match="num_envs must be"):
        fastbatch.make_agents(dying(), 0)


def test_disabled_mode_refuses_a_step_of_an_ended_env():
    with fastbatch.make_agents(dying(max_cycles=2), 1, autoreset_mode="disabled", seed=0) as envs:
        envs.reset()
        while True:
            _, _, terminated, truncated, info = envs.step(np.zeros(3, np.int64))
            if not (info["active"] & ~(terminated | truncated)).any():
                break
        with pytest.raises(ValueError, match="env 0 has ended its episode"):
            envs.step(np.zeros(3, np.int64))

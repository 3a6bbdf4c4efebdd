"""Native multi-agent envs (ABI version 6) as batches of agent rows (`NativeAgentsVectorEnv`):
the C++ pool's rows equal each env's Python twin stepped by hand through PettingZoo's API
(tests/agents/envs.py, `ByHand`) bit for bit, over whole episodes with agents leaving at
different steps, in every autoreset mode and for one or two threads: the built-in ``Spread-v0``
against `fastbatch.agents.spread`, and the test env ``_TestAgents-v0`` (whose gone agents' rows
the env fills with junk, which the pool must zero) against `CounterAgents`. Also the same
batch through the process backend, and bad input (PettingZoo's API test on the facade over
the native env: test_facade.py)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastbatch
from fastbatch import _core
from fastbatch.agents import spread
from tests.agents.envs import MODES, ByHand, CounterAgents, assert_rows

pytestmark = pytest.mark.engine

NUM_ENVS, SEED = 3, 11
# Agents mostly stay, so episodes hold several steps; 2 and 3 end an agent.
COUNTER_P = [0.4, 0.4, 0.1, 0.1]


def _lockstep(native_id, twin, mode, steps, workers, probs=None, **kwargs):
    hand = ByHand(twin, NUM_ENVS, mode)
    envs = fastbatch.make_agents(
        native_id, NUM_ENVS, num_workers=workers, seed=SEED, autoreset_mode=mode, **kwargs
    )
    rng = np.random.default_rng(1)
    n = envs.single_action_space.n
    try:
        assert envs.num_envs == NUM_ENVS * envs.num_agents
        assert envs.possible_agents == tuple(hand.agents)
        obs, info = envs.reset()
        assert_rows(hand.reset(SEED), obs, info)
        for _ in range(steps):
            actions = rng.choice(n, size=envs.num_envs, p=probs)
            expected, finals = hand.step(actions)
            obs, reward, terminated, truncated, info = envs.step(actions)
            assert_rows(expected, obs, info, reward, terminated, truncated)
            if mode == AutoresetMode.SAME_STEP:
                flagged = info.get("_final_obs", np.zeros(envs.num_envs, bool))
                assert flagged.tolist() == [r in finals for r in range(envs.num_envs)]
                for r, final in finals.items():
                    np.testing.assert_array_equal(info["final_obs"][r], final)
            if mode == AutoresetMode.DISABLED and hand.ended.any():
                ended = hand.ended.copy()
                obs, info = envs.reset(options={"reset_mask": ended})
                assert_rows(hand.reset(SEED, ended), obs, info)
        assert hand.episodes > NUM_ENVS, "the run should hold several whole episodes"
    finally:
        hand.close()
        envs.close()


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("mode", MODES, ids=str)
def test_spread_equals_its_python_twin_by_hand(mode, workers):
    _lockstep("Spread-v0", spread.parallel_env, mode, steps=60, workers=workers)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("mode", MODES, ids=str)
def test_agents_leaving_at_different_steps_equal_the_twin(mode, workers):
    _lockstep("_TestAgents-v0", CounterAgents, mode, steps=40, workers=workers, probs=COUNTER_P)


def test_the_time_limit_truncates_every_agent_still_in():
    # max_episode_steps=4 on the twin's rules: agents that stayed 4 steps are truncated together.
    with fastbatch.make_agents("_TestAgents-v0", 1, seed=0, max_episode_steps=4) as envs:
        envs.reset()
        for _ in range(3):
            _, _, terminated, truncated, _ = envs.step(np.array([0, 1, 0]))
            assert not (terminated | truncated).any()
        _, _, terminated, truncated, info = envs.step(np.array([0, 1, 3]))
        assert truncated.tolist() == [True, True, True] and terminated.tolist() == [0, 0, 1]
        assert info["active"].all()
        obs, reward, _, _, info = envs.step(np.array([1, 1, 1]))  # NEXT_STEP: the reset
        assert reward.tolist() == [0, 0, 0] and info["active"].all()
        assert obs[:, 1].tolist() == [0, 0, 0]


def test_per_agent_episode_statistics():
    with fastbatch.make_agents("_TestAgents-v0", 1, seed=0, stats_key="episode") as envs:
        envs.reset()
        _, _, _, _, info = envs.step(np.array([1, 1, 3]))  # agent 2 ends: 3 * 3
        assert info["_episode"].tolist() == [False, False, True]
        assert info["episode"]["r"][2] == 9.0 and info["episode"]["l"][2] == 1
        _, _, _, _, info = envs.step(np.array([0, 2, 0]))  # agent 1 ends: 2 * 1 + 2 * 2
        assert info["_episode"].tolist() == [False, True, False]
        assert info["episode"]["r"][1] == 6.0 and info["episode"]["l"][1] == 2
        _, _, _, _, info = envs.step(np.array([3, 0, 0]))  # agent 0 ends the env: 1 + 0 + 3
        assert info["episode"]["r"][0] == 4.0 and info["episode"]["l"][0] == 3


@pytest.mark.no_tsan  # a worker process
def test_the_process_backend_steps_the_twin_alike():
    with fastbatch.make_agents("Spread-v0", 2, seed=5) as native:
        twin = fastbatch.make_agents("fastbatch.agents.spread", 2, seed=5, num_workers=1)
        try:
            np.testing.assert_array_equal(native.reset()[0], twin.reset()[0])
            actions = np.random.default_rng(0).integers(5, size=(30, native.num_envs))
            for row in actions:
                for a, b in zip(native.step(row)[:4], twin.step(row)[:4]):
                    np.testing.assert_array_equal(a, b)
        finally:
            twin.close()


def test_rows_are_views_of_aligned_buffers():
    with fastbatch.make_agents("Spread-v0", 4, seed=0, agents=2) as envs:
        obs, _ = envs.reset()
        obs, reward, terminated, _, _ = envs.step(np.zeros(8, np.int64))
        assert obs.shape == (8, 10) and reward.shape == (8,) and terminated.shape == (8,)
        for array in (obs, reward, terminated):
            assert array.ctypes.data % 64 == 0 and array.flags.c_contiguous


def test_bad_input_is_refused_with_a_message():
    with fastbatch.make_agents("Spread-v0", 2) as envs:
        envs.reset(seed=0)
        with pytest.raises(ValueError, match=r"shape \(6,\): one row per \(env, agent\) pair"):
            envs.step(np.zeros(2, np.int64))
        with pytest.raises(ValueError, match="Discrete"):
            envs.step(np.full(6, 5))
    with pytest.raises(ValueError, match="make_agents"):
        fastbatch.make("Spread-v0", 2)
    with pytest.raises(ValueError, match="agents"):
        fastbatch.make_agents("Spread-v0", 2, agents=9)
    spread_type = _core._builtin_env_types()["Spread-v0"]
    # The message names the env after its block (which owns the spec of these params) is gone.
    refused = "Spread-v0 holds 3 agents.*frame_stack is not supported yet for multi-agent envs"
    for batch_size in (1, 2):
        with pytest.raises(ValueError, match=refused):
            _core._VectorPool(spread_type, 2, 1, 0, -1, [3.0, 0.5], batch_size, frame_stack=2)
    assert "Spread-v0" not in [s.split("/")[-1] for s in __import__("gymnasium").registry]


def test_list_envs_parts_single_and_multi_agent_ids():
    assert "Spread-v0" in fastbatch.list_envs(multi_agent=True)
    assert "Spread-v0" not in fastbatch.list_envs()
    assert "CartPole-v1" not in fastbatch.list_envs(multi_agent=True)
    assert fastbatch.spec("Spread-v0").num_agents == 3

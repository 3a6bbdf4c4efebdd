"""Native multi-agent envs in async mode (``make_agents(id, n, batch_size=b)``): each env's
whole history (its agent rows of obs, reward, flags and ``active``, SAME_STEP's final
observations, each agent's episode statistics, DISABLED's masked resets) equals the same env's
in sync mode, bit for bit, when every env is given the same actions at its own steps, for any
batch size and thread count, whichever envs a recv happens to return. Also the async call rules
and their errors. (Sync mode against the Python twins: test_native.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastbatch
from fastbatch.errors import AsyncStateError
from tests.agents.envs import MODES

pytestmark = [pytest.mark.engine, pytest.mark.threads]

NUM_ENVS, SEED, CYCLES = 5, 3, 60
# _TestAgents-v0: actions 2 and 3 end an agent, so agents leave their envs at different steps.
PROBS = {"_TestAgents-v0": [0.4, 0.4, 0.1, 0.1], "Spread-v0": None}


def _actions(env: int, t: int, agents: int, n: int, probs) -> np.ndarray:
    """Env `env`'s actions at its own step `t`: the same whichever call steps it."""
    return np.random.default_rng([env, t]).choice(n, size=agents, p=probs)


class _History:
    """Per env, what it returned: one entry per step (and per masked reset), in its order."""

    def __init__(self, agents: int) -> None:
        self.agents = agents
        self.entries: dict[int, list[tuple]] = {i: [] for i in range(NUM_ENVS)}
        self.steps = np.zeros(NUM_ENVS, np.int64)  # each env's steps so far

    def add_step(self, ids, obs, reward, terminated, truncated, info) -> None:
        a = self.agents
        finals = info.get("_final_obs", np.zeros(len(reward), bool))
        episode = info.get("_episode", np.zeros(len(reward), bool))
        for j, env in enumerate(ids.tolist()):
            rows = slice(j * a, (j + 1) * a)
            final = [info["final_obs"][r] if finals[r] else None for r in range(j * a, (j + 1) * a)]
            stats = [
                (info["episode"]["r"][r], info["episode"]["l"][r]) if episode[r] else None
                for r in range(j * a, (j + 1) * a)
            ]
            self.entries[env].append(
                (
                    "step",
                    obs[rows].copy(),
                    reward[rows].copy(),
                    terminated[rows].copy(),
                    truncated[rows].copy(),
                    info["active"][rows].copy(),
                    final,
                    stats,
                )
            )
            self.steps[env] += 1

    def add_reset(self, ids, obs, info) -> None:
        a = self.agents
        for env in ids.tolist():
            rows = slice(env * a, (env + 1) * a)
            self.entries[env].append(("reset", obs[rows].copy(), info["active"][rows].copy()))


def _run(env_id, mode, batch_size, workers, cycles):
    envs = fastbatch.make_agents(
        env_id,
        NUM_ENVS,
        batch_size=batch_size,
        num_workers=workers,
        seed=SEED,
        autoreset_mode=mode,
        stats_key="episode",
    )
    a, n, probs = envs.num_agents, envs.single_action_space.n, PROBS[env_id]
    history = _History(a)
    try:
        obs, info = envs.reset()
        history.add_reset(np.arange(NUM_ENVS), obs, info)
        ids = np.arange(NUM_ENVS)  # the envs the next step sends
        for _ in range(cycles):
            actions = np.concatenate([_actions(i, history.steps[i], a, n, probs) for i in ids])
            obs, reward, terminated, truncated, info = envs.step(actions)
            ids = info.get("env_id", np.arange(NUM_ENVS))
            history.add_step(ids, obs, reward, terminated, truncated, info)
            if mode == AutoresetMode.DISABLED:
                ended = np.zeros(NUM_ENVS, bool)
                for j, env in enumerate(ids.tolist()):
                    rows = slice(j * a, (j + 1) * a)
                    # Every agent that took part is done: the env's episode ended.
                    ended[env] = np.all((terminated | truncated)[rows] | ~info["active"][rows])
                if ended.any():
                    obs, info = envs.reset(options={"reset_mask": ended})
                    history.add_reset(np.flatnonzero(ended), obs, info)
    finally:
        envs.close()
    return history


def _assert_same(expected: _History, got: _History) -> None:
    for env in range(NUM_ENVS):
        shorter = min(len(expected.entries[env]), len(got.entries[env]))
        assert shorter > 10, f"env {env} was stepped too few times to compare"
        for k, (want, have) in enumerate(
            zip(expected.entries[env][:shorter], got.entries[env][:shorter])
        ):
            where = f"env {env}, entry {k} ({want[0]})"
            assert want[0] == have[0], where
            for x, y in zip(want[1:], have[1:]):
                if isinstance(x, list):  # per row: a final obs / statistics, or None
                    assert [v is None for v in x] == [v is None for v in y], where
                    for u, v in zip(x, y):
                        if u is not None:
                            np.testing.assert_array_equal(u, v, err_msg=where)
                else:
                    np.testing.assert_array_equal(x, y, err_msg=where)


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("env_id", ["_TestAgents-v0", "Spread-v0"])
def test_async_mode_gives_each_env_the_history_of_sync_mode(env_id, mode):
    sync = _run(env_id, mode, None, 1, CYCLES)
    ends = sum(
        bool(e[3].any() or e[4].any()) for h in sync.entries.values() for e in h if e[0] == "step"
    )
    assert ends > NUM_ENVS, "the run should end several agents' episodes"
    for batch_size, workers in [(2, 1), (3, 2), (1, 2)]:
        # Async runs step fewer envs a cycle: enough cycles that each env gets as many steps.
        cycles = CYCLES * NUM_ENVS // batch_size
        _assert_same(sync, _run(env_id, mode, batch_size, workers, cycles))


def test_send_and_recv_take_whole_envs():
    with fastbatch.make_agents("Spread-v0", 4, batch_size=2, seed=0, num_workers=2) as envs:
        assert envs.is_async and envs.batch_size == 2 and envs.num_envs == 12
        envs.reset()
        envs.send(np.zeros(6, np.int64), np.array([3, 0]))  # two envs' agent rows
        envs.send(np.zeros(3, np.int64), np.array([1]))
        obs, reward, terminated, _, info = envs.recv()
        assert obs.shape == (6, 14) and reward.shape == (6,) and terminated.shape == (6,)
        assert info["active"].shape == (6,) and info["env_id"].shape == (2,)
        assert set(info["env_id"].tolist()) <= {0, 1, 3}
        assert info["env_id"].tolist() == sorted(info["env_id"].tolist())  # env id order


def test_async_call_rules_raise_clear_errors():
    with fastbatch.make_agents("Spread-v0", 4, batch_size=2, seed=0) as envs:
        envs.reset()
        with pytest.raises(ValueError, match=r"shape \(6,\): one row per \(env, agent\) pair"):
            envs.send(np.zeros(2, np.int64), np.array([0, 1]))
        with pytest.raises(AsyncStateError, match="recv"):
            envs.recv()
        envs.send(np.zeros(6, np.int64), np.array([0, 1]))
        with pytest.raises(AsyncStateError, match="already sent"):
            envs.send(np.zeros(3, np.int64), np.array([1]))
        with pytest.raises(ValueError, match="outside"):
            envs.send(np.zeros(3, np.int64), np.array([7]))
        with pytest.raises(AsyncStateError, match="in flight"):
            envs.reset(options={"reset_mask": np.array([True, False, False, False])})
        envs.recv()
        with pytest.raises(AsyncStateError, match="no env is waiting"):
            envs.send(np.zeros(6, np.int64))
            envs.send(np.zeros(6, np.int64))
    with pytest.raises(ValueError, match="batch_size must be at most num_envs=2"):
        fastbatch.make_agents("Spread-v0", 2, batch_size=3)
    with pytest.raises(ValueError, match="async mode is for native multi-agent envs"):
        fastbatch.make_agents("fastbatch.agents.spread", 2, batch_size=1)


def test_sync_mode_send_and_recv_are_step():
    with (
        fastbatch.make_agents("Spread-v0", 2, seed=4) as a,
        fastbatch.make_agents("Spread-v0", 2, seed=4) as b,
    ):
        a.reset(), b.reset()
        actions = np.arange(6) % 5
        a.send(actions)
        got = a.recv()
        want = b.step(actions)
        for x, y in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(x, y)
        assert got[4]["env_id"].tolist() == [0, 1]
        with pytest.raises(AsyncStateError, match="without a pending send"):
            a.recv()

"""Async mode (batch_size < num_envs): send/recv like EnvPool, and its state machine, on every
backend that has one (`async_backend`: native, and process with one env per worker so that any
batch_size is whole blocks); then what only one backend does."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import fastbatch
from fastbatch import AsyncStateError
from tests.envs import raised_by, scripted

pytestmark = [pytest.mark.engine, pytest.mark.threads]


def policy(env_id: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """A deterministic action per (env, that env's step count)."""
    return ((env_id * 7 + steps * 3) // 2 % 2).astype(np.int64)


def _assert_each_env_follows_its_sync_trajectory(
    sync, env, steps: int, seed=None, drive: str = "send/recv"
) -> None:
    """`drive`: "send/recv" (recv a batch, send its envs their actions) or "step" (one
    `step` per batch: the actions go to the envs the last recv returned)."""
    n, b = env.num_envs, env.batch_size
    obs, _ = sync.reset(seed=seed)
    expected = [[obs[i].copy()] for i in range(n)]
    for t in range(steps):
        obs, reward, term, trunc, _ = sync.step(policy(np.arange(n), np.full(n, t)))
        for i in range(n):
            expected[i].append((obs[i].copy(), reward[i], term[i], trunc[i]))

    obs, _ = env.reset(seed=seed)
    got = [[obs[i].copy()] for i in range(n)]
    counts = np.zeros(n, dtype=np.int64)
    ids = np.arange(n)
    if drive == "send/recv":
        env.send(policy(ids, counts))
    while counts.min() < steps:
        if drive == "step":
            obs, reward, term, trunc, info = env.step(policy(ids, counts[ids]))
        else:
            obs, reward, term, trunc, info = env.recv()
        ids = info["env_id"]
        assert obs.shape == (b, *env.single_observation_space.shape) and len(set(ids.tolist())) == b
        for j, i in enumerate(ids):
            got[i].append((obs[j].copy(), reward[j], term[j], trunc[j]))
        counts[ids] += 1
        if drive == "send/recv":
            env.send(policy(ids, counts[ids]), ids)
    for i in range(n):
        for want, have in zip(expected[i], got[i][: steps + 1]):
            if isinstance(want, np.ndarray):
                np.testing.assert_array_equal(have, want)
            else:
                np.testing.assert_array_equal(have[0], want[0])
                assert have[1:] == want[1:]


# ---------------------------------------------------------------------------- every async backend
@pytest.mark.parametrize("drive", ["send/recv", "step"])
def test_each_env_follows_the_same_trajectory_as_in_sync_mode(async_backend, drive):
    sync = async_backend.make(6, "CartPole-v1", seed=3)
    env = async_backend.make_async(6, 2, "CartPole-v1", seed=3)
    _assert_each_env_follows_its_sync_trajectory(sync, env, steps=300, drive=drive)


def test_send_gives_each_env_its_own_action_in_any_order_of_env_ids(async_backend):
    env = async_backend.make_async(2, 1)
    env.reset()
    env.send(np.array([3, 1]), np.array([1, 0]))
    last_action = {}
    for _ in range(2):
        obs, *_, info = env.recv()
        last_action[int(info["env_id"][0])] = obs[0, 1]  # the counter's obs[1]: its last action
    assert last_action == {0: 1.0, 1: 3.0}


def test_step_in_async_mode_sends_the_envs_of_the_last_recv(async_backend):
    env = async_backend.make_async(6, 2, "Pendulum-v1", seed=0)
    env.reset()
    obs, *_, info = env.step(np.zeros((6, 1), np.float32))  # first: all envs
    assert obs.shape == (2, 3) and info["env_id"].shape == (2,)
    seen = set()
    for _ in range(60):
        obs, *_, info = env.step(np.zeros((2, 1), np.float32))
        seen.update(info["env_id"].tolist())
    assert seen == set(range(6))  # no env starves


def test_episode_statistics_rows_follow_env_id(async_backend):
    env = async_backend.make_async(5, 2, terminate_at_step=4)
    env.reset(seed=0)
    env.send(np.zeros(5, dtype=np.int64))
    ended = 0
    for _ in range(50):
        _, _, term, _, info = env.recv()
        if "episode" in info:
            mask = info["_episode"]
            np.testing.assert_array_equal(mask, term)
            assert np.all(info["episode"]["l"][mask] == 4)
            ended += int(mask.sum())
        env.send(np.zeros(2, dtype=np.int64))
    assert ended > 5


def test_misuse_raises_named_errors(async_backend):
    env = async_backend.make_async(4, 2, "CartPole-v1", seed=0)
    env.reset()
    with pytest.raises(AsyncStateError, match="without a pending send"):
        env.recv()
    env.send(np.zeros(1, dtype=np.int64), np.array([0]))
    with pytest.raises(AsyncStateError, match="only 1 envs are in flight"):
        env.recv()
    with pytest.raises(AsyncStateError, match="env 0 was already sent"):
        env.send(np.zeros(2, dtype=np.int64), np.array([1, 0]))
    env.send(np.zeros(1, dtype=np.int64), np.array([1]))  # the failed call queued nothing
    *_, info = env.recv()
    assert sorted(info["env_id"].tolist()) == [0, 1]
    with pytest.raises(AsyncStateError, match="recv\\(\\) first"):
        env.send(np.zeros(2, dtype=np.int64))
        env.send(np.zeros(2, dtype=np.int64))


ASYNC_MISUSE = {
    "recv without send": lambda env: env.recv(),
    "env sent twice": lambda env: (
        env.send(np.zeros(1, dtype=np.int64), np.array([0])),
        env.send(np.zeros(2, dtype=np.int64), np.array([1, 0])),
    ),
    "fewer in flight than batch_size": lambda env: (
        env.send(np.zeros(1, dtype=np.int64), np.array([0])),
        env.recv(),
    ),
}


@pytest.mark.no_tsan
@pytest.mark.parametrize("case", list(ASYNC_MISUSE))
def test_async_misuse_raises_the_same_error_on_both_backends(all_backends, case):
    raised = {}
    for name in ("native", "process"):
        env = all_backends[name].make_async(4, 2)
        env.reset()
        raised[name] = raised_by(ASYNC_MISUSE[case], env)
    assert raised["native"] == raised["process"]
    assert issubclass(raised["native"][0], AsyncStateError)


@pytest.mark.parametrize(
    "backend", ["native", pytest.param("process", marks=pytest.mark.no_tsan)], indirect=True
)
def test_sync_mode_send_and_recv_are_step(backend):
    a = backend.make(3, "CartPole-v1", seed=1)
    b = backend.make(3, "CartPole-v1", seed=1)
    a.reset()
    b.reset()
    actions = np.array([0, 1, 1])
    a.send(actions)
    with pytest.raises(AsyncStateError, match="send\\(\\) twice"):
        a.send(actions)
    got = a.recv()
    want = b.step(actions)
    for x, y in zip(got[:4], want[:4]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(got[4]["env_id"], [0, 1, 2])
    with pytest.raises(AsyncStateError, match="without a pending send"):
        a.recv()


def test_reset_drains_steps_in_flight_and_close_does_not_hang(async_backend):
    env = async_backend.make_async(6, 2, "Acrobot-v1", seed=0)
    env.reset()
    env.send(np.zeros(6, dtype=np.int64))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (6, 6)
    env.step(np.zeros(6, dtype=np.int64))
    env.send(np.zeros(2, dtype=np.int64))
    env.close()


def test_an_env_error_in_async_mode_names_the_env(async_backend):
    env = async_backend.make_async(4, 2, throw_at_step=2)
    env.reset()
    env.send(np.zeros(4, dtype=np.int64))
    env.recv()
    env.recv()
    env.send(np.zeros(4, dtype=np.int64), np.arange(4))
    with pytest.raises(fastbatch.EnvError, match="step 2 failed") as caught:
        env.recv()
    assert caught.value.env_index in range(4)
    env.reset()
    env.send(np.ones(4, dtype=np.int64))
    env.recv()


def test_an_env_error_in_an_async_step_needs_a_reset(async_backend):
    env = async_backend.make_async(4, 2, throw_at_step=2)
    env.reset()
    env.step(np.zeros(4, dtype=np.int64))  # sends all four, returns two
    with pytest.raises(fastbatch.EnvError, match="step 2 failed"):
        for _ in range(4):
            env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    _, _, _, _, info = env.step(np.ones(4, dtype=np.int64))
    assert info["env_id"].shape == (2,)


def test_a_refused_async_step_sends_nothing(async_backend):
    env = async_backend.make_async(4, 2, "CartPole-v1", seed=0)
    env.reset()
    with pytest.raises(ValueError):
        env.step(np.full(4, 7, dtype=np.int64))  # out of the action space
    with pytest.raises(ValueError):
        env.step(np.zeros(3, dtype=np.int64))  # one row short
    env.step(np.zeros(4, dtype=np.int64))  # every env was still waiting
    env.step(np.zeros(2, dtype=np.int64))
    env.step(np.zeros(2, dtype=np.int64))


def test_batch_size_must_fit(async_backend):
    with pytest.raises(ValueError, match="batch_size must be at most num_envs"):
        async_backend.make_async(2, 3)
    with pytest.raises(ValueError, match="batch_size"):
        async_backend.make_async(2, 0)


# ---------------------------------------------------------------------------- native
def test_native_send_recv_refuses_before_sending_when_too_few_would_be_in_flight():
    # The pool's one-call async step: raising after its send would leave the caller unsure
    # which envs were sent, so it checks first.
    env = fastbatch.make("CartPole-v1", num_envs=4, batch_size=2, seed=0)
    env.reset()
    with pytest.raises(AsyncStateError, match="only 1 envs would be in flight"):
        env._pool.send_recv(np.zeros(1, dtype=np.int64), np.array([0]))
    env.send(np.zeros(4, dtype=np.int64))  # env 0 was not sent: all four can be
    assert env.recv()[4]["env_id"].shape == (2,)


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_native_trajectories_do_not_depend_on_num_workers(num_workers):
    sync = fastbatch.make("CartPole-v1", num_envs=10, seed=3)
    env = fastbatch.make("CartPole-v1", num_envs=10, batch_size=4, seed=3, num_workers=num_workers)
    _assert_each_env_follows_its_sync_trajectory(sync, env, steps=300)


@pytest.mark.parametrize("num_workers", [1, 2, 3, 7])
@pytest.mark.parametrize("batch_size", [1, 6, 11])
def test_native_variable_cost_envs_follow_their_sync_trajectories(num_workers, batch_size):
    # Step costs differ by env and change over time, so envs finish out of order.
    sync = fastbatch.make("_TestVariableCost-v0", num_envs=12, seed=3)
    env = fastbatch.make(
        "_TestVariableCost-v0", 12, batch_size=batch_size, seed=3, num_workers=num_workers
    )
    _assert_each_env_follows_its_sync_trajectory(sync, env, steps=150)
    sync.close()
    env.close()


@pytest.mark.parametrize(("num_envs", "batch_size"), [(12, 6), (200, 100), (400, 7)])
def test_native_recv_rows_come_in_env_id_order(num_envs, batch_size):
    # Costs vary by env and over time, so envs finish out of order; rows still ascend by id
    # (both sorts of the pieces a recv takes: by marks over the envs when there are many
    # against the envs, as with 12 envs; by comparison when few, as with 400 envs and B = 7).
    env = fastbatch.make("_TestVariableCost-v0", num_envs, batch_size=batch_size, seed=0)
    env.reset()
    env.send(np.zeros(num_envs, dtype=np.int64))
    seen = set()
    for _ in range(300):
        ids = env.recv()[4]["env_id"]  # (rows match their ids: the trajectory tests above)
        assert len(ids) == batch_size and (np.diff(ids) > 0).all()
        seen.update(ids.tolist())
        env.send(np.ones(batch_size, dtype=np.int64))
    assert len(seen) > batch_size  # not always the same envs
    env.close()


def test_native_send_checks_env_ids():
    env = fastbatch.make("CartPole-v1", num_envs=4, batch_size=2, seed=0, num_workers=2)
    env.reset()
    env.send(np.zeros(1, dtype=np.int64), np.array([0]))
    with pytest.raises(ValueError, match="outside"):
        env.send(np.zeros(1, dtype=np.int64), np.array([9]))
    with pytest.raises(ValueError, match="appears twice"):
        env.send(np.zeros(2, dtype=np.int64), np.array([2, 2]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        env.send(np.zeros(3, dtype=np.int64), np.array([1, 2]))
    with pytest.raises(TypeError, match="env_ids"):
        env.send(np.zeros(1, dtype=np.int64), np.array([1.0]))
    for far in ([2**63 - 2, 2**63 - 1], [-(2**63), -(2**63) + 1]):  # runs that would overflow
        with pytest.raises(ValueError, match="outside"):
            env.send(np.zeros(2, dtype=np.int64), np.array(far, dtype=np.int64))
    env.send(np.zeros(1, dtype=np.int64), np.array([1]))  # the failed calls queued nothing
    *_, info = env.recv()
    assert sorted(info["env_id"].tolist()) == [0, 1]


def test_envs_in_flight_are_not_touched_by_seed_state_or_masked_reset():
    env = fastbatch.make("CartPole-v1", num_envs=4, batch_size=2, seed=0, num_workers=2)
    env.reset()
    env.send(np.zeros(4, dtype=np.int64))
    obs, *_, info = env.recv()  # two envs are still in flight
    in_flight = sorted(set(range(4)) - set(info["env_id"].tolist()))
    with pytest.raises(AsyncStateError, match="in flight"):
        env.get_env_state(in_flight[0])
    idle = int(info["env_id"][0])
    mask = np.zeros(4, dtype=bool)
    mask[idle] = True
    obs, _ = env.reset(options={"reset_mask": mask})  # the rows of envs in flight are not copied
    assert obs.shape == (4, 4)
    env.reset(seed=3)  # reseeding drains what is in flight
    env.step(np.zeros(4, dtype=np.int64))


# ---------------------------------------------------------------------------- process
@pytest.mark.no_tsan
def test_process_async_send_recv_works_on_whole_worker_blocks():
    env = scripted(4, num_workers=2, batch_size=2)
    env.reset(seed=0)
    env.send(np.zeros(4, dtype=np.int64))
    seen = []
    for _ in range(200):  # a loaded machine may return one block many times in a row
        obs, *_, info = env.recv()
        assert obs.shape == (2, 2)
        seen.append(tuple(info["env_id"]))
        env.send(np.zeros(2, dtype=np.int64), info["env_id"])
        if len(seen) >= 6 and len(set(seen)) == 2:
            break
    assert set(seen) == {(0, 1), (2, 3)}
    with pytest.raises(fastbatch.AsyncStateError):
        env.send(np.zeros(2, dtype=np.int64), info["env_id"])
    with pytest.raises(ValueError, match="whole worker blocks"):
        env.close() or scripted(4, num_workers=2, batch_size=3)


def test_native_async_send_refuses_an_env_that_waits_for_its_reset():
    """With autoreset disabled an ended env must be reset before it is sent again: send names
    it and queues nothing (the ids of the recv, in order: send's quick check path)."""
    env = fastbatch.make(
        "CartPole-v1", 4, batch_size=2, seed=0, autoreset_mode="disabled", num_workers=2
    )
    try:
        env.reset()
        env.send(np.zeros(4, np.int64))
        for _ in range(500):
            *_, terminated, truncated, info = env.recv()
            ids = info["env_id"]
            ended = ids[terminated | truncated]
            if len(ended):
                with pytest.raises(ValueError, match=f"env {ended[0]} has ended its episode"):
                    env.send(np.zeros(2, np.int64), ids)
                env.reset(options={"reset_mask": np.isin(np.arange(4), ended)})
                break
            env.send(np.zeros(2, np.int64), ids)
        else:
            pytest.fail("no episode ended")
    finally:
        env.close()


def test_native_async_adds_threads_while_steps_block_and_keeps_every_trajectory():
    # Steps that sleep leave the cores idle: with the default num_workers the pool measures that
    # and steps with more threads than cores (the same trajectories); a num_workers given is a
    # hard limit. More envs than cores, so that threads beyond them are allowed.
    n = max(16, 4 * len(os.sched_getaffinity(0)))
    stalls = {"stall_prob": 0.3, "stall_us": 2000}
    capped = fastbatch.make("_TestVariableCost-v0", n, batch_size=n // 2, num_workers=2, **stalls)
    env = fastbatch.make("_TestVariableCost-v0", n, batch_size=n // 2, **stalls)
    most = {"capped": 0, "default": 0}
    for name, e in [("capped", capped), ("default", env)]:
        e.reset(seed=3)
        e.send(np.zeros(n, dtype=np.int64))
        deadline = time.monotonic() + (1.0 if name == "capped" else 30.0)
        while time.monotonic() < deadline and most[name] <= e.num_workers:
            e.recv()
            e.send(np.zeros(n // 2, dtype=np.int64))
            most[name] = max(most[name], e.active_workers)
    assert most["capped"] <= 2
    assert most["default"] > env.num_workers
    capped.close()
    sync = fastbatch.make("_TestVariableCost-v0", n, **stalls)
    _assert_each_env_follows_its_sync_trajectory(sync, env, steps=30, seed=5)
    sync.close()
    env.close()


def test_a_failure_discarded_with_its_step_is_not_reported_later():
    # Seeding an env in flight drains every step in flight (discarding the results); the
    # failures of those steps go with them, and a later recv of the same envs reports nothing.
    env = fastbatch.make("_TestCounter-v0", 4, batch_size=2, num_workers=1, throw_at_step=2)
    env.reset(seed=0)
    env.send(np.zeros(4, dtype=np.int64))
    first = env.recv()[4]["env_id"]  # two envs after their step 1; the others are in flight
    env.send(np.zeros(2, dtype=np.int64))  # the step 2 of those two fails
    keep = first[1]  # its next step is its third, which succeeds
    mask = np.arange(4) != keep
    env.reset(seed=1, options={"reset_mask": mask})  # seeding drains; the rest start again
    env.send(np.zeros(4, dtype=np.int64), np.arange(4))
    obs, *_, info = env.recv()
    obs2, *_, info2 = env.recv()
    got = dict(zip(info["env_id"].tolist() + info2["env_id"].tolist(), [*obs, *obs2]))
    assert got[keep][0] == 3 and all(got[i][0] == 1 for i in range(4) if i != keep)
    env.close()


def test_the_benchmarks_cpp_loop_runs_async_mode():
    # bench/async_loop.py --native: recv and send driven by C++, against sync the same way.
    from fastbatch import _core

    cartpole = _core._builtin_env_types()["CartPole-v1"]
    for batch_size in (0, 3, 8):  # sync, async, and batch_size == num_envs (sync)
        assert _core._native_loop_seconds(cartpole, 8, 50, num_threads=2, batch_size=batch_size) > 0
    with pytest.raises(ValueError, match="batch_size must be at most num_envs"):
        _core._native_loop_seconds(cartpole, 8, 5, batch_size=9)

"""The process backend's rebalancing (process/rebalance.py): blocks of envs move between their
workers and the caller by pickling, results stay exactly those of SyncVectorEnv whoever steps an
env, envs that would lose their state never move, and the tuner moves blocks to the caller when
the workers are slow and gives them back when they are quick again."""

from __future__ import annotations

import os
import threading
import time

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import EzPickle
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import fastbatch
from fastbatch.process.moving import NotMovableError, pickle_to_move, settled
from tests.space_envs import SpaceEnv

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


def _minatar_breakout():
    pytest.importorskip("minatar")
    return "MinAtar/Breakout-v1"


def _run(env, mode, steps: int, placements, seed: int) -> dict[str, list]:
    """Steps `env` with seeded random actions; before step t the rebalancer is forced to
    ``placements[t % len(placements)]`` blocks in parallel (None: no forcing). Returns every
    result by kind, DISABLED's masked resets included."""
    rng = np.random.default_rng(seed)
    out: dict[str, list] = {"obs": [], "reward": [], "flags": [], "final_obs": [], "episode": []}
    obs, _ = env.reset(seed=seed)
    out["obs"].append(obs.copy())
    n = env.num_envs
    done = np.zeros(n, dtype=bool)
    for t in range(steps):
        if placements is not None:
            env._rebalancer.forced = placements[t % len(placements)]
        if mode == AutoresetMode.DISABLED and done.any():
            obs, _ = env.reset(options={"reset_mask": done})
            out["obs"].append(obs.copy())
        actions = rng.integers(env.single_action_space.n, size=n)
        obs, reward, terminated, truncated, info = env.step(actions)
        done = terminated | truncated
        out["obs"].append(obs.copy())
        out["reward"].append(reward.copy())
        out["flags"].append(np.stack([terminated, truncated]))
        if "final_obs" in info:
            finals = [f if f is not None else np.zeros_like(obs[0]) for f in info["final_obs"]]
            out["final_obs"].append(np.stack(finals))
        if "episode" in info:
            out["episode"].append(np.stack([info["episode"]["r"], info["episode"]["l"]]))
    return out


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("env_id", ["CartPole-v1", "minatar"])
def test_moved_blocks_step_exactly_as_blocks_that_stay(env_id, mode):
    """Blocks move to the caller and back every few steps (across episode ends, in every
    autoreset mode, 3 blocks): observations, rewards, flags, final observations and episode
    statistics equal those of the same envs with rebalancing off, bit for bit, and the
    observations, rewards and flags those of SyncVectorEnv."""
    env_id = _minatar_breakout() if env_id == "minatar" else env_id
    n, steps = 6, 240
    placements = [3] * 5 + [2] * 7 + [1] * 3 + [3] * 2 + [1] * 4 + [2] * 3
    args = {"backend": "process", "num_workers": 3, "in_parent": True, "autoreset_mode": mode}
    env = fastbatch.make(env_id, n, stats_key="episode", **args)
    still = fastbatch.make(env_id, n, stats_key="episode", rebalance=False, **args)
    sync = SyncVectorEnv([lambda: gymnasium.make(env_id)] * n, autoreset_mode=mode)
    try:
        got = _run(env, mode, steps, placements, seed=7)
        assert env.rebalance_off_reason is None
        expected = _run(still, mode, steps, None, seed=7)
        plain = _run(sync, mode, steps, None, seed=7)
    finally:
        for e in (env, still, sync):
            e.close()
    assert got["episode"], "no episode ended: the test covers no episode end"
    for kind in [k for k in got if got[k] or expected[k]]:
        np.testing.assert_array_equal(np.stack(got[kind]), np.stack(expected[kind]), kind)
        if kind != "episode":  # SyncVectorEnv keeps no statistics
            np.testing.assert_array_equal(np.stack(got[kind]), np.stack(plain[kind]), kind)


def test_placements_move_the_blocks_the_tuner_names():
    env = fastbatch.make("CartPole-v1", 6, backend="process", num_workers=3, in_parent=True)
    try:
        env.reset(seed=0)
        assert env.caller_blocks == 1
        rebalancer = env._rebalancer
        for parallel, local in [(1, 3), (2, 2), (3, 1), (1, 3), (2, 2)]:
            rebalancer.forced = parallel
            env.step(np.zeros(6, dtype=np.int64))
            assert env.caller_blocks == local
            assert len(env._workers.local.envs) == 2 * local
        # get_attr, call and set_attr reach the envs wherever they are stepped.
        env.set_attr("marker", list(range(6)))
        assert env.get_attr("marker") == tuple(range(6))
        rebalancer.forced = 3
        env.step(np.zeros(6, dtype=np.int64))
        assert env.get_attr("marker") == tuple(range(6))
    finally:
        env.close()


class RecipeEnv(gymnasium.Env, EzPickle):
    """An env that pickles its constructor's arguments (as MuJoCo's and ALE's do): a moved copy
    would start afresh, so it must never move."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float64)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self):
        EzPickle.__init__(self)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0]), {}

    def step(self, action):
        self.t += 1
        return np.array([float(self.t)]), 1.0, False, self.t >= 50, {}


class LockedEnv(RecipeEnv):
    """Holds a lock, which does not pickle at all."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    __reduce__ = object.__reduce__
    __reduce_ex__ = object.__reduce_ex__


def test_pickle_to_move_refuses_envs_that_would_lose_their_state():
    assert pickle_to_move([gymnasium.make("CartPole-v1")])
    with pytest.raises(NotMovableError, match="EzPickle"):
        pickle_to_move([gymnasium.wrappers.TimeLimit(RecipeEnv(), 10)])


@pytest.mark.parametrize(
    ("factory", "reason"), [(RecipeEnv, "EzPickle"), (LockedEnv, "cannot move|lock")]
)
def test_an_env_that_cannot_move_turns_rebalancing_off_and_keeps_stepping(factory, reason):
    env = fastbatch.make(factory, 4, backend="process", num_workers=2, in_parent=True)
    try:
        env.reset(seed=0)
        env._rebalancer.forced = 1
        for t in range(1, 6):
            obs, *_ = env.step(np.zeros(4, dtype=np.int64))
            np.testing.assert_array_equal(obs[:, 0], [t] * 4)  # no env started afresh
        assert env.caller_blocks == 1
        assert env.rebalance_off_reason is not None
        assert pytest.importorskip("re").search(reason, env.rebalance_off_reason)
    finally:
        env.close()


def test_rebalancing_is_off_when_asked_or_without_a_block_in_the_caller():
    off = fastbatch.make("CartPole-v1", 4, backend="process", num_workers=2, rebalance=False)
    apart = fastbatch.make("CartPole-v1", 4, backend="process", num_workers=2, in_parent=False)
    try:
        for env in (off, apart):
            assert env.rebalance_off_reason is not None
            env.reset(seed=0)
            env.step(np.zeros(4, dtype=np.int64))
        assert off.caller_blocks == 1
        assert apart.caller_blocks == 0
    finally:
        off.close()
        apart.close()
    with pytest.raises(TypeError, match="rebalance"):
        fastbatch.make("CartPole-v1", 4, backend="process", rebalance="yes")


class SlowInWorkersEnv(gymnasium.Env):
    """Sleeps 1 ms a step, 10 ms in a worker process while the flag file exists: a worker
    starved of its core, as when another program takes it."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float64)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, caller_pid: int, flag: str):
        self.caller_pid, self.flag = caller_pid, flag

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.array([0.0]), {}

    def step(self, action):
        slow = os.getpid() != self.caller_pid and os.path.exists(self.flag)
        time.sleep(0.01 if slow else 0.001)
        return np.array([0.0]), 0.0, False, False, {}


def _slow_worker_env(tmp_path):
    """4 SlowInWorkersEnv envs in 2 blocks (the caller's, a worker's), slow in the worker until
    the returned flag file is removed."""
    flag = tmp_path / "slow"
    flag.touch()
    pid = os.getpid()
    env = fastbatch.make(
        lambda: SlowInWorkersEnv(pid, str(flag)),
        4,
        backend="process",
        num_workers=2,
        in_parent=True,
    )
    return env, flag


def _step_until(env, condition, seconds: float) -> bool:
    """Steps `env` until `condition()` holds (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        env.step(np.zeros(env.num_envs, dtype=np.int64))
        if condition():
            return True
    return False


@pytest.mark.no_sanitizer
def test_the_caller_takes_blocks_from_slow_workers_and_gives_them_back(tmp_path):
    env, flag = _slow_worker_env(tmp_path)
    env._rebalancer.others.cores = lambda: None  # probes go whatever else the machine runs
    try:
        env.reset(seed=0)
        assert env.caller_blocks == 1
        # The worker's block takes 20 ms a step, the caller's 2 ms: the caller takes it over.
        assert _step_until(env, lambda: env.caller_blocks == 2, 10.0)
        flag.unlink()  # the worker is quick again: in parallel each block takes 2 ms, 4 alone
        assert _step_until(env, lambda: env.caller_blocks == 1, 15.0)
        assert env.rebalance_off_reason is None
    finally:
        env.close()


@pytest.mark.no_sanitizer
def test_no_block_goes_back_to_a_worker_while_other_programs_hold_the_cores(tmp_path):
    # Another program has the core a worker would run on: probes toward the workers are skipped
    # (no moves); once the core is free again, the blocks go back.
    env, flag = _slow_worker_env(tmp_path)
    rebalancer = env._rebalancer
    others = {"cores": 0.0}
    rebalancer.others.cores = lambda: others["cores"]
    try:
        env.reset(seed=0)
        assert _step_until(env, lambda: rebalancer.tuner.chosen == 1, 10.0)  # settled, no probe
        env.step(np.zeros(4, dtype=np.int64))  # the blocks move before the step after
        assert env.caller_blocks == 2
        flag.unlink()  # the worker would be quick again, but another program has a core
        others["cores"] = (os.cpu_count() or 1) - 1.0
        assert not _step_until(env, lambda: env.caller_blocks == 1, 1.5)
        assert rebalancer.skipped_probes >= 1
        others["cores"] = 0.0
        assert _step_until(env, lambda: env.caller_blocks == 1, 15.0)
    finally:
        env.close()


def test_other_programs_cpu_comes_from_proc(tmp_path):
    # The machine's busy ticks less this process's CPU time and the excluded processes' ticks.
    from fastbatch.process.other_cpu import TICK, OthersCpu

    now = {"t": 0.0, "own": 0.0}
    (tmp_path / "77").mkdir()

    def write(busy_ticks: int, worker_ticks: int) -> None:
        # user nice system idle iowait irq softirq steal; the worker's utime and stime
        (tmp_path / "stat").write_text(f"cpu  {busy_ticks} 0 0 5000 0 0 0 0 0 0\nintr 1\n")
        fields = ["S"] + ["0"] * 10 + [str(worker_ticks), "0"] + ["0"] * 30
        (tmp_path / "77" / "stat").write_text("77 (a (worker)) " + " ".join(fields) + "\n")

    class Fake(OthersCpu):
        def own_seconds(self) -> float:
            return now["own"]

    write(1000, 100)
    reader = Fake(exclude=lambda: [77], proc=str(tmp_path), clock=lambda: now["t"])
    # 2 s later: the machine was busy 3 s, 0.5 s of it this process and 1 s the worker
    write(1000 + 3 * TICK, 100 + TICK)
    now["t"], now["own"] = 2.0, 0.5
    assert reader.elapsed() == 2.0
    assert reader.cores() == pytest.approx((3.0 - 0.5 - 1.0) / 2.0)
    reader.restart()
    now["t"] = 3.0  # a second with nothing busy
    assert reader.cores() == 0.0
    assert Fake(proc=str(tmp_path / "missing")).cores() is None  # not Linux: cannot tell


def test_this_processs_own_threads_are_not_other_programs():
    # A training run's TensorFlow threads are this process: their CPU time is its own.
    from fastbatch.process.other_cpu import OthersCpu

    reader = OthersCpu()
    before = reader.own_seconds()
    spent = []

    def spin():
        start = time.thread_time()
        while time.thread_time() - start < 0.2:
            pass
        spent.append(time.thread_time() - start)

    thread = threading.Thread(target=spin)
    thread.start()
    thread.join()
    assert reader.own_seconds() - before >= spent[0] - 0.01


class Guarded:
    """A plain object with a property of the same name as one of its attributes' keys."""

    def __init__(self):
        self.__dict__["value"] = 1
        self.items = [1, 2]
        self.same = self.items  # shared: the copy must share too

    @property
    def value(self):
        return self.__dict__["value"]

    @value.setter
    def value(self, v):
        raise AssertionError("a property setter ran while restoring state")


def test_settled_copies_step_the_same_and_keep_shared_references():
    import cloudpickle

    env = gymnasium.make("CartPole-v1")
    env.reset(seed=3)
    copy = settled(cloudpickle.loads(pickle_to_move(env)))
    for t in range(200):
        a, b = env.step(t % 2), copy.step(t % 2)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        if a[2] or a[3]:
            np.testing.assert_array_equal(env.reset()[0], copy.reset()[0])
    guarded = settled(Guarded())
    assert guarded.__dict__["value"] == 1
    assert guarded.same is guarded.items


class TextEnv(SpaceEnv):
    """SpaceEnv in a pickled space (Text), without its lock: it can move."""

    def __init__(self):
        super().__init__(gymnasium.spaces.Text(5), gymnasium.spaces.Discrete(2))
        del self.lock


def test_envs_of_a_pickled_space_move_with_their_observations():
    env = fastbatch.make(TextEnv, 4, backend="process", num_workers=2, in_parent=True)
    ref = SyncVectorEnv([TextEnv] * 4)
    try:
        assert env.reset(seed=1)[0] == ref.reset(seed=1)[0]
        for t in range(40):
            env._rebalancer.forced = 1 + (t // 3) % 2
            actions = np.array([t % 2] * 4)
            got, want = env.step(actions), ref.step(actions)
            assert got[0] == want[0]
            np.testing.assert_array_equal(got[1], want[1].astype(got[1].dtype))
        assert env.rebalance_off_reason is None
    finally:
        env.close()
        ref.close()

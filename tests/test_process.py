"""The process backend: gymnasium envs in worker processes behind the same VectorEnv facade."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import fastbatch
import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tests import envs as process_envs
from tests.envs import LegacyEnv, ScriptedEnv


def scripted(n, length=5, **kwargs):
    return fastbatch.make([lambda: ScriptedEnv(length)] * n, backend="process", **kwargs)


def pids_alive(pids):
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] != "Z":
                    alive.append(pid)
        except (ProcessLookupError, FileNotFoundError):
            pass
    return alive


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_matches_gymnasium_sync_vector_env_step_by_step(mode):
    env = fastbatch.make("CartPole-v1", 6, backend="process", num_workers=2, autoreset_mode=mode)
    ref = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in range(6)], autoreset_mode=mode)
    assert env.single_observation_space == ref.single_observation_space
    obs, _ = env.reset(seed=42)
    np.testing.assert_array_equal(obs, ref.reset(seed=42)[0])
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(150):
        actions = rng.integers(2, size=6)
        o, r, te, tr, info = env.step(actions)
        ro, rr, rte, rtr, rinfo = ref.step(actions)
        np.testing.assert_array_equal(o, ro)
        np.testing.assert_array_equal(r, rr.astype(np.float32))
        np.testing.assert_array_equal(te, rte)
        np.testing.assert_array_equal(tr, rtr)
        if mode == AutoresetMode.SAME_STEP and "final_obs" in rinfo:
            np.testing.assert_array_equal(info["_final_obs"], rinfo["_final_obs"])
            for a, b in zip(info["final_obs"], rinfo["final_obs"]):
                assert (a is None and b is None) or np.array_equal(a, b)
        ends += int(np.sum(rte | rtr))
        for a in (o, r, te, tr):
            assert a.ctypes.data % 64 == 0
    assert ends > 5
    env.close()


def test_infos_statistics_and_per_env_factories_match_gymnasium():
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    fns = [lambda length=length: ScriptedEnv(length) for length in (2, 3, 4)]
    ref = RecordEpisodeStatistics(SyncVectorEnv(fns))
    with fastbatch.make(fns, backend="process", num_workers=2) as env:
        env.reset(seed=0)
        ref.reset(seed=0)
        infos_seen = episodes = 0
        for t in range(12):
            actions = np.array([1, 0, 1]) if t % 3 else np.array([0, 1, 1])
            info = env.step(actions)[4]
            rinfo = ref.step(actions)[4]
            assert set(info) == set(rinfo)
            for key in ("bonus", "_bonus", "tag", "_tag"):
                if key in rinfo:
                    np.testing.assert_array_equal(info[key], rinfo[key])
                    infos_seen += 1
            if "episode" in rinfo:
                episodes += int(rinfo["_episode"].sum())
                np.testing.assert_array_equal(info["_episode"], rinfo["_episode"])
                np.testing.assert_array_equal(info["episode"]["r"], rinfo["episode"]["r"])
                np.testing.assert_array_equal(info["episode"]["l"], rinfo["episode"]["l"])
        assert infos_seen > 0 and episodes > 3
    assert env.closed


def test_an_env_exception_names_the_env_and_carries_the_worker_traceback():
    env = scripted(4, num_workers=2)
    env.reset(seed=0)
    with pytest.raises(fastbatch.EnvError, match=r"(?s)env 3:.*ValueError: scripted failure at step 1") as caught:
        env.step(np.array([0, 0, 0, 2]))
    assert caught.value.env_index == 3
    assert "Traceback" in str(caught.value)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(4, dtype=np.int64))
    env.reset()
    env.step(np.zeros(4, dtype=np.int64))
    env.close()


@pytest.mark.parametrize("action, how", [(3, "exit code 3"), (4, "signal 11")])
def test_a_dead_worker_is_reported_quickly_and_the_env_closes(action, how):
    env = scripted(4, num_workers=2)
    env.reset()
    pids = [p.pid for p in env._processes if p]
    start = time.monotonic()
    with pytest.raises(fastbatch.WorkerDiedError, match=f"worker 1 \\(envs 2..3\\) died \\({how}\\)"):
        env.step(np.array([0, 0, action, 0]))
    assert time.monotonic() - start < 5.0
    assert env.closed
    env.close()
    time.sleep(0.2)
    assert pids_alive(pids) == []


def test_close_ends_every_worker_and_leaves_nothing_in_dev_shm():
    before = set(os.listdir("/dev/shm"))
    env = scripted(4, num_workers=2)
    env.reset()
    env.step(np.zeros(4, dtype=np.int64))
    pids = [p.pid for p in env._processes if p]
    assert set(os.listdir("/dev/shm")) == before  # the segment is an anonymous memfd
    env.close()
    assert pids_alive(pids) == []
    with pytest.raises(fastbatch.ClosedEnvError):
        env.step(np.zeros(4, dtype=np.int64))


def test_workers_die_with_a_killed_parent(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(
        """
        import sys, time, fastbatch
        env = fastbatch.make("CartPole-v1", 4, backend="process", num_workers=2, in_parent=False)
        env.reset()
        print(" ".join(str(p.pid) for p in env._processes if p), flush=True)
        time.sleep(60)
        """
    ))  # no `if __name__ == "__main__"` guard: workers never re-import the caller's script
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert len(pids) == 2 and pids_alive(pids) == pids
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    parent.stdout.close()
    deadline = time.monotonic() + 5
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_alive(pids) == []


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler: a run started in the background (e.g. `cmd &` in a script)
    inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_a_step_leaves_the_env_usable(python_sigint):
    # The envs nap 1.5 s and Ctrl-C comes after 0.1 s: a wide margin on a loaded machine.
    def scripted(n, **kwargs):
        return fastbatch.make([lambda: ScriptedEnv(5, nap=1.5)] * n, backend="process", **kwargs)

    env = scripted(2, num_workers=2, in_parent=False)
    env.reset()
    timer = threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        env.step(np.array([5, 5]))  # both envs nap
    obs, *_ = env.step(np.array([0, 0]))
    assert obs.shape == (2, 2)
    env.close()
    # in_parent: the Ctrl-C lands inside an env of the caller's block, whose state is then
    # unknown: the next step asks for a reset, which works.
    local = scripted(2, num_workers=2, in_parent=True)
    local.reset()
    timer = threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        local.step(np.array([5, 5]))
    with pytest.raises(RuntimeError, match="reset"):
        local.step(np.array([0, 0]))
    local.reset()
    assert local.step(np.array([0, 0]))[0].shape == (2, 2)
    local.close()


def test_legacy_spaces_are_converted():
    env = fastbatch.make(LegacyEnv, 2, backend="process", num_workers=1)
    assert isinstance(env.single_observation_space, gymnasium.spaces.Box)
    assert env.single_action_space == gymnasium.spaces.Discrete(2)
    env.reset()
    obs, *_ = env.step(np.array([1, 0]))
    np.testing.assert_array_equal(obs, [[1, 1, 1], [0, 0, 0]])
    env.close()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(fastbatch.UnknownEnvError, match="nor a gymnasium id"):
        fastbatch.make("NoSuchEnv-v9", 2)
    with pytest.raises(ValueError, match="num_workers=3 is more than num_envs=2"):
        scripted(2, num_workers=3)
    with pytest.raises(fastbatch.EnvError, match="could not be created"):
        fastbatch.make([lambda: 1 / 0], backend="process")


def test_in_parent_steps_the_first_block_in_the_caller():
    env = fastbatch.make("CartPole-v1", 6, backend="process", num_workers=2, in_parent=True)
    ref = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in range(6)])
    assert [p is None for p in env._processes] == [True, False]
    np.testing.assert_array_equal(env.reset(seed=3)[0], ref.reset(seed=3)[0])
    rng = np.random.default_rng(1)
    for _ in range(60):
        actions = rng.integers(2, size=6)
        o, r, te, tr, info = env.step(actions)
        ro, rr, rte, rtr, rinfo = ref.step(actions)
        np.testing.assert_array_equal(o, ro)
        np.testing.assert_array_equal(te | tr, rte | rtr)
    env.close()
    local = scripted(4, num_workers=2, in_parent=True)
    local.reset()
    with pytest.raises(fastbatch.EnvError, match=r"(?s)env 1:.*scripted failure"):
        local.step(np.array([0, 2, 0, 0]))  # env 1 lives in the caller's block
    local.reset()
    local.step(np.zeros(4, dtype=np.int64))
    local.close()
    with pytest.raises(ValueError, match="in_parent"):
        scripted(4, num_workers=2, in_parent=True, batch_size=2)


@pytest.fixture(scope="module")
def fuzz_env():
    env = scripted(4, length=3, num_workers=2)
    yield env
    env.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(
    st.sampled_from(["step", "bad_step", "reset", "mask", "send", "recv"]),
    st.lists(st.sampled_from([0, 1, 5, -1, 6, 2**40]), min_size=0, max_size=5),
    st.sampled_from(["int64", "float32", "bool", "int8"]),
), min_size=1, max_size=10))
def test_random_call_sequences_on_the_process_backend(fuzz_env, calls):
    env = fuzz_env
    env.reset(seed=0)
    for name, values, dtype in calls:
        try:
            if name == "step":
                env.step(np.zeros(4, dtype=np.int64))
            elif name == "bad_step":
                env.step(np.array(values, dtype=dtype))
            elif name == "reset":
                env.reset(seed=values[0] if values else None)
            elif name == "mask":
                env.reset(options={"reset_mask": np.array(values[:4], dtype=bool)})
            elif name == "send":
                env.send(np.array(values, dtype=dtype))
            else:
                env.recv()
        except (TypeError, ValueError, OverflowError, fastbatch.AsyncStateError):
            pass
        except RuntimeError as exc:
            assert "reset" in str(exc)
    assert not env.closed
    env.reset()
    obs, *_ = env.step(np.zeros(4, dtype=np.int64))  # still usable
    assert obs.shape == (4, 2)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_numeric_infos_travel_through_shared_memory_and_match_gymnasium(mode):
    fns = [lambda: process_envs.NumericInfoEnv(7)] * 5
    env = fastbatch.make(fns, backend="process", num_workers=2, autoreset_mode=mode)
    ref = SyncVectorEnv(fns, autoreset_mode=mode)
    obs, info = env.reset(seed=4)
    robs, rinfo = ref.reset(seed=4)
    np.testing.assert_array_equal(obs, robs)
    assert info.keys() == rinfo.keys()
    rng = np.random.default_rng(0)
    shared, done = 0, np.zeros(5, dtype=bool)
    for t in range(40):
        if mode == AutoresetMode.DISABLED and done.any():
            obs, info = env.reset(seed=t, options={"reset_mask": done})
            robs, rinfo = ref.reset(seed=t, options={"reset_mask": done})
            done[:] = False
        else:
            actions = rng.uniform(-1, 1, (5, 1)).astype(np.float32)
            obs, _, te, tr, info = env.step(actions)
            robs, _, rte, rtr, rinfo = ref.step(actions)
            np.testing.assert_array_equal(te, rte)
            done = te | tr
            shared += int(env._v["control"][1, 4] == 2)  # HAS_INFO of worker 1: INFO_SHARED
        np.testing.assert_array_equal(obs, robs)
        info.pop("episode", None), info.pop("_episode", None)
        assert info.keys() == rinfo.keys(), t
        for key, value in rinfo.items():
            if key == "final_obs":
                for a, b in zip(info[key], value):
                    np.testing.assert_array_equal(a, b)
            elif isinstance(value, dict):
                assert info[key].keys() == value.keys()
                for k2 in value:
                    np.testing.assert_array_equal(info[key][k2], value[k2])
                    assert info[key][k2].dtype == value[k2].dtype
            else:
                np.testing.assert_array_equal(info[key], value)
                assert info[key].dtype == value.dtype, key
    assert shared > 10
    env.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["f64", "int", "bool", "f32", "i8"])), min_size=1, max_size=6),
       st.integers(0, 3))
def test_block_info_fast_path_equals_entry_by_entry(rows_and_types, first):
    from fastbatch.vector import add_info, block_info

    makers = {"f64": np.float64, "int": int, "bool": bool, "f32": np.float32, "i8": np.int8}
    entries = []
    for k, (present, kind) in enumerate(rows_and_types):
        if present:
            entries.append((first + k, None, {"a": makers[kind](k + 1), "b": float(k)}))
    rows = len(rows_and_types)
    expected: dict = {}
    for i, _, info in entries:
        expected = add_info(expected, info, i - first, rows)
    got = block_info(entries, None, first, rows)
    assert got.keys() == expected.keys()
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
        assert got[key].dtype == expected[key].dtype


def test_results_never_change_behind_the_caller_and_dropped_ones_are_reused():
    env = scripted(4, length=100, num_workers=2)
    env.reset()
    kept = env.step(np.zeros(4, dtype=np.int64))
    snapshot = [a.copy() for a in kept[:4]]
    for _ in range(5):
        env.step(np.ones(4, dtype=np.int64))
    for a, b in zip(kept[:4], snapshot):
        np.testing.assert_array_equal(a, b)
        assert a.ctypes.data % 64 == 0
    addresses = {env.step(np.zeros(4, dtype=np.int64))[0].ctypes.data for _ in range(20)}
    assert len(addresses) <= 2  # dropped results are recycled: no allocation per step
    obs = env.step(np.zeros(4, dtype=np.int64))[0]
    row, flat = obs[1], obs.reshape(-1)  # views hold the buffer, not the array
    expected = row.copy()
    del obs
    for _ in range(3):
        env.step(np.ones(4, dtype=np.int64))
    np.testing.assert_array_equal(row, expected)
    np.testing.assert_array_equal(flat[2:4], expected)
    env.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_restart_replaces_a_dead_worker_and_truncates_its_episodes(mode):
    env = scripted(4, length=50, num_workers=2, restart=True, autoreset_mode=mode)
    env.reset(seed=0)
    env.step(np.zeros(4, dtype=np.int64))
    old = env._processes[1].pid
    obs, reward, term, trunc, info = env.step(np.array([0, 0, 4, 0]))  # env 2 segfaults
    assert env.restarts == 1 and env._processes[1].pid != old and not env.closed
    np.testing.assert_array_equal(obs[:2], [[2, 0], [2, 0]])  # the other block stepped normally
    np.testing.assert_array_equal(obs[2:, 0], [0, 0])  # fresh episodes
    np.testing.assert_array_equal(trunc, [False, False, True, True])
    np.testing.assert_array_equal(term, [False] * 4)
    np.testing.assert_array_equal(reward[2:], [0, 0])
    np.testing.assert_array_equal(info["_worker_restarted"], [False, False, True, True])
    if mode == AutoresetMode.SAME_STEP:
        np.testing.assert_array_equal(info["_final_obs"], [False, False, True, True])
    if mode == AutoresetMode.DISABLED:
        with pytest.raises(ValueError, match="env 2 has ended"):
            env.step(np.zeros(4, dtype=np.int64))
        env.reset(options={"reset_mask": np.array([False, False, True, True])})
    obs, reward, term, trunc, info = env.step(np.zeros(4, dtype=np.int64))
    expected_t = 0 if mode == AutoresetMode.NEXT_STEP else 1  # NEXT_STEP: the autoreset step
    np.testing.assert_array_equal(obs[2:, 0], [expected_t, expected_t])
    np.testing.assert_array_equal(obs[:2, 0], [3, 3])
    for _ in range(10):
        env.step(np.zeros(4, dtype=np.int64))
    env.close()


def test_restart_in_async_mode_and_when_the_envs_cannot_be_rebuilt(tmp_path):
    env = scripted(4, length=50, num_workers=2, restart=True, batch_size=2)
    env.reset()
    env.send(np.array([0, 0, 3, 0]))  # env 2 calls os._exit
    seen = set()
    for _ in range(2):
        _, _, _, trunc, info = env.recv()
        seen.add(tuple(info["env_id"]))
        if tuple(info["env_id"]) == (2, 3):
            np.testing.assert_array_equal(trunc, [True, True])
            np.testing.assert_array_equal(info["worker_restarted"], [True, True])
    assert seen == {(0, 1), (2, 3)} and env.restarts == 1
    env.close()

    marker = str(tmp_path / "built")
    once = fastbatch.make([lambda: process_envs.RestartOnceEnv(marker)], backend="process", restart=True)
    once.reset()
    with pytest.raises(fastbatch.WorkerDiedError, match="could not be restarted"):
        once.step(np.array([4]))
    assert once.closed


def test_workers_import_factories_with_the_callers_sys_path(tmp_path, monkeypatch):
    package = tmp_path / "userenvs"
    package.mkdir()
    (package / "my_envs.py").write_text(textwrap.dedent(
        """
        import gymnasium, numpy as np
        class Tiny(gymnasium.Env):
            observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
            action_space = gymnasium.spaces.Discrete(2)
            def reset(self, *, seed=None, options=None):
                return np.zeros(1, np.float32), {}
            def step(self, action):
                return np.ones(1, np.float32), 1.0, False, False, {}
        """
    ))
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.chdir(tmp_path)  # the worker's own sys.path[0] (cwd) does not hold my_envs
    import my_envs

    with fastbatch.make(my_envs.Tiny, 2, backend="process", num_workers=2) as env:
        env.reset()
        assert env.step(np.zeros(2, dtype=np.int64))[1].tolist() == [1.0, 1.0]


LIFECYCLE_ERRORS = (TypeError, ValueError, fastbatch.AsyncStateError, fastbatch.ClosedEnvError, fastbatch.EnvError)

lifecycle_calls = st.lists(st.tuples(
    st.sampled_from(["step", "bad_step", "reset", "mask", "send", "recv", "close", "kill_worker"]),
    st.lists(st.sampled_from([0, 1, -1, 6, 2**40, 0.5]), min_size=0, max_size=5),
    st.sampled_from(["int64", "float64", "bool", "uint8"]),
), min_size=0, max_size=8)


INVALID_MAKE = {
    "source": ["bad_id", "not_callable"], "num_envs": [-1, 0, 2.0, "2", True], "num_workers": [-1, 0, 9, 1.5, "2"],
    "batch_size": [0, -1, 9, 3], "autoreset_mode": ["bogus", 3], "in_parent": ["yes", 1], "restart": [1, None],
    "seed": [-1, 2**70, "x"], "start_timeout": [0.0, -1.0, float("nan"), "1"],
}


@st.composite
def make_arguments(draw):
    """Consistent make() arguments (sync, or async on whole blocks), then at most one of them
    replaced by an invalid value, so that most examples get to run."""
    num_envs = draw(st.sampled_from([2, 4]))
    asynchronous = draw(st.booleans())
    args = {
        "source": draw(st.sampled_from(["id", "factory", "list"])),
        "num_envs": num_envs,
        "num_workers": 2 if asynchronous else draw(st.sampled_from([None, 1, 2])),
        "batch_size": num_envs // 2 if asynchronous else None,
        "autoreset_mode": draw(st.sampled_from(["next_step", "same_step", "disabled"])),
        "in_parent": False if asynchronous else draw(st.sampled_from([None, True, False])),
        "restart": draw(st.booleans()),
        "seed": draw(st.sampled_from([None, 0, 5])),
        "start_timeout": 60.0,
    }
    broken = draw(st.sampled_from([None, None, None, *INVALID_MAKE]))
    if broken is not None:
        args[broken] = draw(st.sampled_from(INVALID_MAKE[broken]))
    return args


@settings(max_examples=int(os.environ.get("FASTBATCH_FUZZ_EXAMPLES", 120)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(args=make_arguments(), calls=lifecycle_calls)
def test_random_process_lifecycles_end_clean(args, calls):
    """make / reset / step / send / recv / close (and a killed worker) with random, often invalid,
    arguments: every call works or raises a documented error, and once closed no worker is left."""
    source, num_envs = args.pop("source"), args.pop("num_envs")
    count = num_envs if isinstance(num_envs, int) and not isinstance(num_envs, bool) and 0 < num_envs < 5 else 2
    env_arg = {
        "id": "CartPole-v1", "factory": lambda: ScriptedEnv(3), "bad_id": "NoSuchEnv-v9",
        "list": [lambda: ScriptedEnv(3)] * count, "not_callable": [1, 2],
    }[source]
    try:
        env = fastbatch.make(env_arg, num_envs, backend="process", **args)
    except (TypeError, ValueError) as exc:
        event(f"make raised {type(exc).__name__}")
        return
    event("made")
    pids = [p.pid for p in env._processes if p]
    n = env.num_envs
    for name, values, dtype in calls:
        try:
            if name == "step":
                if env.batch_size < n:
                    env.send(np.zeros(env.batch_size, dtype=np.int64))
                    env.recv()
                else:
                    env.step(np.zeros(n, dtype=np.int64))
            elif name == "bad_step":
                with np.errstate(all="ignore"):
                    env.step(np.array(values, dtype=np.float64).astype(dtype))
            elif name == "reset":
                env.reset(seed=values[0] if values else None)
            elif name == "mask":
                env.reset(options={"reset_mask": np.array(values[:n], dtype=bool)})
            elif name == "send":
                with np.errstate(all="ignore"):
                    env.send(np.array(values, dtype=np.float64).astype(dtype, casting="unsafe"))
            elif name == "recv":
                env.recv()
            elif name == "close":
                env.close()
            elif env._processes and env._processes[-1] is not None and env._processes[-1].poll() is None:
                os.kill(env._processes[-1].pid, signal.SIGKILL)
                env._processes[-1].wait(timeout=5)
        except LIFECYCLE_ERRORS:
            pass
        except RuntimeError as exc:  # documented: step before reset, after an env error
            assert "reset" in str(exc), exc
    env.close()
    assert env.closed
    deadline = time.monotonic() + 5
    while pids_alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_alive(pids) == []


def test_a_restart_during_reset_reports_no_stale_episode_statistics(tmp_path):
    marker = str(tmp_path / "crash")
    fns = [lambda: ScriptedEnv(1), lambda: process_envs.CrashOnResetEnv(marker, 2)]
    env = fastbatch.make(fns, backend="process", num_workers=2, in_parent=False, restart=True)
    env.reset()
    env.step(np.zeros(2, dtype=np.int64))  # env 0 ends
    info = env.step(np.zeros(2, dtype=np.int64))[4]  # env 1 ends (env 0 autoresets)
    np.testing.assert_array_equal(info["_episode"], [False, True])
    open(marker, "w").close()
    obs, info = env.reset()  # env 1's worker dies in reset and is replaced
    assert env.restarts == 1 and info["_worker_restarted"].tolist() == [False, True]
    info = env.step(np.zeros(2, dtype=np.int64))[4]  # env 0 ends; env 1 has not
    np.testing.assert_array_equal(info["_episode"], [True, False])
    env.close()


def test_restart_with_in_parent_replaces_the_remote_block():
    env = scripted(4, length=50, num_workers=2, in_parent=True, restart=True)
    env.reset(seed=1)
    assert env._processes[0] is None
    _, _, _, trunc, info = env.step(np.array([0, 0, 3, 0]))  # env 2 (the worker's block) exits
    assert env.restarts == 1 and not env.closed
    np.testing.assert_array_equal(trunc, [False, False, True, True])
    np.testing.assert_array_equal(info["_worker_restarted"], [False, False, True, True])
    for _ in range(5):
        env.step(np.zeros(4, dtype=np.int64))
    env.close()

"""The process backend's workers: death, restart, Ctrl-C, the caller's sys.path, nothing left in
/dev/shm or running after close, and random lifecycles (fuzzed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import fastbatch
from tests.envs import CrashOnResetEnv, RestartOnceEnv, ScriptedEnv, scripted, worker_processes

pytestmark = pytest.mark.engine


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


@pytest.mark.parametrize("action, how", [(3, "exit code 3"), (4, "signal 11")])
def test_a_dead_worker_is_reported_quickly_and_the_env_closes(action, how):
    env = scripted(4, num_workers=2)
    env.reset()
    pids = [p.pid for p in worker_processes(env) if p]
    start = time.monotonic()
    with pytest.raises(
        fastbatch.WorkerDiedError, match=f"worker 1 \\(envs 2..3\\) died \\({how}\\)"
    ):
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
    pids = [p.pid for p in worker_processes(env) if p]
    assert set(os.listdir("/dev/shm")) == before  # the segment is an anonymous memfd
    env.close()
    assert pids_alive(pids) == []
    with pytest.raises(fastbatch.ClosedEnvError):
        env.step(np.zeros(4, dtype=np.int64))


def children() -> set[int]:
    """The pids of this process's live children (every thread's, from /proc)."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            pids.update(int(pid) for pid in f.read().split())
    return set(pids_alive(pids))


def _fails_in_the_caller():
    raise RuntimeError("env 0 cannot be built")


def test_a_block_the_caller_cannot_build_leaves_no_worker_running():
    """The workers start before the caller builds its own block (worker_set.py): when that
    build fails, make raises the env's error and the workers it had started end."""
    before = children()
    fns = [_fails_in_the_caller] + [lambda: ScriptedEnv()] * 3
    with pytest.raises(RuntimeError, match="env 0 cannot be built"):
        fastbatch.ProcessVectorEnv(fns, num_workers=2, in_parent=True)
    deadline = time.monotonic() + 10
    while children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children() - before == set()


def test_workers_die_with_a_killed_parent(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            """
        import sys, time, fastbatch
        env = fastbatch.make("CartPole-v1", 4, backend="process", num_workers=2, in_parent=False)
        env.reset()
        print(" ".join(str(pid) for pid in env.worker_pids if pid), flush=True)
        time.sleep(60)
        """
        )
    )  # no `if __name__ == "__main__"` guard: workers never re-import the caller's script
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


@pytest.mark.parametrize(
    "mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]
)
def test_restart_replaces_a_dead_worker_and_truncates_its_episodes(mode):
    env = scripted(4, length=50, num_workers=2, restart=True, autoreset_mode=mode)
    env.reset(seed=0)
    env.step(np.zeros(4, dtype=np.int64))
    old = worker_processes(env)[1].pid
    obs, reward, term, trunc, info = env.step(np.array([0, 0, 4, 0]))  # env 2 segfaults
    assert env.restarts == 1 and worker_processes(env)[1].pid != old and not env.closed
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
    once = fastbatch.make([lambda: RestartOnceEnv(marker)], backend="process", restart=True)
    once.reset()
    with pytest.raises(fastbatch.WorkerDiedError, match="could not be restarted"):
        once.step(np.array([4]))
    assert once.closed


def test_a_restart_during_reset_reports_no_stale_episode_statistics(tmp_path):
    marker = str(tmp_path / "crash")
    fns = [lambda: ScriptedEnv(1), lambda: CrashOnResetEnv(marker, 2)]
    env = fastbatch.make(
        fns, backend="process", num_workers=2, in_parent=False, restart=True, stats_key="episode"
    )
    env.reset()
    env.step(np.zeros(2, dtype=np.int64))  # env 0 ends
    info = env.step(np.zeros(2, dtype=np.int64))[4]  # env 1 ends (env 0 autoresets)
    np.testing.assert_array_equal(info["_episode"], [False, True])
    open(marker, "w").close()
    _, info = env.reset()  # env 1's worker dies in reset and is replaced
    assert env.restarts == 1 and info["_worker_restarted"].tolist() == [False, True]
    info = env.step(np.zeros(2, dtype=np.int64))[4]  # env 0 ends; env 1 has not
    np.testing.assert_array_equal(info["_episode"], [True, False])
    env.close()


def test_restart_with_in_parent_replaces_the_remote_block():
    env = scripted(4, length=50, num_workers=2, in_parent=True, restart=True)
    env.reset(seed=1)
    assert worker_processes(env)[0] is None
    _, _, _, trunc, info = env.step(np.array([0, 0, 3, 0]))  # env 2 (the worker's block) exits
    assert env.restarts == 1 and not env.closed
    np.testing.assert_array_equal(trunc, [False, False, True, True])
    np.testing.assert_array_equal(info["_worker_restarted"], [False, False, True, True])
    for _ in range(5):
        env.step(np.zeros(4, dtype=np.int64))
    env.close()


def test_workers_import_factories_with_the_callers_sys_path(tmp_path, monkeypatch):
    package = tmp_path / "userenvs"
    package.mkdir()
    (package / "my_envs.py").write_text(
        textwrap.dedent(
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
        )
    )
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.chdir(tmp_path)  # the worker's own sys.path[0] (cwd) does not hold my_envs
    import my_envs

    with fastbatch.make(my_envs.Tiny, 2, backend="process", num_workers=2) as env:
        env.reset()
        assert env.step(np.zeros(2, dtype=np.int64))[1].tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def fuzz_env():
    env = scripted(4, length=3, num_workers=2)
    yield env
    env.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(["step", "bad_step", "reset", "mask", "send", "recv"]),
            st.lists(st.sampled_from([0, 1, 5, -1, 6, 2**40]), min_size=0, max_size=5),
            st.sampled_from(["int64", "float32", "bool", "int8"]),
        ),
        min_size=1,
        max_size=10,
    )
)
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


LIFECYCLE_ERRORS = (
    TypeError,
    ValueError,
    fastbatch.AsyncStateError,
    fastbatch.ClosedEnvError,
    fastbatch.EnvError,
)


lifecycle_calls = st.lists(
    st.tuples(
        st.sampled_from(
            ["step", "bad_step", "reset", "mask", "send", "recv", "close", "kill_worker"]
        ),
        st.lists(st.sampled_from([0, 1, -1, 6, 2**40, 0.5]), min_size=0, max_size=5),
        st.sampled_from(["int64", "float64", "bool", "uint8"]),
    ),
    min_size=0,
    max_size=8,
)


INVALID_MAKE = {
    "source": ["bad_id", "not_callable"],
    "num_envs": [-1, 0, 2.0, "2", True],
    "num_workers": [-1, 0, 9, 1.5, "2"],
    "batch_size": [0, -1, 9, 3],
    "autoreset_mode": ["bogus", 3],
    "in_parent": ["yes", 1],
    "restart": [1, None],
    "seed": [-1, 2**70, "x"],
    "start_timeout": [0.0, -1.0, float("nan"), "1"],
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


@settings(
    max_examples=int(os.environ.get("FASTBATCH_FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(args=make_arguments(), calls=lifecycle_calls)
def test_random_process_lifecycles_end_clean(args, calls):
    """make / reset / step / send / recv / close (and a killed worker) with random, often invalid,
    arguments: every call works or raises a documented error, and once closed no worker is left."""
    source, num_envs = args.pop("source"), args.pop("num_envs")
    count = (
        num_envs
        if isinstance(num_envs, int) and not isinstance(num_envs, bool) and 0 < num_envs < 5
        else 2
    )
    env_arg = {
        "id": "CartPole-v1",
        "factory": lambda: ScriptedEnv(3),
        "bad_id": "NoSuchEnv-v9",
        "list": [lambda: ScriptedEnv(3)] * count,
        "not_callable": [1, 2],
    }[source]
    try:
        env = fastbatch.make(env_arg, num_envs, backend="process", **args)
    except (TypeError, ValueError) as exc:
        event(f"make raised {type(exc).__name__}")
        return
    event("made")
    pids = [p.pid for p in worker_processes(env) if p]
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
            elif (
                worker_processes(env)
                and (last := worker_processes(env)[-1]) is not None
                and last.poll() is None
            ):
                os.kill(last.pid, signal.SIGKILL)
                last.wait(timeout=5)
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

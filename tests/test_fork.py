"""Fork safety and pickling, both backends and both agent batches (they share the contract,
`fastbatch._base.BatchVectorEnv`): an env inherited through fork refuses every call with
an error naming fork, closing or collecting it in the child exits cleanly and leaves the parent's
threads and worker processes alone, and the parent keeps stepping the same trajectory. Pickling
raises a TypeError that says what to send instead."""

from __future__ import annotations

import copy
import gc
import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap

import cloudpickle
import numpy as np
import pytest

import fastbatch

# Python 3.12+ warns when a multi-threaded process forks (the native pool's threads, the
# process backend's none): forking is what these tests are about.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to "
    r"deadlocks in the child\.:DeprecationWarning"
)

FORK = multiprocessing.get_context("fork")
BACKENDS = {
    "native": dict(num_workers=2),
    "native-async": dict(num_workers=2, batch_size=2),
    "process": dict(backend="process", num_workers=2, in_parent=False),
    # Batches of (env, agent) rows: 2 envs of 3 agents, 6 rows (fastbatch.make_agents).
    "native-agents": dict(num_workers=2),
    "native-agents-async": dict(num_workers=2, batch_size=1),
    "process-agents": dict(num_workers=2, in_parent=False),
}
AGENTS = {"native-agents": "Spread-v0", "native-agents-async": "Spread-v0"}
AGENTS["process-agents"] = "fastbatch.agents.spread"  # Spread-v0's PettingZoo twin


def _make(name: str):
    if name in AGENTS:
        return fastbatch.make_agents(AGENTS[name], 2, seed=3, **BACKENDS[name])
    return fastbatch.make("CartPole-v1", 4, seed=3, **BACKENDS[name])


def _envs(env) -> int:
    """The envs of a batch (a batch of agents has num_agents rows each)."""
    return getattr(env, "num_parallel_envs", env.num_envs)


def _in_child(target, *args) -> tuple[int, object]:
    """Runs `target(*args)` in a forked child; returns its exit code and what it sent back."""
    receive, send = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_report, args=(send, target, *args))
    child.start()
    send.close()
    child.join(60)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail(f"{target.__name__} hung in the forked child")
    message = receive.recv() if receive.poll() else None
    return child.exitcode, message


def _report(send, target, *args) -> None:
    try:
        send.send(("ok", target(*args)))
    except BaseException as exc:
        send.send((type(exc).__name__, str(exc)))


def _round(env, actions) -> list[np.ndarray]:
    """Steps every env once: (obs, reward, terminated, truncated) in env order (async too)."""
    if not env.is_async:
        return list(env.step(actions)[:4])
    env.send(actions, np.arange(_envs(env)))
    parts = [env.recv() for _ in range(_envs(env) // env.batch_size)]
    order = np.argsort(np.concatenate([p[4]["env_id"] for p in parts]))
    rows = env.num_envs // _envs(env)  # agents: each env's rows stay together, env-major
    order = (order[:, None] * rows + np.arange(rows)).ravel()
    return [np.concatenate([p[k] for p in parts])[order] for k in range(4)]


def _step(env):
    env.step(np.zeros(env.num_envs, np.int64))


def _reset(env):
    env.reset(seed=1)


def _close(env):
    env.close()
    env.close()  # twice is harmless here too
    return env.closed


def _collect(holder):
    holder.pop()  # the last reference: the env is collected in the child
    gc.collect()


def _make_own_then_close_inherited(name, env):
    own = _make(name)
    own.reset(seed=3)
    env.close()
    _, reward, *_ = _round(own, np.zeros(own.num_envs, np.int64))
    own.close()
    return float(reward.sum()), own.num_envs


def _check_parent_unharmed(name: str, env, actions) -> None:
    """The inherited env still steps in the parent, exactly like a twin that was never forked."""
    twin = _make(name)
    try:
        obs, _ = env.reset(seed=7)
        twin_obs, _ = twin.reset(seed=7)
        np.testing.assert_array_equal(obs, twin_obs)
        for a in actions[:, : env.num_envs]:
            for x, y in zip(_round(env, a), _round(twin, a)):
                np.testing.assert_array_equal(x, y)
        if name.startswith("process"):
            for pid in env.worker_pids:
                os.kill(pid, 0)  # still alive: nothing signalled them
    finally:
        twin.close()


ACTIONS = np.random.default_rng(0).integers(0, 2, size=(30, 6))  # rows: 4 envs, or 6 agents


@pytest.mark.parametrize("name", list(BACKENDS))
@pytest.mark.parametrize("call", [_step, _reset])
def test_a_forked_child_gets_a_clear_error_and_the_parent_keeps_working(name, call):
    env = _make(name)
    env.reset(seed=0)
    _round(env, np.zeros(env.num_envs, np.int64))
    code, (kind, message) = _in_child(call, env)
    assert code == 0
    assert kind == "RuntimeError", message
    assert "cannot be used after fork" in message and f"process {os.getpid()}" in message
    assert "make a new env in the child" in message.lower()
    _check_parent_unharmed(name, env, ACTIONS)
    env.close()


@pytest.mark.parametrize("name", list(BACKENDS))
def test_closing_the_inherited_env_in_the_child_exits_cleanly(name):
    env = _make(name)
    env.reset(seed=0)
    assert _in_child(_close, env) == (0, ("ok", True))
    _check_parent_unharmed(name, env, ACTIONS)
    env.close()


@pytest.mark.parametrize("name", list(BACKENDS))
def test_collecting_the_inherited_env_in_the_child_exits_cleanly(name):
    holder = [_make(name)]
    holder[0].reset(seed=0)
    assert _in_child(_collect, holder) == (0, ("ok", None))
    _check_parent_unharmed(name, holder[0], ACTIONS)
    holder[0].close()


@pytest.mark.parametrize("name", list(BACKENDS))
def test_the_child_makes_its_own_env_and_closes_the_inherited_one(name):
    env = _make(name)
    env.reset(seed=0)
    code, (kind, result) = _in_child(_make_own_then_close_inherited, name, env)
    assert (code, kind) == (0, "ok"), result
    reward, rows = result
    assert rows == env.num_envs
    if name not in AGENTS:
        assert reward == env.num_envs  # CartPole pays 1 a step
    _check_parent_unharmed(name, env, ACTIONS)
    env.close()


def _destroy_pool_only(env):
    env.closed = True  # skip Python's close path: only _VectorPool's destructor is left
    del env._pool
    gc.collect()


@pytest.mark.parametrize("name", ["native", "native-agents"])
def test_the_pool_destructor_abandons_a_pool_inherited_through_fork(name):
    # The safety net for children that never run the env's __del__ (interpreter teardown):
    # destroying an inherited _VectorPool must not join the parent's threads (that aborted).
    env = _make(name)
    env.reset(seed=0)
    assert _in_child(_destroy_pool_only, env) == (0, ("ok", None))
    _check_parent_unharmed(name, env, ACTIONS)
    env.close()


CHILD_EXITS_WITH_ENVS_ALIVE = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import fastbatch
    native = fastbatch.make("CartPole-v1", 4, num_workers=2, seed=0, autoreset_mode="same_step")
    process = fastbatch.make("CartPole-v1", 4, backend="process", num_workers=2, in_parent=False)
    for env in (native, process):
        env.reset(seed=0)
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # a normal interpreter exit with both inherited envs alive
    _, status = os.waitpid(pid, 0)
    for env in (native, process):
        env.step(np.zeros(4, np.int64))
        env.close()
    print("child status", status)
    """
)


def test_a_child_that_exits_with_inherited_envs_alive_exits_cleanly():
    done = subprocess.run(
        [sys.executable, "-c", CHILD_EXITS_WITH_ENVS_ALIVE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "child status 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["native", "process", "native-agents", "process-agents"])
@pytest.mark.parametrize(
    "dump", [pickle.dumps, cloudpickle.dumps, copy.copy, copy.deepcopy], ids=lambda f: f.__name__
)
def test_pickling_says_what_to_send_instead(name, dump):
    env = _make(name)
    with pytest.raises(TypeError, match=r"cannot pickle or copy a \w*VectorEnv") as error:
        dump(env)
    assert "fastbatch.make" in str(error.value) and "factories" in str(error.value)
    env.close()

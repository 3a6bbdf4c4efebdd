"""Data-parallel BatchPPO (distribute.py, launch.py) with 2 local workers: identical
parameters and statistics on every worker, one worker equal to the plain trainer, the launched
run's files and results, and a killed worker ending the run with an error that names it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")  # installed by the test extra

from fastbatch.ppo import resolve
from fastbatch.ppo.distribute import Cluster
from fastbatch.ppo.launch import free_ports

ROOT = Path(__file__).resolve().parents[1]
# Tiny runs: small nets and batches, both normalisers on (Pendulum), 1 TF thread each.
TINY = {
    "num_envs": 4,
    "rollout_steps": 16,
    "minibatches": 2,
    "epochs": 2,
    "policy_layers": (16,),
    "value_layers": (16,),
    "eval_episodes": 1,
    "checkpoint_every": 2,
}
WORKER_ENV = {
    **os.environ,
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "PYTHONPATH": str(ROOT),
}


def _agent_worker(out: str, workers: list[str], rank: int, config_json: str, updates: int):
    """One worker (or, with no `workers`, the plain trainer) doing what `train` does for
    `updates` updates; saves every agent variable and the last rollout's observations."""
    import tensorflow as tf

    from fastbatch.ppo import PPOConfig
    from fastbatch.ppo.agent import Agent
    from fastbatch.ppo.distribute import WORKER_SEED_STRIDE, LocalSync, connect
    from fastbatch.ppo.train import make_env

    config = PPOConfig.from_json(config_json)
    tf.random.set_seed(config.seed)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    sync = connect(Cluster(tuple(workers), rank, 60.0)) if workers else LocalSync()
    agent = Agent(config, make_env(config), sync=sync)
    sync.broadcast([v for v in agent.variables if v is not agent.running_return])
    agent.start(config.seed + WORKER_SEED_STRIDE * sync.rank)
    threads = []  # the process's threads after each update (Linux)
    for _ in range(updates):
        agent.update(agent.collect())
        tasks = Path("/proc/self/task")
        threads.append(len(list(tasks.iterdir())) if tasks.exists() else 0)
    shared = [v for v in agent.variables if v is not agent.running_return]
    saved = {f"{i}:{v.name}": v.numpy() for i, v in enumerate(shared)}
    for name in ("obs_rms", "ret_rms"):
        for part in ("mean", "var", "count"):
            saved[f"{name}.{part}"] = getattr(getattr(agent, name), part).numpy()
    # Each worker's own: its envs' observations and discounted returns.
    own = {"obs": agent.rollout.arrays["obs"], "running_return": agent.running_return.numpy()}
    own["threads"] = np.array(threads)
    if sync.world_size == 2:
        own["loop_means"] = _means_in_nested_loops(sync)
    np.savez(out, **own, **saved)


def _means_in_nested_loops(sync):
    """All-reduces from inside two nested while loops (as the update's epochs and minibatches
    issue them), rank 1 lagging behind at every step: each must meet its own iteration's peer.
    Returns the mean of ``(10 * epoch + k) * (rank + 1)`` for each (epoch, k)."""
    import tensorflow as tf

    def lag(x):
        if sync.rank == 1:
            time.sleep(0.005)
        return x

    @tf.function(autograph=False)
    def run():
        def epoch_body(e, out):
            def step_body(k, out):
                value = tf.cast(10 * e + k, tf.float32) * float(sync.rank + 1) * tf.ones([999])
                value = tf.numpy_function(lag, [value], tf.float32, stateful=True)
                (mean,) = sync.mean([tf.ensure_shape(value, [999])], 60)  # a key of its own
                return k + 1, out.write(3 * e + k, mean[0])

            return (e + 1, tf.while_loop(lambda k, _: k < 3, step_body, (0, out))[1])

        start = (0, tf.TensorArray(tf.float32, 12))
        return tf.while_loop(lambda e, _: e < 4, epoch_body, start)[1].stack()

    return np.stack([run().numpy() for _ in range(2)])


def _spawn(tmp_path: Path, workers: list[str], rank: int, config, updates: int):
    out = tmp_path / f"worker{rank}-{len(workers)}.npz"
    code = (
        "import sys, json; from tests.test_distribute import _agent_worker; "
        "_agent_worker(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4], "
        "int(sys.argv[5]))"
    )
    args = [str(out), json.dumps(workers), str(rank), config.to_json(), str(updates)]
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=WORKER_ENV, cwd=ROOT)
    return proc, out


def _finish(procs) -> list[dict[str, np.ndarray]]:
    try:
        codes = [proc.wait(timeout=120) for proc, _ in procs]
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert codes == [0] * len(procs)
    return [dict(np.load(out)) for _, out in procs]


def _same_bits(a: dict, b: dict, skip=("obs", "running_return", "threads", "loop_means")):
    """Names of the arrays that differ in any bit."""
    return [k for k in a if k not in skip and a[k].tobytes() != b[k].tobytes()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Pendulum, 8 updates: two workers together; one worker alone; the plain trainer."""
    tmp = tmp_path_factory.mktemp("dist")
    config = resolve("pendulum", **TINY)
    pair = [f"localhost:{p}" for p in free_ports(1)] + [f"localhost:{free_ports(1)[0]}"]
    solo = [f"localhost:{free_ports(1)[0]}"]
    procs = [_spawn(tmp, pair, r, config, 8) for r in range(2)]
    procs += [_spawn(tmp, solo, 0, config, 8), _spawn(tmp, [], 0, config, 8)]
    two0, two1, one, plain = _finish(procs)
    return {"two": (two0, two1), "one": one, "plain": plain}


def test_two_workers_hold_bitwise_identical_parameters_and_statistics(runs):
    first, second = runs["two"]
    assert _same_bits(first, second) == []
    assert {"obs_rms.mean", "obs_rms.var", "ret_rms.var"} <= first.keys() and len(first) > 30
    # ... while each worker stepped its own envs (disjoint seeds).
    assert not np.array_equal(first["obs"], second["obs"])
    # and it learned: the weights moved from the shared start (checked against one worker).
    assert _same_bits(first, runs["one"]) != []


def test_all_reduces_in_loops_meet_their_own_iteration(runs):
    expected = np.array([(10 * e + k) * 1.5 for e in range(4) for k in range(3)], np.float32)
    for worker in runs["two"]:
        np.testing.assert_array_equal(worker["loop_means"], np.stack([expected, expected]))


def test_one_distributed_worker_equals_the_plain_trainer_bit_for_bit(runs):
    assert _same_bits(runs["one"], runs["plain"], skip=("threads",)) == []


def test_collectives_leave_no_thread_behind(runs):
    """TensorFlow parks a thread per collective with a timeout (for the timeout's length): the
    trainer's collectives have none, so a worker's threads do not grow with its updates."""
    for worker in runs["two"]:
        threads = worker["threads"]
        assert threads[-1] - threads[1] < 5, threads  # 7 collectives an update here


def test_statistics_merge_every_workers_batch(runs):
    """Two workers' observation statistics count both workers' samples."""
    (first, _), one = runs["two"], runs["one"]
    for name in ("obs_rms.count", "ret_rms.count"):
        assert first[name] == pytest.approx(2 * one[name] - 1e-4)


class _Recorded:
    """A sync that keeps what one worker would gather (and gathers it alone)."""

    world_size, rank = 1, 0

    def gather(self, x, key):
        self.sent = x
        return x[None]


class _PairedWith(_Recorded):
    """Worker 0 of two: its gather returns its own tensor and what worker 1 sent."""

    def __init__(self, other: _Recorded):
        self.other = other

    def gather(self, x, key):
        return np.stack([x, self.other.sent]).astype(np.float32)


def test_each_global_minibatch_normalises_its_advantages_over_every_workers_part():
    """Two workers' k-th minibatches of an epoch are one minibatch: its advantages' mean and
    std are those of the union, not of each worker's half (minibatches.py)."""
    import tensorflow as tf

    from fastbatch.ppo.minibatches import advantage_stats, shuffle_orders

    epochs, minibatches, units = 3, 4, 42  # 10 units a minibatch, 2 left out each epoch
    rng = np.random.default_rng(0)
    advs = [
        rng.normal(loc, scale, (2, units)).astype(np.float32) for loc, scale in ((0, 1), (3, 5))
    ]
    orders = [shuffle_orders(7, 0, rank, epochs, units) for rank in range(2)]
    first = _Recorded()
    advantage_stats(tf.constant(advs[1]), orders[1], minibatches, first)
    stats = advantage_stats(tf.constant(advs[0]), orders[0], minibatches, _PairedWith(first))
    assert stats.mean.shape == stats.std.shape == (epochs, minibatches)
    for e in range(epochs):
        for k in range(minibatches):
            union = np.concatenate(
                [a[:, o.numpy()[e]][:, 10 * k : 10 * k + 10].ravel() for a, o in zip(advs, orders)]
            )
            got = stats.at(e).at(k)
            np.testing.assert_allclose([got.mean, got.std], [union.mean(), union.std()], rtol=1e-5)
    # One worker's statistics are its minibatch's own, and one unshuffled minibatch is the batch.
    alone = advantage_stats(tf.constant(advs[0]), None, 1, _Recorded())
    np.testing.assert_allclose(
        [alone.mean[0, 0], alone.std[0, 0]], [advs[0].mean(), advs[0].std()], rtol=1e-5
    )


def test_the_logged_return_is_over_return_window_episodes_of_all_workers():
    """Not `return_window` of each worker (a longer, older window than one process logs): the
    newest of each worker in turn."""
    from fastbatch.ppo.distribute import newest_episodes

    nan = np.nan
    every = np.array(
        [
            [[nan, nan], [1.0, 10], [2.0, 20], [3.0, 30]],  # worker 0: 3 episodes, newest last
            [[11.0, 1], [12.0, 2], [13.0, 3], [14.0, 4]],  # worker 1
        ]
    )
    assert sorted(newest_episodes(every, 4)[:, 0]) == [2.0, 3.0, 13.0, 14.0]
    assert sorted(newest_episodes(every, 3)[:, 1]) == [4, 20, 30]
    # A worker that has finished none yet adds nothing.
    none = np.full((1, 4, 2), nan)
    assert sorted(newest_episodes(np.concatenate([none, every[:1]]), 4)[:, 0]) == [1, 2, 3]


def fastbatch_train(*args: str, timeout: float = 150.0) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "fastbatch", "train", "--quiet", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=WORKER_ENV, check=False
    )


def test_launched_workers_write_one_run_and_resume(tmp_path):
    logdir = tmp_path / "run"
    sets = [
        f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()
    ]
    done = fastbatch_train(
        "cartpole", "--workers", "2", "--steps", "256", "--logdir", str(logdir), *sets
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((logdir / "result.json").read_text())
    assert result["workers"] == 2 and result["global_batch_size"] == 2 * 4 * 16
    assert result["env_steps"] == 256 and result["updates"] == 2
    assert (logdir / "policy").is_dir() and (logdir / "checkpoints").is_dir()
    rows = (logdir / "progress.csv").read_text().split()
    assert rows[1].startswith("128,") and rows[2].startswith("256,")  # chief only, global steps
    assert sorted(p.name for p in (logdir / "workers").iterdir()) == ["worker-1.log"]
    more = fastbatch_train("--resume", str(logdir), "--workers", "2", "--steps", "384")
    assert more.returncode == 0, more.stderr
    result = json.loads((logdir / "result.json").read_text())
    assert result["env_steps"] == 384 and result["updates"] == 3
    # The same run continued in one process: the steps left at its batch (64) make 2 updates.
    alone = fastbatch_train("--resume", str(logdir), "--steps", "512")
    assert alone.returncode == 0, alone.stderr
    result = json.loads((logdir / "result.json").read_text())
    assert result["env_steps"] == 512 and result["updates"] == 5 and result["workers"] == 1


@pytest.mark.parametrize(
    ("then", "ends"),
    [("pass", True), ("d.cancel()", False), ("d.extend(30)", False), ("d.extend(0.1)", True)],
)
def test_the_deadline_ends_the_process_unless_moved_or_cancelled(then, ends):
    """The watchdog under the trainer (bindings/deadline.h): a C++ thread that writes its line
    and exits with its status, even while Python is busy in C code holding the GIL."""
    code = (
        "import time; from fastbatch import _core\n"
        "d = _core._Deadline(0.5, 'deadline passed', 75)\n"
        f"{then}\n"
        "end = time.monotonic() + 2\n"
        "while time.monotonic() < end: sum(range(10**5))\n"
        "print('alive')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    if ends:
        assert done.returncode == 75 and done.stderr.strip() == "deadline passed", done
        assert "alive" not in done.stdout
    else:
        assert done.returncode == 0 and done.stdout.strip() == "alive", done


@pytest.mark.parametrize("timeout", [0, -1.0, float("inf"), float("nan"), 2e9])
def test_a_cluster_timeout_is_positive_finite_seconds(timeout):
    with pytest.raises(ValueError, match="timeout must be positive seconds"):
        Cluster(("localhost:1",), 0, timeout)


@pytest.mark.parametrize("task", [0, 1])
def test_a_worker_whose_peer_never_starts_ends_within_its_timeout(tmp_path, task):
    """On a cluster the user starts, a peer that never starts (here: the other task) ends the
    worker after --timeout with an error saying what is missing; TensorFlow's registration
    wait alone would hold it (and the GIL) forever."""
    addresses = [f"localhost:{p}" for p in free_ports(2)]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"cluster": {"worker": addresses}}))
    started = time.monotonic()
    ended = fastbatch_train(
        "cartpole", "--cluster", str(cluster), "--task", str(task), "--timeout", "3",
        "--logdir", str(tmp_path / "run"), timeout=120,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert ended.returncode == 75, ended.stderr[-2000:]
    assert f"worker {task}: the cluster did not form in 3 s (--timeout)" in ended.stderr
    other = addresses[1 - task]
    assert f"{1 - task}: {other}" in ended.stderr
    assert 3 < elapsed < 60  # the start-up (imports) before the wait, then 3 s


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_worker_ends_the_run_naming_it_and_leaves_no_process(tmp_path):
    logdir = tmp_path / "run"
    cmd = [sys.executable, "-m", "fastbatch", "train", "cartpole", "--quiet", "--workers", "2"]
    cmd += ["--steps", "10000000", "--logdir", str(logdir)]
    launcher = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=WORKER_ENV
    )
    try:
        deadline = time.monotonic() + 90
        progress = logdir / "progress.csv"
        while not (progress.exists() and len(progress.read_text().split()) > 3):
            assert launcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        workers = _children(launcher.pid)
        assert len(workers) == 2
        victim = next(p for p in workers if '"rank": 1' in Path(f"/proc/{p}/cmdline").read_text())
        killed = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        _, stderr = launcher.communicate(timeout=30)
        took = time.monotonic() - killed
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode != 0
    assert f"worker 1 (pid {victim}) was killed by SIGKILL" in stderr, stderr
    assert took < 10, took
    assert not any(_alive(p) for p in workers)

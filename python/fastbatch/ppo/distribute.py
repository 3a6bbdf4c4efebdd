"""Data-parallel BatchPPO: what the trainer's graph exchanges between worker processes.

Each worker runs the whole trainer on its own envs (collection in-graph, the rollout op
locally) and keeps its own copy of every variable. The copies stay bitwise identical because
every worker starts from the chief's values (`broadcast`) and then applies the same updates:

- gradients: one all-reduce (mean) of all of a minibatch's gradients, packed into one vector,
  before clipping and Adam;
- the update's metrics (losses, KL, clip fraction): one all-reduce (mean), so KL adaptation
  reads the global KL;
- observation and return statistics: each worker's batch moments (mean, variance, count) are
  gathered and folded in rank order with Chan's parallel formula (normalize.py), so every
  worker holds the statistics of the union of all workers' batches;
- advantage statistics: the mean and variance of each minibatch that the worker will take in
  the update, gathered once an update, so a global minibatch's advantages are normalised with
  the statistics of the union of the workers' parts (minibatches.py);
- finished episodes: gathered for logging.

The collectives are TensorFlow's CollectiveReduceV2/CollectiveGatherV2 over gRPC (ring),
set up by `tf.distribute.MultiWorkerMirroredStrategy`. Ring reduction sums each chunk once
and then copies it to every worker, so all workers receive the same bits; gathers concatenate
in rank order. Two workers take the mean of a gather instead (one ring step, not two, for the
same bytes; `bench/allreduce.py` measures both), summed in rank order on each: the same bits
again. Each call site has its own fixed instance key (`Key`), and TensorFlow runs a
function's stateful ops in program order, so every worker issues the same collectives in the
same order. The coordination service's heartbeats (10 s) abort the collectives of a worker
whose peer died or vanished, and a watchdog ends a worker whose update has not completed for
``timeout`` seconds (a stalled peer). The collectives themselves carry no timeout: with one,
a worker's "collective_ops" threads grew by about one per collective (~170 a second on
Pendulum), each apparently parked for the timeout's length, until thread creation failed.

What stays each worker's own: its envs and their running returns, a recurrent core's per-env
states and its minibatch order (seeded with its rank).

`LocalSync` is the same interface for one process, without communication: the single-process
trainer computes what it always did (a one-worker cluster too, bit for bit: tested).

Seeds: worker ``rank`` steps env ``i`` with seed ``seed + rank * WORKER_SEED_STRIDE + i`` (plus
the trainer's per-checkpoint offset, ``1_000_003 * k``), so workers' envs never share a
seed for fewer than ~10^6 checkpoints; its actions are sampled with a per-rank offset that
makes the workers' samples those of one batch of ``world_size * num_envs`` envs.
"""

from __future__ import annotations

import enum
import json
import os
import re
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from fastbatch.watchdog import Deadline

__all__ = [
    "WORKER_SEED_STRIDE",
    "Cluster",
    "CollectiveSync",
    "Key",
    "LocalSync",
    "PeerLostError",
    "connect",
]

WORKER_SEED_STRIDE = 2**40
"""Env seeds of worker ``rank`` start at ``seed + rank * WORKER_SEED_STRIDE``."""

PEER_LOST_EXIT = 75
"""Exit status of a worker that stops because it lost contact with a peer (not its own fault)."""

_GROUP_KEY = 7919  # the trainer's collective group (MultiWorkerMirroredStrategy's own start at 1)


class Key(enum.IntEnum):
    """Instance keys: one per collective call site, the same on every worker. TensorFlow
    fixes a key's shape at its first use in a process: a key serves one shape."""

    GRADIENTS = 1
    METRICS = 2
    OBS_MOMENTS = 3
    RETURN_MOMENTS = 4
    EPISODES = 5
    ADVANTAGES = 6
    BROADCAST = 100  # + the index of the dtype group


class PeerLostError(RuntimeError):
    """A collective failed: a peer died, stalled past the timeout or cannot be reached."""


@dataclass(frozen=True)
class Cluster:
    """Where this worker sits: ``workers`` are "host:port" addresses in rank order (rank 0 is
    the chief, which alone writes the run's files); ``timeout`` (seconds) bounds the wait for
    every worker to join, the start-up after that and each update (the watchdog).

    Args:
        workers: Every worker's ``"host:port"``, in rank order.
        rank: This worker's index in ``workers``.
        timeout: Seconds (at most 1e9).

    Raises:
        ValueError: No workers, a rank outside them, or a timeout not in (0, 1e9].
    """

    workers: tuple[str, ...]
    rank: int
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if not self.workers:
            raise ValueError("a cluster needs at least one worker address")
        if not 0 <= self.rank < len(self.workers):
            raise ValueError(f"task index {self.rank} is not in 0..{len(self.workers) - 1}")
        if not 0 < self.timeout <= 1e9:  # finite: the deadline is a C++ clock
            raise ValueError(f"timeout must be positive seconds (at most 1e9), got {self.timeout}")

    @classmethod
    def from_tf_config(cls, text: str, rank: int | None = None, timeout: float = 300.0):
        """The cluster of a TF_CONFIG JSON text.

        Args:
            text: ``{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker",
                "index": i}}``.
            rank: Overrides the task index (needed when the text has none).
            timeout: As the class's.

        Returns:
            The `Cluster`.

        Raises:
            ValueError: Not such JSON, tasks other than workers, no rank, or a bad value.
        """
        try:
            data = json.loads(text)
            workers = tuple(data["cluster"]["worker"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                'a cluster is TF_CONFIG JSON: {"cluster": {"worker": ["host:port", ...]}, '
                f'"task": {{"type": "worker", "index": 0}}}} ({exc})'
            ) from None
        if set(data["cluster"]) != {"worker"}:
            raise ValueError(f"only 'worker' tasks are supported, got {sorted(data['cluster'])}")
        if rank is None:
            task = data.get("task", {})
            if "index" not in task:
                raise ValueError("the cluster gives no task index: pass --task")
            rank = int(task["index"])
        return cls(workers, rank, timeout)

    def tf_config(self) -> str:
        return json.dumps(
            {
                "cluster": {"worker": list(self.workers)},
                "task": {"type": "worker", "index": self.rank},
            }
        )


class LocalSync:
    """One process: every exchange is the identity."""

    world_size = 1
    rank = 0
    is_chief = True
    distributed = False

    def mean(self, tensors, key: Key):
        """The mean over workers of each tensor (float32) of the list."""
        del key
        return list(tensors)

    def gather(self, x, key: Key):
        """``[world_size, *x.shape]``: every worker's `x`, in rank order."""
        del key
        return x[None]

    def broadcast(self, variables) -> None:
        """Sets every worker's `variables` to the chief's."""

    def gather_episodes(self, returns, lengths, window: int):
        """The last `window` episodes over every worker, taken from each worker's newest in
        turn: (returns, lengths), oldest first."""
        return list(returns[-window:]), list(lengths[-window:])

    def beat(self) -> None:
        """An update completed (restarts the watchdog's clock)."""

    def close(self) -> None:
        """No more exchanges (stops the watchdog)."""


class CollectiveSync(LocalSync):
    """`LocalSync`'s interface over a cluster of worker processes (see the module docstring).
    Build it with `connect`, before any other TensorFlow op in the process."""

    distributed = True

    def __init__(self, cluster: Cluster, strategy, watchdog):
        self.cluster = cluster
        self.strategy = strategy  # keeps the server and the coordination service alive
        self.world_size = len(cluster.workers)
        self.rank = cluster.rank
        self.is_chief = cluster.rank == 0
        self._gather_fn = {}
        # Ends the process when no update completes for `cluster.timeout` seconds (a peer
        # stalled and left this worker blocked in a collective that nothing else would end).
        # A C++ thread: it fires while a blocked TensorFlow call holds the GIL.
        self._watchdog = watchdog
        self._watchdog.extend(
            cluster.timeout,
            f"fastbatch train: worker {cluster.rank}: no update completed in "
            f"{cluster.timeout:g} s (--timeout): a peer stalled or died",
        )

    def beat(self) -> None:
        self._watchdog.extend(self.cluster.timeout)

    def close(self) -> None:
        self._watchdog.cancel()

    def _collective(self, op, **kwargs):
        return op(
            group_size=self.world_size,
            group_key=_GROUP_KEY,
            ordering_token=[],
            communication_hint="ring",
            **kwargs,
        )

    def mean(self, tensors, key: Key):
        tensors = list(tensors)
        flat = tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)
        if self.world_size == 2:
            # Both vectors to both workers in one ring step (a ring all-reduce takes two, of
            # half the bytes each: the same bytes, twice the latency), summed in rank order.
            pair = self.gather(flat, key)
            total = (pair[0] + pair[1]) / 2.0
        else:
            total = self._collective(
                tf.raw_ops.CollectiveReduceV2,
                input=flat,
                instance_key=int(key),
                merge_op="Add",
                final_op="Div",
            )
        sizes = [int(np.prod(t.shape)) for t in tensors]
        parts = tf.split(total, sizes)
        return [tf.reshape(p, t.shape) for p, t in zip(parts, tensors, strict=True)]

    def gather(self, x, key: Key):
        out = self._collective(tf.raw_ops.CollectiveGatherV2, input=x[None], instance_key=int(key))
        return tf.reshape(out, [self.world_size, *x.shape])

    def broadcast(self, variables) -> None:
        groups: dict[tf.DType, list[tf.Variable]] = {}
        for v in variables:
            groups.setdefault(v.dtype, []).append(v)
        for i, (dtype, group) in enumerate(sorted(groups.items(), key=lambda g: g[0].name)):
            cast = tf.int32 if dtype == tf.bool else dtype
            flat = tf.concat([tf.reshape(tf.cast(v, cast), [-1]) for v in group], axis=0)
            chief = self._gathered(flat, Key.BROADCAST + i)[0]
            start = 0
            for v in group:
                size = int(np.prod(v.shape))
                v.assign(tf.cast(tf.reshape(chief[start : start + size], v.shape), dtype))
                start += size

    def gather_episodes(self, returns, lengths, window: int):
        recent = np.full((window, 2), np.nan)
        mine = np.array([returns[-window:], lengths[-window:]], np.float64).T.reshape(-1, 2)
        recent[window - len(mine) :] = mine  # the newest last
        every = self._gathered(tf.constant(recent), Key.EPISODES).numpy()
        kept = newest_episodes(every, window)
        return kept[:, 0].tolist(), kept[:, 1].astype(np.int64).tolist()

    def _gathered(self, x, key):
        """`gather` from eager code, through one traced function per key."""
        if key not in self._gather_fn:
            self._gather_fn[key] = tf.function(
                lambda t: self.gather(t, key), autograph=False, reduce_retracing=True
            )
        return self._gather_fn[key](x)


def newest_episodes(every, window: int):
    """``[k, 2]`` rows (return, length), oldest first, k <= `window`: the newest `window` of
    every worker's last episodes ``[workers, window, 2]`` (oldest first, NaN rows where a
    worker has fewer), as one process logs its last `window`: each worker's newest, then each
    one's second newest, and so on (workers finish episodes at about the same rate)."""
    newest_first = every[:, ::-1].transpose(1, 0, 2).reshape(-1, 2)
    return newest_first[~np.isnan(newest_first[:, 0])][:window][::-1]


def connect(cluster: Cluster) -> CollectiveSync:
    """Joins the cluster: starts this worker's gRPC server and waits until every worker has
    registered, for ``cluster.timeout`` seconds at most: then the process ends (status
    PEER_LOST_EXIT, a line on stderr). TensorFlow's own registration timeout does not end the
    wait for a worker that never starts, and the wait holds the GIL, so a C++ deadline does
    (docs/distributed.md, "Failure"). Must run before any other TensorFlow op in the process
    (TensorFlow fixes its devices then)."""
    others = ", ".join(f"{i}: {a}" for i, a in enumerate(cluster.workers) if i != cluster.rank)
    watchdog = Deadline(
        cluster.timeout,
        f"fastbatch train: worker {cluster.rank}: the cluster did not form in "
        f"{cluster.timeout:g} s (--timeout): not every worker joined (the others: {others}); "
        "is each started, with the same cluster and its own task index?",
        PEER_LOST_EXIT,
    )

    try:
        strategy = _join(cluster)
    except (tf.errors.OpError, RuntimeError) as exc:
        watchdog.cancel()
        raise PeerLostError(f"worker {cluster.rank} could not join the cluster: {exc}") from None
    except BaseException:
        watchdog.cancel()
        raise
    return CollectiveSync(cluster, strategy, watchdog)


def _join(cluster: Cluster):
    """`connect`'s TensorFlow part: the coordination service's settings and the strategy."""
    from tensorflow.python.eager import context  # the coordination service's settings

    os.environ["TF_CONFIG"] = cluster.tf_config()
    ms = int(cluster.timeout * 1000)
    try:  # bounded registration and dead-peer detection (else TensorFlow's defaults apply)
        from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2

        context.context().configure_coordination_service(
            service_type="standalone",
            service_leader=f"/job:worker/replica:0/task:{0}",
            cluster_register_timeout_in_ms=ms,
            heartbeat_timeout_in_ms=min(ms, 10_000),
            shutdown_barrier_timeout_in_ms=min(ms, 10_000),
            coordinated_jobs=[
                coordination_config_pb2.CoordinatedJob(
                    name="worker", num_tasks=len(cluster.workers)
                )
            ],
        )
    except (ImportError, AttributeError, TypeError):
        pass
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING
    )
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver, communication_options=options
    )


_TASK = re.compile(r"/job:worker/replica:0/task:(\d+)")


def describe_failure(exc: BaseException, cluster: Cluster) -> str:
    """A one-line reason for a failed collective, naming the lost worker when TensorFlow's
    message does (a dead peer) and the timeout when it does not (a stalled one)."""
    text = str(exc)
    lost = sorted({int(m) for m in _TASK.findall(text)} - {cluster.rank})
    if lost:
        names = ", ".join(f"worker {i} ({cluster.workers[i]})" for i in lost)
        return f"worker {cluster.rank} lost contact with {names}: it died or cannot be reached"
    if isinstance(exc, tf.errors.DeadlineExceededError) or "timed out" in text:
        return f"worker {cluster.rank}: its peers did not answer in time: a worker stalled or died"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"worker {cluster.rank}: a collective failed ({first})"

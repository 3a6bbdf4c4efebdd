"""The process backend: any gymnasium env, stepped in worker processes through shared memory.

`ProcessVectorEnv` is the gymnasium-facing facade: arguments, async block bookkeeping, and the
calls on the envs (``get_attr``, ``set_attr``, ``call``, ``render``). `WorkerSet` (worker_set.py)
runs the workers: `num_envs` Python envs split into contiguous blocks, one per worker process.
Actions, observations, rewards, flags and episode statistics travel through one shared-memory
segment laid out like the native batch buffers (64-byte aligned, see shm.py); workers are woken
through futexes in that segment (spin, then sleep). Every gymnasium space works: array spaces and
Dict/Tuple of them through the shared memory, the others pickled (see spaces.py). Pipes carry the
start-up handshake, pickled values, calls, infos that do not fit the shared info area, and errors.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from fastbatch._args import (
    MODE_CODES,
    available_cores,
    parse_autoreset_mode,
    positive_int,
    seed_list,
    worker_count,
)
from fastbatch._base import NO_IDLE_ENVS, RECV_WITHOUT_SEND, BatchVectorEnv
from fastbatch.errors import AsyncStateError
from fastbatch.process import wrapping
from fastbatch.process.rebalance import Rebalancer
from fastbatch.process.results import ResultReader
from fastbatch.process.shm import OP_CALL, OP_RESET, OP_STEP, Layout, leaf_views
from fastbatch.process.spaces import SpacePlan
from fastbatch.process.worker_set import WorkerSet

__all__ = ["ProcessVectorEnv"]

_ABANDONED: list[WorkerSet] = []  # worker sets inherited through fork and let go (see _base.py)
# Methods a call() must not run on the worker envs: the vector env's bookkeeping goes with them.
_NOT_CALLABLE = ("reset", "step", "close")


def _check_flag(name: str, value: Any, allow_none: bool = False) -> None:
    if not isinstance(value, bool) and not (allow_none and value is None):
        expected = "True, False or None" if allow_none else "a bool"
        raise TypeError(f"{name} must be {expected}, got {value!r}")


def _check_seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)


_UNKNOWN = object()  # a value not yet asked of the workers


class ProcessVectorEnv(BatchVectorEnv):
    """`len(env_fns)` gymnasium envs stepped in `num_workers` processes, as a `VectorEnv`.

    Build it with ``fastbatch.make(env_id_or_factories, num_envs, backend="process", ...)``.
    Results are 64-byte-aligned copies of the shared memory that never change behind the
    caller's back (a set the caller has dropped is recycled, so a steady loop allocates
    nothing). Every method but `close` raises `fastbatch.ClosedEnvError` once the env is closed.

    Args:
        env_fns: One factory per env returning a gymnasium env (cloudpickled to the workers).
        num_workers: Blocks of envs, one process each (default: the cores, at most one per env).
        seed: Env ``i`` gets ``seed + i`` at the first reset (a list: one seed per env).
        autoreset_mode: gymnasium's ``AutoresetMode`` or its name, e.g. ``"same_step"``.
        stats_key: The info key of finished episodes' statistics (None: none reported).
        batch_size: Envs a `recv` returns. Below ``num_envs`` (async mode) whole worker blocks
            are sent and received: a multiple of the block size ``num_envs // num_workers``.
        start_timeout: Seconds a worker may take to build its envs and answer.
        liveness_interval: Seconds within which a waiting caller notices a dead worker.
        in_parent: The caller steps block 0 itself (as the native pool's calling thread does), so
            ``num_workers`` blocks need ``num_workers - 1`` processes. None (default): on in sync
            mode when ``num_workers`` is at least the available cores and ``restart`` is off (a
            process per block would leave the waiting caller competing for the cores). An env
            crashing the interpreter in block 0 takes the caller down; a Ctrl-C in one of its
            envs leaves the env needing ``reset()``.
        restart: A worker that dies is replaced by a fresh one that rebuilds its envs from the
            factories, unseeded; the call in progress returns the block's rows as
            ``truncated=True`` (reward 0, no statistics, the new episode's first observation,
            also as ``final_obs``) with ``info["worker_restarted"]``: their episodes are lost.
            `restarts` counts replacements. Never block 0 of ``in_parent``.
        frame_stack: ``k > 1`` wraps each env in gymnasium's ``FrameStackObservation(env, k)``
            in its worker, as the native ``frame_stack`` stacks (None or 0: no stacking).
        wrappers: Callables ``env -> env`` or their import paths ``"module:name"``, put around
            each env in its worker in order (the first innermost), before the frame stack.
        rebalance: With ``in_parent``, the caller also takes blocks over from their workers
            while that measures faster (another program took a core), and gives them back later;
            envs that do not pickle the same (EzPickle: MuJoCo's, ALE's) never move.

    Raises:
        TypeError: A flag not a bool, a time not a number, a wrapper of the wrong kind.
        ValueError: No env, a time not positive, more workers than envs, a bad ``batch_size``,
            seed or ``autoreset_mode``, or ``in_parent=True`` in async mode.
        ImportError: A wrapper's import path does not load.
        EnvError: An env could not be built (also as its own exception type).
        TimeoutError: A worker did not answer within ``start_timeout``.
        RuntimeError: The envs' spaces differ.
        WorkerDiedError: A worker died starting (later: died without ``restart``, or again
            while restarting or its envs cannot be rebuilt; the env is then closed).
    """

    backend = "process"
    _time_limit: Any = _UNKNOWN

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        *,
        num_workers: int | None = None,
        seed: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        stats_key: str | None = None,
        batch_size: int | None = None,
        start_timeout: float = 120.0,
        liveness_interval: float = 0.05,
        in_parent: bool | None = None,
        restart: bool = False,
        frame_stack: int | None = None,
        wrappers: Sequence[Callable[[Any], Any] | str] | None = None,
        rebalance: bool = True,
    ) -> None:
        _check_flag("restart", restart)
        _check_flag("rebalance", rebalance)
        _check_flag("in_parent", in_parent, allow_none=True)
        start_timeout = _check_seconds("start_timeout", start_timeout)
        liveness_interval = _check_seconds("liveness_interval", liveness_interval)
        # Wrapped and stacked in the worker (wrapping.py), by the user's and gymnasium's wrappers.
        chain = wrapping.chain(wrappers, frame_stack)
        env_fns = [wrapping.wrapped_factory(fn, *chain) for fn in env_fns]
        num_envs = positive_int("num_envs", len(env_fns))
        workers = worker_count(num_workers, None, num_envs)
        if workers > num_envs:
            raise ValueError(f"num_workers={workers} is more than num_envs={num_envs}")
        mode = parse_autoreset_mode(autoreset_mode)
        batch_size = num_envs if batch_size is None else positive_int("batch_size", batch_size)
        if batch_size > num_envs:
            raise ValueError(f"batch_size must be at most num_envs={num_envs}, got {batch_size}")
        if in_parent is None:  # auto: one process per block would oversubscribe the cores
            in_parent = (
                batch_size == num_envs
                and not restart
                and workers > 1
                and workers >= available_cores()
            )
        if in_parent and batch_size < num_envs:
            raise ValueError(
                "in_parent=True steps a block in the caller, which async mode cannot overlap"
            )
        if batch_size < num_envs:
            block = num_envs // workers
            if num_envs % workers or batch_size % block:
                raise ValueError(
                    "async mode of the process backend sends whole worker blocks: num_envs must be a "
                    f"multiple of num_workers and batch_size a multiple of {block} envs per worker"
                )
        pending_seeds = seed_list(seed, num_envs) if seed is not None else None
        self._stats_key = stats_key
        self._workers = WorkerSet(
            env_fns,
            workers,
            MODE_CODES[mode],
            in_parent=in_parent,
            restart=restart,
            start_timeout=start_timeout,
            liveness_interval=liveness_interval,
            on_fatal=self.close,
        )
        self.closed = False  # close() works from here on (a failed start closes the workers)
        self._claim()
        try:
            self._workers.start(self._layout)
        except BaseException:
            self.close()
            raise
        self._setup(num_envs, batch_size, mode, *self._workers.spaces, seed=pending_seeds)
        about = self._workers.about  # the first env's, as gymnasium's vector envs report them
        self.metadata = {**about["metadata"], "autoreset_mode": mode}
        self.render_mode = about["render_mode"]
        self._pending_seeds = pending_seeds  # make(seed=...): applied by the first reset()
        self._in_flight: list[int] = []  # async: workers sent and not yet received
        self._idle_workers = list(range(workers))  # async: workers a send() without ids steps
        self._reader = ResultReader(self._workers, self._workers.obs_plan, stats_key)
        self._every = list(range(workers))
        self._act_leaves = leaf_views(self._workers.views, "actions")
        can_move = in_parent and not restart and workers > 1
        self._rebalancer = Rebalancer(self._workers) if rebalance and can_move else None

    def _layout(self, obs_space, act_space) -> Layout:
        """The shared layout for these spaces (spaces.py; the worker set holds the obs plan)."""
        self._act_plan = SpacePlan(act_space)
        return Layout(
            num_envs=len(self._workers.env_fns),
            num_workers=self._workers.num_workers,
            obs_leaves=tuple(self._workers.obs_plan.leaves),
            act_leaves=tuple(self._act_plan.leaves),
        )

    @property
    def num_workers(self) -> int:
        """Blocks of envs, each stepped by one worker process (or by the caller: in_parent)."""
        return self._workers.num_workers

    @property
    def worker_pids(self) -> list[int | None]:
        """The process id of each block's worker: None for the block the caller steps itself
        (in_parent) and for every block once the env is closed."""
        return [None if p is None else p.pid for p in self._workers.processes]

    @property
    def caller_blocks(self) -> int:
        """Blocks of envs the caller steps itself now (in_parent; more while rebalanced)."""
        return self._workers.local_workers

    @property
    def rebalance_off_reason(self) -> str | None:
        """Why blocks do not move between the caller and the workers (None: they do)."""
        if self._rebalancer is None:
            return "rebalance needs in_parent, no restart and more than one worker, or was off"
        return self._rebalancer.off_reason

    @property
    def restarts(self) -> int:
        """Worker processes replaced so far (restart=True)."""
        return self._workers.restarts

    @property
    def time_limit(self) -> int | None:
        """The time limit of the envs in steps, as their gymnasium spec reports it (their
        ``TimeLimit`` wrapper's), or None: none known. Asked of env 0 once, then kept."""
        if self._time_limit is _UNKNOWN:
            spec = self.get_attr("spec")[0]
            limit = None if spec is None else spec.max_episode_steps
            self._time_limit = int(limit) if limit else None
        return self._time_limit

    # ------------------------------------------------------------------ calls on the envs
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Calls method `name` of every env (found through its wrappers, as gymnasium's vector
        envs find it); an attribute that is not callable is returned as it is.

        Args:
            name: The method or attribute (not ``reset``, ``step`` or ``close``).
            *args: Positional arguments of the call.
            **kwargs: Keyword arguments of the call.

        Returns:
            The results in env order, as copies; None for the envs of a worker replaced meanwhile.

        Raises:
            ValueError: ``name`` is ``reset``, ``step`` or ``close``.
            TypeError: ``name`` is not a str.
            AsyncStateError: Steps are in flight (async mode): recv() them first.
            EnvError: An env raised: as its own exception type too when that can be rebuilt,
                with the worker's traceback and ``env_index``.
        """
        if name in _NOT_CALLABLE:
            raise ValueError(f"call({name!r}) would bypass the vector env: use {name}() instead")
        return self._call_envs(name, None, args, kwargs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute `name` of every env, in env order. As in gymnasium's vector envs, this is
        ``call(name)``: a method is called without arguments.

        Args:
            name: The attribute.

        Returns:
            One value per env, in env order (copies).

        Raises:
            AttributeError: An env has no such attribute (also an EnvError, as in `call`).
            AsyncStateError: Steps are in flight.
        """
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Sets attribute `name` of every env (through its wrappers).

        Args:
            name: The attribute.
            values: A value per env (a list or tuple: env ``i`` gets ``values[i]``) or one for all.

        Raises:
            ValueError: A list or tuple of another length than ``num_envs``.
            AsyncStateError: Steps are in flight.
            EnvError: An env raised while setting it (its own exception type too).
        """
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(
                f"set_attr needs one value per env (a list or tuple of {self.num_envs}) or a "
                f"single value, got {len(values)} values"
            )
        self._call_envs(name, list(values), (), {})

    def render(self) -> tuple[Any, ...]:
        """Every env's ``render()`` (frames for ``render_mode="rgb_array"``), in env order."""
        return self.call("render")

    @property
    def np_random_seed(self) -> tuple[int, ...]:
        """Each env's ``np_random_seed``, in env order."""
        return self.get_attr("np_random_seed")

    @property
    def np_random(self) -> tuple[np.random.Generator, ...]:
        """Copies of each env's ``np_random`` generator, in env order."""
        return self.get_attr("np_random")

    def _call_envs(self, name: Any, values: list | None, args: tuple, kwargs: dict) -> tuple:
        """Runs a call (`Block.call`) on every env; a replaced worker's envs answer None."""
        self._check_open()
        if not isinstance(name, str):
            raise TypeError(f"an attribute name must be a str, got {name!r}")
        if self._in_flight:
            raise AsyncStateError("envs are in flight; recv() them before calling the envs")
        workers, every = self._workers, self._every
        workers.settle(self._in_flight)
        arguments = {
            w: (name, None if values is None else values[b.start : b.stop], args, kwargs)
            for w, b in ((w, workers.block(w)) for w in every)
        }
        workers.call_results = [None] * self.num_envs
        replaced = self._run(OP_CALL, every, arguments)
        workers.collect(every)
        results = workers.call_results
        for w in replaced:
            results[workers.block(w).start : workers.block(w).stop] = [None] * len(workers.block(w))
        return tuple(results)

    # ------------------------------------------------------------------ primitives
    def _reset_envs(self, seeds, mask):
        workers = self._workers
        if all(s is None for s in seeds) and self._pending_seeds is not None and mask is None:
            seeds = self._pending_seeds
        self._pending_seeds = None
        if mask is None:
            self._drain()  # a full reset discards every step in flight
            self._idle_workers = list(range(workers.num_workers))
            selected = list(range(workers.num_workers))
        else:
            selected = [
                w
                for w in range(workers.num_workers)
                if mask[workers.block(w).start : workers.block(w).stop].any()
            ]
            busy = set(selected) & set(self._in_flight)
            if busy:
                raise AsyncStateError(
                    f"workers {sorted(busy)} have envs in flight; recv() them first"
                )
        workers.settle(self._in_flight)
        v = workers.views
        v["reset_mask"][:] = True if mask is None else mask
        v["seed_set"][:] = [s is not None for s in seeds]
        v["seeds"][:] = [0 if s is None else s for s in seeds]
        replaced = self._run(OP_RESET, selected)
        infos, _ = workers.collect(selected)
        for w in replaced:  # a replaced worker reset its whole block, masked or not
            self._needs_reset[workers.block(w).start : workers.block(w).stop] = False
        return self._reader.observations(), infos

    def _step_envs(self, actions):
        workers = self._workers
        every = self._every
        workers.settle(self._in_flight)  # a step a Ctrl-C left running must not see new actions
        rebalancer = self._rebalancer
        if rebalancer is not None:
            rebalancer.place()
        arguments = self._write_actions(actions, None, every)
        start = time.perf_counter()
        self._run(OP_STEP, every, arguments)
        infos, ended = workers.collect(every)
        if rebalancer is not None:
            rebalancer.record(time.perf_counter() - start)
        return self._reader.step(slice(None), infos, ended)

    def _send_envs(self, actions, env_ids):
        workers = self._workers
        if env_ids is None:
            selected = self._idle_workers
            if not selected:
                raise AsyncStateError(NO_IDLE_ENVS)
            ids = np.concatenate(
                [np.arange(workers.block(w).start, workers.block(w).stop) for w in selected]
            )
        else:
            ids = np.asarray(env_ids, dtype=np.int64)  # the actions' rows follow this order
            selected = self._workers_of(ids)
        if self._disabled:
            self._check_disabled_autoreset(ids)
        checked = self._act_plan.check(actions, len(ids), ids)
        workers.settle(self._in_flight)
        arguments = self._write_actions(checked, ids, selected)
        workers.op = OP_STEP
        workers.dispatch(OP_STEP, selected, arguments)
        self._in_flight += selected
        self._idle_workers = [w for w in self._idle_workers if w not in selected]

    def _recv_envs(self):
        if not self._in_flight:
            raise AsyncStateError(RECV_WITHOUT_SEND)
        workers = self._workers
        block = self.num_envs // workers.num_workers
        need = self.batch_size // block
        if len(self._in_flight) < need:
            raise AsyncStateError(
                f"only {len(self._in_flight) * block} envs are in flight but recv() returns "
                f"batch_size={self.batch_size}; send() more envs first"
            )
        finished = workers.wait_any(self._in_flight, need)
        ids = np.concatenate(
            [np.arange(workers.block(w).start, workers.block(w).stop) for w in finished]
        )
        infos, ended = workers.collect(finished, rows={int(i): j for j, i in enumerate(ids)})
        self._in_flight = [w for w in self._in_flight if w not in finished]
        self._idle_workers = list(finished)
        result = self._reader.step(ids, infos, ended)
        result[4]["env_id"] = ids
        return result

    def _close_envs(self):
        self._act_leaves = []  # views of the shared memory, which close() unmaps
        self._workers.close()

    def _abandon_envs(self):
        # A forked child: the workers, their pipes and the shared memory serve the parent, which
        # still uses them. Nothing is sent, signalled, waited for or unmapped, and the worker set
        # is kept for the life of this process so that no finaliser of its handles runs here.
        _ABANDONED.append(self._workers)

    # ------------------------------------------------------------------ helpers
    def _write_actions(self, actions, ids: np.ndarray | None, selected: list[int]) -> dict | None:
        """Writes `actions` for the envs `ids` (None: every env) into the shared action leaves,
        checking them first unless `ids` is given (then they are checked already). For a pickled
        action space, returns instead each `selected` worker's values, for `WorkerSet.run`."""
        if ids is None:
            actions = self._act_plan.check(actions, self.num_envs)
        if self._act_plan.shared:
            for leaf, checked in zip(self._act_leaves, actions, strict=True):
                leaf[... if ids is None else ids] = checked
            return None
        by_env = dict(
            zip(range(self.num_envs) if ids is None else ids.tolist(), actions, strict=True)
        )
        return {w: [by_env[i] for i in self._workers.block(w)] for w in selected}

    def _run(self, op: int, selected: list[int], arguments: dict | None = None) -> list[int]:
        """Runs `op` on the `selected` workers; returns those replaced meanwhile (restart=True)."""
        workers = self._workers
        workers.local_interrupted = False
        try:
            workers.run(op, selected, arguments)
        except BaseException:
            if workers.local_interrupted:  # a Ctrl-C inside an env of the caller's own block
                self._broken = True
            raise
        return [w for w in selected if w in workers.replaced_this_call]

    def _workers_of(self, env_ids: np.ndarray) -> list[int]:
        """The workers whose blocks `env_ids` name (whole blocks only, none in flight)."""
        selected = []
        for w in range(self._workers.num_workers):
            block = np.arange(self._workers.block(w).start, self._workers.block(w).stop)
            inside = np.isin(block, env_ids)
            if inside.any() and not inside.all():
                raise ValueError(
                    f"the process backend sends whole worker blocks; envs {block.tolist()} go together"
                )
            if inside.any():
                if w in self._in_flight:  # the native pool's words for the same rule
                    i = int(block[inside][0])
                    raise AsyncStateError(
                        f"env {i} was already sent and not yet received; recv() it first"
                    )
                selected.append(w)
        if sum(len(self._workers.block(w)) for w in selected) != len(env_ids):
            raise ValueError("env_ids must be distinct envs of this vector env")
        return selected

    def _drain(self) -> None:
        """Waits for every step in flight (async mode) and discards its results."""
        if self._in_flight:
            self._workers.discard(self._in_flight)
            self._in_flight = []

    def __repr__(self) -> str:
        return f"ProcessVectorEnv(num_envs={self.num_envs}, num_workers={self.num_workers})"

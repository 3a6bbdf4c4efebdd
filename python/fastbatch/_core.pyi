"""Typed stub of ``fastbatch._core``, the private C++ extension (``src/cpp/bindings/module.cc``).

The ``fastbatch`` package owns the public names and their documentation; this stub records what
the compiled module offers, for type checkers and readers. ``tests/test_core_stub.py`` checks it
against the built module: the same top-level names, the same methods and properties on every
class, the same parameter names and defaults.

Arrays returned by ``_VectorPool.reset/step/recv`` are views of 64-byte-aligned pool-owned
slots, never written again while the caller holds them. Every ``_VectorPool`` method raises
``ClosedEnvError`` after ``close()`` (``close`` itself may be called again).
"""

from typing import Any

import numpy as np
import numpy.typing as npt

ABI_VERSION: int
"""The version of the C env ABI (``fastbatch/abi.h``) this build speaks."""
CAPSULE_NAME: str
"""The name a capsule passed to ``_env_type_from_capsule`` must have: ``"fastbatch.env_api"``."""
_rollout_step_address: int
"""Address of ``FastbatchRolloutStep`` (``bindings/rollout_abi.h``), for the TF op."""
_rollout_error_address: int
"""Address of ``FastbatchRolloutError`` (``bindings/rollout_abi.h``), for the TF op."""

class EnvError(RuntimeError):
    """An env failed inside reset/step/its constructor; the message starts with ``"env <i>: "``
    when one env is to blame."""

    env_index: int | None
    """Set on each instance: the failing env, or None."""

class AsyncStateError(RuntimeError):
    """send()/recv() used out of order (recv without send, an env sent twice, ...)."""

class PluginError(ValueError):
    """A plugin could not be loaded, or its table or spec break the ABI contract."""

class ClosedEnvError(RuntimeError):
    """A ``_VectorPool`` method called after ``close()``: "this fastbatch env is closed"."""

class _EnvType:
    """An env type: its ABI table, plus whatever keeps its code loaded. Made by
    ``_builtin_env_types``, ``_load_plugin`` or ``_env_type_from_capsule``."""

    @property
    def spec(self) -> dict[str, Any]:
        """The spec for the default params: ``{"id", "observation", "action",
        "max_episode_steps", "reward_threshold", "params"}``; a space is ``{"kind": "discrete",
        "n"}`` or ``{"kind": "box", "dtype", "shape", "low", "high"}``; ``params`` maps each name
        to ``{"default", "kind", "low", "high", "choices"}``."""
    @property
    def abi_version(self) -> int:
        """The ABI version the table was built with (1 to 5)."""
    @property
    def id(self) -> str: ...
    @property
    def spec_depends_on_params(self) -> bool:
        """Whether the spaces and time limit depend on the params (the table has a
        ``block_spec``): then only envs made with given params know their own spec."""

class _ActionChecker:
    """The action checks of both backends (``bindings/checks.h``)."""

    def __init__(
        self,
        discrete: bool,
        n: int,
        start: int,
        row_shape: tuple[int, ...],
        dtype: npt.DTypeLike,
    ) -> None:
        """``Discrete(n, start)`` when ``discrete`` (``row_shape`` must be ``()``; ``dtype`` is
        not used), else a Box of ``row_shape`` and a real ``dtype``. ValueError otherwise."""
    def check(
        self,
        actions: npt.ArrayLike,
        rows: int,
        env_ids: npt.NDArray[np.integer[Any]] | None = None,
    ) -> npt.NDArray[Any]:
        """Validates the actions of ``rows`` envs and returns them as a C-contiguous array of the
        action dtype (int64 for Discrete; the input itself when it already is one). Raises
        TypeError (not array-like, wrong dtype kind) or ValueError (shape, range, NaN); "env X"
        in a message is ``env_ids[j]`` when given, else the row ``j``."""

class _VectorPool:
    """``num_envs`` envs of one type stepped as a batch by C++ worker threads. One thread at a
    time may call it (a concurrent call raises RuntimeError)."""

    # Stub only: what recv and send_recv return, (obs, reward, terminated, truncated, env_ids,
    # episodes_ended).
    _Received = tuple[
        npt.NDArray[Any],
        npt.NDArray[np.float32],
        npt.NDArray[np.bool_],
        npt.NDArray[np.bool_],
        npt.NDArray[np.int64],
        int,
    ]

    def __init__(
        self,
        env_type: _EnvType,
        num_envs: int,
        num_threads: int,
        autoreset_mode: int,
        max_episode_steps: int,
        params: list[float],
        batch_size: int = 0,
        max_async_threads: int = 0,
        frame_stack: int = 1,
    ) -> None:
        """``autoreset_mode``: 0 next step, 1 same step, 2 disabled. ``max_episode_steps`` 0: no
        time limit. ``params`` in spec order. ``batch_size`` 0 or ``num_envs``: sync; smaller:
        async (``send``/``recv``). ``max_async_threads`` (async): the most threads that may step
        while the envs' steps block (measured), at least ``num_threads``. ``frame_stack`` above
        1: every observation row (and ``spec``'s observation) is the env's last ``frame_stack``
        observations on a new first axis, as gymnasium's ``FrameStackObservation``; ValueError
        below 1, or above 1 for a Discrete observation or one of 4 axes."""
    def send(self, actions: npt.ArrayLike, env_ids: npt.ArrayLike) -> None:
        """Async: queues one step of each env in ``env_ids`` with its row of ``actions``."""
    def recv(self) -> _Received:
        """Async: waits for ``batch_size`` envs; ``(obs, reward, terminated, truncated, env_ids,
        episodes_ended)`` of the first envs to finish, rows in env id order."""
    def send_recv(self, actions: npt.ArrayLike, env_ids: npt.ArrayLike) -> _Received:
        """Async: ``send`` then ``recv`` in one call; raises before sending anything when fewer
        than ``batch_size`` envs would be in flight, so after a send only ``EnvError``."""
    def seed(self, seeds: list[int | None]) -> None:
        """Seeds env ``i`` with ``seeds[i]`` (a non-negative int of any size) as
        ``numpy.random.default_rng(seeds[i])`` would; None keeps that env's generator running."""
    def np_random_seeds(self) -> list[int]:
        """Per env, the seed it was last seeded with, or the 128-bit entropy an env never seeded
        drew (gymnasium's ``np_random_seed``)."""
    def reset(self, mask: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[Any]:
        """Resets every env, or those where ``mask`` is True; returns the observations."""
    def step(
        self, actions: npt.ArrayLike
    ) -> tuple[
        npt.NDArray[Any], npt.NDArray[np.float32], npt.NDArray[np.bool_], npt.NDArray[np.bool_], int
    ]:
        """Steps every env: ``(obs, reward, terminated, truncated, episodes_ended)``."""
    def step_into(
        self,
        actions: npt.ArrayLike,
        obs: npt.NDArray[Any],
        reward: npt.NDArray[np.float32],
        terminated: npt.NDArray[np.bool_],
        truncated: npt.NDArray[np.bool_],
    ) -> int:
        """Steps every env into caller-owned arrays (C-contiguous, writeable, 64-byte aligned,
        the exact dtype and shape of ``step``'s results); returns the episodes ended."""
    def episode_stats(
        self,
    ) -> tuple[
        npt.NDArray[np.bool_],
        npt.NDArray[np.float64],
        npt.NDArray[np.int64],
        npt.NDArray[np.float64],
    ]:
        """``(done, return, length, seconds)`` rows of the last step or recv (fresh arrays)."""
    def final_obs(self) -> npt.NDArray[Any]:
        """SAME_STEP mode: the final observations of the last step or recv (a fresh array)."""
    def agent_active(self) -> npt.NDArray[np.bool_]:
        """Multi-agent envs (ABI 6): per row (env * num_agents + agent), whether its agent took
        part in the last step or is in the episode the last reset began (a fresh array)."""
    @property
    def num_agents(self) -> int:
        """Agents per env (ABI 6; 1 for a single-agent env)."""
    def infos(self, which: str = "step") -> npt.NDArray[np.float64] | None:
        """Infos (ABI 3) as a fresh [rows, info row] float64 array, None if the env declares none:
        of the last step or recv (``"step"``), of the last reset by env (``"reset"``), or
        SAME_STEP's final infos (``"final"``)."""
    def get_state(self, env: int) -> npt.NDArray[np.float64]:
        """The internal state of env ``env`` (tests and debugging)."""
    def set_state(self, env: int, state: npt.NDArray[np.float64]) -> None:
        """Replaces env ``env``'s internal state (float64, ``get_state``'s shape; ABI 5): raises
        IndexError, TypeError, ValueError, NotImplementedError (no ``SetState``), AsyncStateError."""
    def render(self, env: int) -> npt.NDArray[np.uint8]:
        """Env ``env`` drawn by itself (ABI 7): a fresh [height, width, 3] uint8 RGB frame; raises
        IndexError, NotImplementedError (no ``Render``), AsyncStateError, EnvError."""
    def rollout_context(
        self,
        obs: npt.NDArray[Any],
        reward: npt.NDArray[np.float32],
        terminated: npt.NDArray[np.bool_],
        truncated: npt.NDArray[np.bool_],
        final_obs: npt.NDArray[Any],
    ) -> int:
        """The address of a rollout context over this storage (``[T+1, N, *obs]``, ``[T, N]``
        x3, ``[T, N, *obs]``), for ``_rollout_step_address``; replaces the previous one."""
    def rollout_episodes(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """``(returns, lengths)`` of the episodes ended through the rollout context since the
        last call."""
    def close(self) -> None:
        """Frees the envs (waits up to 10 s for a call in another thread)."""
    def _abandon(self) -> None:
        """In a process forked from the pool's owner: closes the pool without destroying it (its
        threads exist only in the owner; the envs leak in this process). Never waits."""
    @property
    def num_threads(self) -> int:
        """Threads stepping the batch (the caller counts as one); 0 after close."""
    @property
    def active_threads(self) -> int:
        """How many threads the thread tuner has stepping envs now (async mode: up to
        ``max_async_threads`` while the envs' steps block); 0 after close."""
    @property
    def spec(self) -> dict[str, Any]:
        """The spec of these envs (``_EnvType.spec``'s layout): spaces and time limit for the
        params they were made with."""

class _Deadline:
    """Ends the process ``seconds`` from now, unless extended or cancelled first: writes
    ``message`` to stderr and calls ``_exit(exit_code)`` from a C++ thread, so it fires while
    another thread holds the GIL (bindings/deadline.h)."""

    def __init__(self, seconds: float, message: str, exit_code: int) -> None: ...
    def extend(self, seconds: float, message: str = "") -> None:
        """The deadline is now ``seconds`` from now (a non-empty message replaces the message)."""

    def cancel(self) -> None:
        """No deadline any more."""

class _ThreadTuner:
    """The native pool's thread tuner (core/worker_pool.h): chooses a count from 1 to
    ``max_threads`` from the batch-step times it is given, probing neighbouring counts."""

    def __init__(self, max_threads: int, start: int = 0) -> None: ...
    @property
    def threads(self) -> int:
        """The count for the next batch step (the probe's while probing)."""

    @property
    def chosen(self) -> int:
        """The count currently judged fastest."""

    def record(self, seconds: float) -> None:
        """Records the duration of a batch step that ran with ``threads``."""

    def set_probe_cost(self, seconds: float) -> None:
        """Seconds a probe costs besides its batch steps: probes are spaced by 32 times that."""
    def skip_probe(self) -> None:
        """Ends the current probe unmeasured, as a lost one (the next waits longer)."""

def _builtin_env_types() -> dict[str, _EnvType]:
    """Every env compiled into the extension, by id (ids starting with ``_`` are test envs)."""

def _load_plugin(path: str, symbol: str = "") -> list[_EnvType]:
    """Opens a plugin library (kept loaded for the process lifetime) and checks its tables:
    every env it exports, or the one ``symbol`` returns."""

def _env_type_from_capsule(capsule: Any) -> _EnvType:
    """An env type from a capsule named ``CAPSULE_NAME`` holding a ``const fb_env_api*``."""

def _wait_word(
    address: int, old: int, timeout_s: float, spin_us: float = 0.0, yield_: bool = False
) -> int:
    """Waits (GIL released) for the shared uint32 at ``address`` to differ from ``old``; returns
    its value (``old`` after ``timeout_s``)."""

def _store_word(address: int, value: int) -> None:
    """Stores a shared uint32 and wakes its sleepers, if any."""

def _add_word(address: int, delta: int = 1) -> int:
    """Adds to a shared uint32, wakes its sleepers, returns the new value."""

def _load_word(address: int) -> int:
    """The shared uint32's value."""

def _native_loop_seconds(
    env_type: _EnvType,
    num_envs: int,
    steps: int,
    seed: int = 0,
    num_threads: int = 1,
    actions: npt.NDArray[np.float32] | None = None,
    batch_size: int = 0,
    params: list[float] = ...,
    frame_stack: int = 1,
) -> float:
    """Seconds of ``steps`` batch steps of a pool on ``num_threads`` threads driven by a C++
    loop, Box actions cycling through ``actions`` [tables, num_envs, *shape] if given;
    ``batch_size`` < num_envs: async, each step a recv of batch_size envs and a send; ``params``
    the encoded param values (``NativeEnvSpec.encode_params``; empty: the defaults);
    ``frame_stack`` observations stacked per env (bench/)."""

def _rng_draws(
    seed: int,
    kind: str,
    count: int,
    stream: int | None = None,
    low: int = 0,
    high: int | None = None,
) -> npt.NDArray[np.uint64] | npt.NDArray[np.float64] | npt.NDArray[np.int64]:
    """Test hook: ``count`` draws of kind "raw", "uniform", "normal" or "integers" (``low``,
    ``high``) from ``fastbatch::Rng`` seeded as numpy's
    ``Generator(PCG64(SeedSequence(seed, spawn_key=(stream,))))``."""

def _rng_sequence(
    seed: int, draws: list[tuple[Any, ...]], stream: int | None = None
) -> list[int | float]:
    """Test hook: one ``fastbatch::Rng`` seeded as ``_rng_draws``'s making ``draws`` in order,
    e.g. ``[("integers", 7), ("uniform",), ("integers", -3, 9), ("normal",), ("raw",)]``."""

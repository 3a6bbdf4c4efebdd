"""Helper envs, backends and assertions shared by the test modules (conftest.py holds fixtures).

Worker processes of the process backend import this module by reference (`tests.envs`): the
worker gets the caller's sys.path, which holds the repository root under pytest's default
import mode because tests/ is a package.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import time
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium.wrappers import TimeLimit

import fastbatch

COUNTER = "_TestCounter-v0"


# ---------------------------------------------------------------------------- envs
class CounterEnv(gymnasium.Env):
    """Python twin of the native `_TestCounter-v0` env (src/cpp/envs/test_envs.h).

    obs = [steps since reset, last action] ([0, 0] after reset), reward = action; terminates
    when the action is 3 or after `terminate_at_step` steps (if positive). Raises from step when
    the step count reaches `throw_at_step`, and from reset on reset number `throw_at_reset` (if
    positive), with the native env's messages. Draws one random number per reset, as it does."""

    def __init__(self, terminate_at_step: int = 0, throw_at_step: int = 0, throw_at_reset: int = 0):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(4)
        self.terminate_at_step = terminate_at_step
        self.throw_at_step = throw_at_step
        self.throw_at_reset = throw_at_reset
        self.steps = 0
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.resets += 1
        if 0 < self.throw_at_reset == self.resets:
            raise RuntimeError(f"test env: reset number {self.resets} failed")
        self.steps = 0
        self.np_random.random()
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        if 0 < self.throw_at_step == self.steps:
            raise RuntimeError(f"test env: step {self.steps} failed")
        action = int(action)
        obs = np.array([self.steps, action], dtype=np.float32)
        terminated = action == 3 or (0 < self.terminate_at_step <= self.steps)
        return obs, float(action), terminated, False, {}


def counter_factory(
    max_episode_steps: int | None = None, **params: Any
) -> Callable[[], gymnasium.Env]:
    """A picklable factory of `CounterEnv(**params)`, under a `TimeLimit` when
    `max_episode_steps` is positive (the native env's time limit)."""
    return functools.partial(_make_counter, max_episode_steps, params)


def _make_counter(max_episode_steps: int | None, params: dict[str, Any]) -> gymnasium.Env:
    env = CounterEnv(**params)
    return TimeLimit(env, max_episode_steps) if max_episode_steps else env


class ScriptedEnv(gymnasium.Env):
    """Counts steps; the action picks a behaviour: 0 plain, 1 info, 2 raise, 3 os._exit,
    4 segfault, 5 sleep `nap` seconds. Terminates after `length` steps."""

    def __init__(self, length: int = 5, nap: float = 0.3):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(6)
        self.length = length
        self.nap = nap
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0, self.np_random.random()], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        info = {}
        if action == 1:
            info = {"bonus": float(self.t), "tag": "hello"}
        elif action == 2:
            raise ValueError(f"scripted failure at step {self.t}")
        elif action == 3:
            os._exit(3)
        elif action == 4:
            ctypes.string_at(0)
        elif action == 5:
            time.sleep(self.nap)
        obs = np.array([self.t, action], dtype=np.float32)
        return obs, float(action), self.t >= self.length, False, info


class LegacyBox:
    """Duck-typed stand-in for a legacy `gym.spaces.Box` (not a gymnasium space)."""

    def __init__(self, low, high, shape, dtype):
        self.low, self.high, self.shape, self.dtype = (
            np.full(shape, low),
            np.full(shape, high),
            shape,
            dtype,
        )


class LegacyDiscrete:
    def __init__(self, n):
        self.n = n


LegacyBox.__name__ = "Box"
LegacyDiscrete.__name__ = "Discrete"


class LegacyEnv:
    """An env with the gym 0.26 API and non-gymnasium spaces."""

    def __init__(self):
        self.observation_space = LegacyBox(-1.0, 1.0, (3,), np.float32)
        self.action_space = LegacyDiscrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(3, dtype=np.float32), {}

    def step(self, action):
        return np.full(3, action, dtype=np.float32), 1.0, False, False, {}

    def close(self):
        pass


class NumericInfoEnv(gymnasium.Env):
    """Returns numeric infos of several types on most steps (none every third step; a vector
    value every fifth), so the shared-memory info path and its fast path both run."""

    def __init__(self, length: int = 7):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float64)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.length = length
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = int(self.np_random.integers(3))
        return np.array([self.t], dtype=np.float64), {"start": self.t}

    def step(self, action):
        self.t += 1
        info = {}
        if self.t % 3:
            info = {
                "x": np.float64(self.t * 0.5),
                "n": self.t,
                "f32": np.float32(action[0]),
                "flag": self.t % 2 == 0,
            }
        if self.t % 5 == 0:
            info["vec"] = np.arange(2) * self.t
        return (
            np.array([self.t], dtype=np.float64),
            float(action[0]),
            self.t >= self.length,
            False,
            info,
        )


class OneNativeEnv(gymnasium.Env):
    """One native env as a plain gymnasium env (a 1-env batch without autoreset): the reference
    vectorisers (SyncVectorEnv, SB3's DummyVecEnv) can then hold the very env that a fastbatch
    batch steps (env i of a batch seeded s follows a single env seeded s + i)."""

    def __init__(self, env_id: str, **kwargs: Any):
        self.batch = fastbatch.make(env_id, 1, autoreset_mode="disabled", **kwargs)
        self.observation_space = self.batch.single_observation_space
        self.action_space = self.batch.single_action_space

    def reset(self, *, seed=None, options=None):
        obs, _ = self.batch.reset(seed=seed)
        return obs[0].copy(), {}

    def step(self, action):
        obs, reward, terminated, truncated, _ = self.batch.step(np.asarray([action]))
        return obs[0].copy(), float(reward[0]), bool(terminated[0]), bool(truncated[0]), {}

    def close(self):
        self.batch.close()


class RestartOnceEnv(ScriptedEnv):
    """A ScriptedEnv whose construction fails once `marker` exists (written by the first
    construction): a worker restarted with it cannot rebuild its envs."""

    def __init__(self, marker: str):
        if os.path.exists(marker):
            raise RuntimeError("this env can be built only once")
        with open(marker, "a"):
            pass
        super().__init__(5)


class CrashOnResetEnv(ScriptedEnv):
    """A ScriptedEnv that kills its process in reset() once, when `marker` exists."""

    def __init__(self, marker: str, length: int):
        super().__init__(length)
        self.marker = marker

    def reset(self, *, seed=None, options=None):
        if os.path.exists(self.marker):
            os.remove(self.marker)
            os._exit(7)
        return super().reset(seed=seed, options=options)


# ---------------------------------------------------------------------------- backends
class WholeBatch(gymnasium.vector.VectorWrapper):
    """Drives an env in async mode (batch_size < num_envs) as a synchronous one, as gymnasium's
    `AsyncVectorEnv.step` is `step_async` + `step_wait`: `step` sends every env's action,
    receives until every env has answered, and puts rows and infos back in env order."""

    def __init__(self, env: gymnasium.vector.VectorEnv) -> None:
        super().__init__(env)
        assert env.num_envs % env.batch_size == 0, "every recv() must return whole batches"

    def step(self, actions):
        self.env.send(actions, np.arange(self.num_envs))
        parts, error = [], None
        for _ in range(self.num_envs // self.env.batch_size):
            try:
                parts.append(self.env.recv())
            except fastbatch.EnvError as exc:  # the rest is received first, as AsyncVectorEnv does
                error = error or exc
            except RuntimeError:
                if error is None:
                    raise
                break  # refused after the env error: the rest stays in flight until reset()
        if error is not None:
            raise error
        return gather(parts, self.num_envs)


def gather(parts: list[tuple], num_envs: int) -> tuple:
    """`recv()` results (rows named by info["env_id"]) as one step of
    `num_envs` envs in env order: arrays row by row, infos key by key with their masks."""
    arrays = [np.empty((num_envs, *a.shape[1:]), a.dtype) for a in parts[0][:4]]
    info: dict[str, Any] = {}
    for *results, part_info in parts:
        ids = part_info.pop("env_id")
        for whole, rows in zip(arrays, results):
            whole[ids] = rows
        info = _place(info, part_info, ids, num_envs)
    return (*arrays, info)


def _place(
    whole: dict[str, Any], part: dict[str, Any], ids: np.ndarray, num_envs: int
) -> dict[str, Any]:
    for key, value in part.items():
        if isinstance(value, dict):
            whole[key] = _place(whole.get(key, {}), value, ids, num_envs)
            continue
        if key not in whole:
            if value.dtype == object:
                whole[key] = np.full(num_envs, None, dtype=object)
            else:
                whole[key] = np.zeros((num_envs, *value.shape[1:]), dtype=value.dtype)
        whole[key][ids] = value
    return whole


_COUNTER_PARAMS = ("terminate_at_step", "throw_at_step", "throw_at_reset", "max_episode_steps")


# The contract tests check fastbatch's own episode statistics too (off by default), so the
# backends' makers turn them on unless a test says otherwise.
STATS = {"stats_key": "episode"}


def make_native(num_envs: int, env_id: str = COUNTER, **kwargs: Any):
    return fastbatch.make(env_id, num_envs, **{**STATS, **kwargs})


def make_native_async(num_envs: int, batch_size: int, env_id: str = COUNTER, **kwargs: Any):
    return fastbatch.make(env_id, num_envs, batch_size=batch_size, **{**STATS, **kwargs})


def make_native_whole_batch(num_envs: int, env_id: str = COUNTER, **kwargs: Any):
    return WholeBatch(make_native_async(num_envs, 1, env_id, **kwargs))


def make_process(num_envs: int, env_id: str = COUNTER, **kwargs: Any):
    """The process backend with real worker processes (two unless told otherwise); the counter
    id stands for its Python twin, any other id for gymnasium's env."""
    kwargs = {**STATS, "num_workers": min(2, num_envs), "in_parent": False, **kwargs}
    if env_id != COUNTER:
        return fastbatch.make(env_id, num_envs, backend="process", **kwargs)
    params = {key: kwargs.pop(key) for key in _COUNTER_PARAMS if key in kwargs}
    return fastbatch.make(counter_factory(**params), num_envs, backend="process", **kwargs)


def make_process_async(num_envs: int, batch_size: int, env_id: str = COUNTER, **kwargs: Any):
    """One env per worker process: any batch_size is then made of whole worker blocks."""
    return make_process(num_envs, env_id, batch_size=batch_size, num_workers=num_envs, **kwargs)


@dataclasses.dataclass(frozen=True)
class Backend:
    """How a test builds envs of one backend, all with the same behaviour.

    `make(num_envs, env_id=COUNTER, **kwargs)`: a vector env stepped in whole batches. The
    counter id is the native `_TestCounter-v0` (its Python twin `CounterEnv` for the process
    backend); other ids are native envs or gymnasium's. `make_async(num_envs, batch_size, ...)`:
    the same backend in async mode (send/recv); None where it has none."""

    name: str
    make: Callable[..., gymnasium.vector.VectorEnv]
    make_async: Callable[..., gymnasium.vector.VectorEnv] | None = None
    is_async: bool = False  # make() steps an async env (recv returns the first envs to finish)

    def recording(self, made: list) -> Backend:
        """This backend, appending every env it makes to `made` (for the fixture to close)."""

        def record(make):
            def recorded(*args, **kwargs):
                env = make(*args, **kwargs)
                made.append(env)
                return env

            return None if make is None else recorded

        return dataclasses.replace(self, make=record(self.make), make_async=record(self.make_async))


BACKENDS = {
    "native": Backend("native", make_native, make_native_async),
    "native-async": Backend(
        "native-async", make_native_whole_batch, make_native_async, is_async=True
    ),
    "process": Backend("process", make_process, make_process_async),
}


# ---------------------------------------------------------------------------- helpers
def scripted(n: int, length: int = 5, **kwargs: Any):
    """`n` ScriptedEnvs on the process backend."""
    return fastbatch.make([lambda: ScriptedEnv(length)] * n, backend="process", **kwargs)


def worker_processes(env) -> list:
    """The `subprocess.Popen` of each block of a process-backend env (None: stepped in the caller)."""
    return env._workers.processes


def random_actions(env, rng: np.random.Generator) -> np.ndarray:
    space = env.single_action_space
    if isinstance(space, gymnasium.spaces.Discrete):
        return rng.integers(space.n, size=env.num_envs)
    return rng.uniform(space.low, space.high, size=(env.num_envs, *space.shape)).astype(space.dtype)


def rollout(env, steps: int, seed: int, action_seed: int = 0) -> list[np.ndarray]:
    """Copies of every result of `steps` random steps after `reset(seed=seed)`."""
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    out = [obs.copy()]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(random_actions(env, rng))
        out += [obs.copy(), reward.copy(), terminated.copy(), truncated.copy()]
    return out


def assert_same(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    """Equal arrays, bit for bit."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.tobytes() == y.tobytes()


def assert_infos_equal(info: dict[str, Any], reference: dict[str, Any]) -> None:
    """`info` holds the keys of gymnasium's `reference` info, with equal arrays and masks."""
    assert set(info) == set(reference), (info.keys(), reference.keys())
    for key, value in reference.items():
        if key == "final_obs":
            for a, b in zip(info[key], value):
                if b is None:
                    assert a is None
                else:
                    np.testing.assert_array_equal(a, b)
        elif isinstance(value, dict):
            assert_infos_equal(info[key], value)
        else:
            np.testing.assert_array_equal(info[key], value)


def raised_by(call: Callable[[Any], Any], env) -> tuple[type, str] | None:
    """The type and text of what `call(env)` raised (None: nothing was raised)."""
    try:
        call(env)
    except Exception as exc:  # what was raised is the result
        return type(exc), str(exc)
    return None

"""The gymnasium vector contract, written once and run on every backend (the `backend` fixture):
(seeding and reset masks in test_contract_reset.py) the three autoreset modes against `SyncVectorEnv` over the Python twin,
episode statistics against `RecordEpisodeStatistics`, bad input, env errors and close; and the
same exception type and message for the same bad input on both backends."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import fastbatch
from tests.envs import COUNTER, CounterEnv, assert_infos_equal, raised_by, random_actions

pytestmark = [pytest.mark.engine, pytest.mark.threads]


# ---------------------------------------------------------------------------- autoreset
def _twins(backend, mode, num_envs, max_steps):
    """The backend's counter envs and gymnasium's SyncVectorEnv over the Python twin."""
    env = backend.make(num_envs, autoreset_mode=mode, max_episode_steps=max_steps, num_workers=2)
    reference = SyncVectorEnv(
        [lambda: TimeLimit(CounterEnv(), max_steps) for _ in range(num_envs)], autoreset_mode=mode
    )
    return env, reference


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_autoreset_matches_gymnasium_sync_vector_env(backend, mode):
    env, reference = _twins(backend, mode, num_envs=5, max_steps=6)
    obs, _ = env.reset(seed=0)
    ref_obs, _ = reference.reset(seed=0)
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        actions = rng.choice(4, size=5, p=[0.3, 0.3, 0.3, 0.1])
        obs, reward, terminated, truncated, info = env.step(actions)
        r_obs, r_reward, r_terminated, r_truncated, r_info = reference.step(actions)
        np.testing.assert_array_equal(obs, r_obs)
        np.testing.assert_array_equal(reward, r_reward)
        np.testing.assert_array_equal(terminated, r_terminated)
        np.testing.assert_array_equal(truncated, r_truncated)
        info = {k: v for k, v in info.items() if k not in ("episode", "_episode")}
        assert_infos_equal(info, r_info)
        ends += int(np.sum(r_terminated | r_truncated))
    assert ends > 50


def test_disabled_autoreset_needs_an_explicit_masked_reset(backend):
    env, reference = _twins(backend, AutoresetMode.DISABLED, num_envs=3, max_steps=4)
    env.reset(seed=0)
    reference.reset(seed=0)
    actions = np.array([0, 3, 1])
    for _ in range(4):
        result = env.step(actions)
        for a, b in zip(result[:4], reference.step(actions)[:4]):
            np.testing.assert_array_equal(a, b)
        done = result[2] | result[3]
        if done.any():
            with pytest.raises(ValueError, match="autoreset is disabled"):
                env.step(actions)
            obs, _ = env.reset(options={"reset_mask": done})
            np.testing.assert_array_equal(
                obs, reference.reset(options={"reset_mask": done.copy()})[0]
            )
        actions = np.array([0, 1, 1])
    every = np.ones(3, dtype=bool)
    assert env.step(np.full(3, 3))[2].all()  # every env ends at once
    reference.step(np.full(3, 3))
    with pytest.raises(ValueError, match="env 0 has ended its episode and autoreset is disabled"):
        env.step(actions)
    obs, _ = env.reset(options={"reset_mask": every})
    np.testing.assert_array_equal(obs, reference.reset(options={"reset_mask": every})[0])
    np.testing.assert_array_equal(obs, np.zeros((3, 2), np.float32))
    env.step(actions)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_episode_statistics_match_gymnasiums_wrapper(backend, mode):
    env, reference = _twins(backend, mode, num_envs=4, max_steps=9)
    reference = RecordEpisodeStatistics(reference)
    env.reset(seed=0)
    reference.reset(seed=0)
    rng = np.random.default_rng(1)
    seen = 0
    for _ in range(200):
        actions = rng.choice(4, size=4, p=[0.3, 0.3, 0.3, 0.1])
        info = env.step(actions)[4]
        r_info = reference.step(actions)[4]
        assert ("episode" in info) == ("episode" in r_info)
        if "episode" in r_info:
            seen += 1
            np.testing.assert_array_equal(info["_episode"], r_info["_episode"])
            np.testing.assert_array_equal(info["episode"]["r"], r_info["episode"]["r"])
            np.testing.assert_array_equal(info["episode"]["l"], r_info["episode"]["l"])
            assert np.all(info["episode"]["t"][info["_episode"]] >= 0)
    assert seen > 20


@pytest.mark.parametrize("name", ["same_step", "SameStep", "SAME_STEP"])
def test_autoreset_mode_strings(backend, name):
    env = backend.make(2, autoreset_mode=name)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP


def test_gymnasium_vector_wrappers_work_on_top(backend):
    from gymnasium.wrappers.vector import ClipAction, NormalizeObservation, NormalizeReward

    env = backend.make(4, "Pendulum-v1", seed=0, stats_key=None)
    env = RecordEpisodeStatistics(NormalizeReward(NormalizeObservation(ClipAction(env))))
    env.reset(seed=0)
    episodes = 0
    for _ in range(450):
        obs, *_, info = env.step(np.full((4, 1), 5.0, np.float32))
        assert obs.shape == (4, 3) and np.all(np.isfinite(obs))
        episodes += int(np.sum(info.get("_episode", 0)))
    assert episodes == 8  # Pendulum truncates every 200 steps; one step each for the autoresets


# ---------------------------------------------------------------------------- actions
@pytest.mark.parametrize(
    "env_id, actions, error, match",
    [
        (COUNTER, np.zeros(3, dtype=np.int64), ValueError, r"shape \(4,\)"),
        (COUNTER, np.zeros((4, 1), dtype=np.int64), ValueError, "shape"),
        (COUNTER, np.zeros(4, dtype=np.float32), TypeError, "integers"),
        (
            COUNTER,
            np.array([0, 1, 9, 0]),
            ValueError,
            r"action 9 for env 2 is outside Discrete\(4\)",
        ),
        (COUNTER, np.array([0, -1, 0, 0]), ValueError, "outside"),
        (COUNTER, "left", TypeError, "integers"),
        ("Pendulum-v1", np.zeros(4, dtype=np.float32), ValueError, r"shape \(4, 1\)"),
        (
            "Pendulum-v1",
            np.array([[0.0], [np.nan], [0.0], [0.0]], np.float32),
            ValueError,
            "env 1 is NaN",
        ),
        ("Pendulum-v1", np.zeros((4, 1), dtype=np.complex64), TypeError, "real numbers"),
    ],
    ids=["short", "2-d", "float", "too-big", "negative", "string", "box-shape", "nan", "complex"],
)
def test_bad_actions_raise_clear_errors(backend, env_id, actions, error, match):
    env = backend.make(4, env_id, seed=0)
    env.reset()
    with pytest.raises(error, match=match):
        env.step(actions)
    env.step(random_actions(env, np.random.default_rng(0)))  # still usable


def test_continuous_actions_outside_the_bounds_are_clipped_like_gymnasium(backend):
    env = backend.make(2, "Pendulum-v1", seed=0)
    clipped = backend.make(2, "Pendulum-v1", seed=0)
    env.reset()
    clipped.reset()
    big = env.step(np.array([[50.0], [-np.inf]], np.float64))[0]
    ref = clipped.step(np.array([[2.0], [-2.0]], np.float32))[0]
    np.testing.assert_array_equal(big, ref)


def test_list_actions_are_accepted(backend):
    env = backend.make(2, seed=0)
    env.reset()
    env.step([0, 1])


# ---------------------------------------------------------------------------- env errors, close
def test_an_exception_in_an_env_names_the_env_and_the_env_stays_usable(backend):
    env = backend.make(6, num_workers=3, throw_at_step=3)
    env.reset(seed=0)
    actions = np.zeros(6, dtype=np.int64)
    env.step(actions)
    env.step(actions)
    with pytest.raises(fastbatch.EnvError, match="step 3 failed") as caught:
        env.step(actions)
    index = caught.value.env_index
    assert index in (range(6) if backend.is_async else (0,))  # async: the first env received
    assert str(caught.value).startswith(f"env {index}:")
    assert isinstance(caught.value, RuntimeError)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(actions)
    with pytest.raises(RuntimeError, match="without a mask"):
        env.reset(options={"reset_mask": np.ones(6, dtype=bool)})
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, np.zeros((6, 2), np.float32))
    env.step(actions)


def test_an_exception_in_reset_is_reported(backend):
    env = backend.make(4, throw_at_reset=2, num_workers=2)
    env.reset()
    with pytest.raises(fastbatch.EnvError, match="reset number 2 failed"):
        env.reset()


def test_step_before_reset_and_after_close_raise(backend):
    env = backend.make(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    env.close()
    env.close()  # idempotent
    assert env.closed
    with pytest.raises(fastbatch.ClosedEnvError, match="closed"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(fastbatch.ClosedEnvError, match="closed"):
        env.reset()


def test_num_workers_is_the_parallelism_knob(backend):
    assert backend.make(4, num_workers=2).unwrapped.num_workers == 2
    assert backend.make(4, num_workers=1).unwrapped.num_workers == 1


# ---------------------------------------------------------------------------- same error, same text
ACTIONS = np.zeros(8, dtype=np.int64)
NAN_AT_2 = np.zeros((8, 1), np.float32)
NAN_AT_2[2] = np.nan
PENDULUM = "Pendulum-v1"
AFTER_ERROR = "^a previous step raised an env error; call reset\\(\\) before stepping again$"


def _fresh(env):
    return env


def _reset(env):
    env.reset()
    return env


def _closed(env):
    env.reset()
    env.close()
    return env


def _after_env_error(env):
    env.reset()
    with pytest.raises(fastbatch.EnvError):
        env.step(ACTIONS)
    return env


def _after_env_5_ended(env):
    env.reset()
    env.step(np.array([0, 0, 0, 0, 0, 3, 0, 0]))
    return env


def _step(actions=ACTIONS):
    return lambda env: env.step(actions)


def _send(env):
    env.send(ACTIONS)


def _recv(env):
    env.recv()


def _send_twice(env):
    env.send(ACTIONS)
    env.send(ACTIONS)


def _reset_with(options):
    return lambda env: env.reset(options=options)


def _mask(mask):
    return _reset_with({"reset_mask": mask})


def _case(call, error, message="", state=_reset, env_id=COUNTER, **make_kwargs):
    """A bad call on 8 envs (made with `make_kwargs`, brought to `state`), the exception type it
    raises and a regex its message matches (the relayout plan's text, where the plan gives it)."""
    return dict(make_kwargs, env_id=env_id), state, call, error, message


Closed = fastbatch.ClosedEnvError
SAME_ERROR = {
    "step after close": _case(_step(), Closed, "^this fastbatch env is closed$", _closed),
    "reset after close": _case(_reset, Closed, "^this fastbatch env is closed$", _closed),
    "send after close": _case(_send, Closed, "^this fastbatch env is closed$", _closed),
    "recv after close": _case(_recv, Closed, "^this fastbatch env is closed$", _closed),
    "step before reset": _case(_step(), RuntimeError, r"^call reset\(\) before step\(\)$", _fresh),
    "send before reset": _case(_send, RuntimeError, r"^call reset\(\)", _fresh),
    "recv before reset": _case(_recv, RuntimeError, r"^call reset\(\)", _fresh),
    "step after an env error": _case(
        _step(), RuntimeError, AFTER_ERROR, _after_env_error, throw_at_step=1
    ),
    "masked reset after an env error": _case(
        _mask(np.ones(8, bool)),
        RuntimeError,
        r"reset\(\) without a mask",
        _after_env_error,
        throw_at_step=1,
    ),
    "options not a dict": _case(_reset_with(["reset_mask"]), TypeError),
    "unknown reset option": _case(
        _reset_with({"x": 1}), ValueError, r"^unsupported reset option\(s\) 'x'; "
    ),
    "mask not an array": _case(_mask([True] * 8), TypeError),
    "mask not bool": _case(_mask(np.ones(8, np.int64)), TypeError),
    "mask of the wrong shape": _case(_mask(np.ones(7, bool)), ValueError),
    "mask without a True": _case(_mask(np.zeros(8, bool)), ValueError),
    "partial mask on the first reset": _case(
        _mask(np.arange(8) < 4),
        ValueError,
        r"^the first reset must reset every env \(no reset_mask, or an all-True one\)$",
        _fresh,
    ),
    "scalar actions": _case(
        _step(0), TypeError, r"^actions must be a batch, an array of shape \(8,\), got a scalar$"
    ),
    "actions not array-like": _case(
        _step([[0]] * 7 + [[1, 2]]),
        TypeError,
        r"^actions must be a numpy array \(or convertible to one\)$",
    ),
    "Discrete actions not integers": _case(
        _step(np.zeros(8)),
        TypeError,
        r"^actions for a Discrete\(4\) space must be integers, got dtype float64$",
    ),
    "actions of the wrong shape": _case(
        _step(ACTIONS[:7]), ValueError, r"^actions must have shape \(8,\), got \(7,\)$"
    ),
    "action out of range": _case(
        _step(np.array([0, 0, 0, 9, 0, 0, 0, 0])),
        ValueError,
        r"^action 9 for env 3 is outside Discrete\(4\)$",
    ),
    "Box actions not real": _case(
        _step(np.zeros((8, 1), np.complex64)),
        TypeError,
        r"^actions for a Box space must be real numbers, got dtype complex64$",
        env_id=PENDULUM,
    ),
    "NaN action": _case(
        _step(NAN_AT_2), ValueError, r"^action for env 2 is NaN; ", env_id=PENDULUM
    ),
    "stepping an ended env (autoreset disabled)": _case(
        _step(), ValueError, r"^env 5 has ended", _after_env_5_ended, autoreset_mode="disabled"
    ),
    "sync send twice": _case(_send_twice, fastbatch.AsyncStateError),
    "sync recv without send": _case(_recv, fastbatch.AsyncStateError),
}


@pytest.mark.no_tsan
@pytest.mark.parametrize("case", list(SAME_ERROR))
def test_both_backends_raise_the_same_error_for_the_same_bad_input(all_backends, case):
    kwargs, state, call, error, message = SAME_ERROR[case]
    raised = {
        name: raised_by(call, state(all_backends[name].make(8, **kwargs)))
        for name in ("native", "process")
    }
    assert raised["native"] == raised["process"]
    kind, text = raised["native"]
    assert issubclass(kind, error)
    assert re.search(message, text), text

"""Property-based fuzzing of the native vector API: random call sequences with random, often
invalid, arguments. Every call either works as documented or raises TypeError/ValueError or a
documented fastbatch error; the process never crashes; after an error the env stays usable
(or is clearly closed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbatch

pytestmark = pytest.mark.engine

ENV_IDS = fastbatch.list_envs()
ALLOWED = (TypeError, ValueError, fastbatch.AsyncStateError, fastbatch.ClosedEnvError)

weird_numbers = st.sampled_from(
    [0, 1, -1, 2, 3, 7, 2**31, -(2**63), 2**63 - 1, np.nan, np.inf, -np.inf, 0.5, 1e30]
)


@st.composite
def arrays(draw, num_envs):
    """Arrays of varied dtypes, shapes, layouts and alignments, values often out of range."""
    dtype = draw(
        st.sampled_from(
            [np.int64, np.int32, np.uint8, np.float32, np.float64, np.bool_, np.complex64]
        )
    )
    shape = draw(
        st.sampled_from(
            [
                (num_envs,),
                (num_envs, 1),
                (num_envs, 2),
                (num_envs + 1,),
                (),
                (0,),
                (max(num_envs - 1, 0), 1),
                (num_envs, 1, 1),
            ]
        )
    )
    values = np.array(draw(st.lists(weird_numbers, min_size=1, max_size=4)), dtype=np.float64)
    with np.errstate(all="ignore"):
        base = np.resize(values, int(np.prod(shape)) if shape else 1).astype(
            dtype, casting="unsafe"
        )
    array = base.reshape(shape) if shape else base.reshape(())
    layout = draw(st.sampled_from(["c", "fortran", "strided", "misaligned"]))
    if layout == "fortran" and array.ndim > 1:
        array = np.asfortranarray(array)
    elif layout == "strided" and array.ndim >= 1 and array.size:
        array = np.repeat(array, 2, axis=0)[::2]
    elif layout == "misaligned" and array.size:
        raw = np.zeros(array.nbytes + 1, np.uint8)
        array = raw[1:].view(array.dtype).reshape(array.shape) if array.itemsize == 1 else array
    return array


def valid_actions(env, rng):
    space = env.single_action_space
    if hasattr(space, "n"):
        return rng.integers(space.n, size=env.num_envs)
    return rng.uniform(space.low, space.high, size=(env.num_envs, *space.shape)).astype(np.float32)


calls = st.lists(
    st.one_of(
        st.tuples(st.just("step_valid"), st.none()),
        st.tuples(st.just("step"), st.none()),
        st.tuples(
            st.just("reset"), st.one_of(st.none(), st.integers(-5, 2**64 + 5), st.text(max_size=2))
        ),
        st.tuples(st.just("reset_mask"), st.lists(st.booleans(), min_size=0, max_size=6)),
        st.tuples(st.just("send"), st.none()),
        st.tuples(st.just("recv"), st.none()),
        st.tuples(st.just("close"), st.none()),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    env_id=st.sampled_from([*ENV_IDS, "_TestCounter-v0"]),
    num_envs=st.integers(1, 5),
    threads=st.integers(1, 3),
    async_mode=st.booleans(),
    mode=st.sampled_from(["next_step", "same_step", "disabled"]),
    sequence=calls,
    data=st.data(),
)
def test_random_call_sequences_never_crash(
    env_id, num_envs, threads, async_mode, mode, sequence, data
):
    batch = max(1, num_envs - 1) if async_mode else None
    env = fastbatch.make(
        env_id, num_envs=num_envs, num_workers=threads, batch_size=batch, autoreset_mode=mode
    )
    rng = np.random.default_rng(0)
    rows = num_envs
    for name, arg in sequence:
        try:
            if name == "step_valid":
                result = env.step(
                    valid_actions(env, rng)[:rows] if env.is_async else valid_actions(env, rng)
                )
                rows = len(result[1])
            elif name == "step":
                env.step(data.draw(arrays(num_envs)))
            elif name == "reset":
                obs, _ = env.reset(seed=arg)
                assert obs.shape == (num_envs, *env.single_observation_space.shape)
                rows = num_envs
            elif name == "reset_mask":
                env.reset(options={"reset_mask": np.array(arg, dtype=bool)})
            elif name == "send":
                env.send(data.draw(arrays(num_envs)))
            elif name == "recv":
                env.recv()
            elif name == "close":
                env.close()
        except ALLOWED:
            pass
        except RuntimeError as exc:  # documented: step before reset, step after an env error
            assert "reset" in str(exc), exc
    if not env.closed:
        try:
            env.reset()
            env.step(valid_actions(env, rng))  # still usable (async: a full batch of sends)
        except fastbatch.AsyncStateError:
            pass
        env.close()
    assert env.closed


@settings(max_examples=100, deadline=None)
@given(
    num_envs=st.integers(-3, 3),
    threads=st.one_of(st.none(), st.integers(-2, 4)),
    steps=st.one_of(st.none(), st.integers(-2, 5)),
    batch=st.one_of(st.none(), st.integers(-1, 4)),
    env_id=st.sampled_from([*ENV_IDS, "nope", "fastbatch/CartPole-v1"]),
)
def test_random_make_arguments(num_envs, threads, steps, batch, env_id):
    try:
        env = fastbatch.make(
            env_id,
            num_envs=num_envs,
            num_workers=threads,
            max_episode_steps=steps,
            batch_size=batch,
            backend="native",
        )
    except (TypeError, ValueError):
        return
    obs, _ = env.reset(seed=1)
    assert obs.shape[0] == num_envs
    env.close()

"""The gymnasium vector contract on every backend (the `backend` fixture): seeding and reset
masks. test_contract.py holds autoreset, episode statistics, bad input and use after close."""

from __future__ import annotations

import numpy as np
import pytest


# ---------------------------------------------------------------------------- seeding
def test_env_i_is_seeded_with_seed_plus_i(backend):
    batch_obs, _ = backend.make(4, "CartPole-v1").reset(seed=100)
    for i in range(4):
        obs, _ = backend.make(1, "CartPole-v1").reset(seed=100 + i)
        np.testing.assert_array_equal(obs[0], batch_obs[i])


def test_reset_seed_reseeds_and_unseeded_reset_continues(backend):
    env = backend.make(3, "CartPole-v1")
    first, _ = env.reset(seed=5)
    first = first.copy()
    again, _ = env.reset(seed=5)
    np.testing.assert_array_equal(first, again)
    following, _ = env.reset()
    assert not np.array_equal(first, following)
    seeded_at_make = backend.make(3, "CartPole-v1", seed=5)
    np.testing.assert_array_equal(seeded_at_make.reset()[0], first)


def test_seed_list_with_none_keeps_that_envs_generator(backend):
    env = backend.make(2, "CartPole-v1")
    env.reset(seed=[1, 2])
    obs, _ = env.reset(seed=[1, None])
    ref = backend.make(1, "CartPole-v1")
    np.testing.assert_array_equal(obs[0], ref.reset(seed=1)[0][0])


@pytest.mark.parametrize("seed", [-1, 1.5, "7"])
def test_bad_seeds_are_refused(backend, seed):
    env = backend.make(2)
    with pytest.raises((ValueError, TypeError), match="seed"):
        env.reset(seed=seed)
    # numpy's SeedSequence takes any size; the process backend's shared words hold 64 bits.
    if backend.name == "process":
        with pytest.raises(ValueError, match=r"in \[0, 2\*\*64\)"):
            env.reset(seed=2**64)
    else:
        env.reset(seed=2**64)


# ---------------------------------------------------------------------------- reset mask
def test_reset_mask_resets_only_masked_envs(backend):
    env = backend.make(4, "CartPole-v1", seed=0)
    env.reset()
    for _ in range(5):
        obs, *_ = env.step(np.ones(4, dtype=np.int64))
    before = obs.copy()
    mask = np.array([True, False, True, False])
    after, info = env.reset(options={"reset_mask": mask})
    assert info == {}
    np.testing.assert_array_equal(after[~mask], before[~mask])
    assert not np.array_equal(after[mask], before[mask])
    assert np.all(np.abs(after[mask]) <= 0.05)


@pytest.mark.parametrize(
    "mask, error, match",
    [
        # gymnasium's messages (tests/vector/test_vector_env.py::test_partial_reset_failure)
        ([True, False], TypeError, r"numpy array of `dtype=np.bool_`, got list$"),
        (
            np.array([1, 0]),
            TypeError,
            r"^`options\['reset_mask'\]` must have `dtype=np.bool_`, got int64$",
        ),
        (
            np.array([True, False, True]),
            ValueError,
            r"^`options\['reset_mask'\]` must have shape `\(2,\)`, got \(3,\)$",
        ),
        (
            np.array([False, False]),
            ValueError,
            r"^`options\['reset_mask'\]` must contain a boolean array with at least one True "
            r"value, got reset_mask=\[False False\]$",
        ),
    ],
    ids=["list", "int", "shape", "no-true"],
)
def test_bad_reset_masks_are_refused(backend, mask, error, match):
    env = backend.make(2, seed=0)
    env.reset()
    with pytest.raises(error, match=match):
        env.reset(options={"reset_mask": mask})


def test_unknown_reset_options_are_refused(backend):
    env = backend.make(2)
    with pytest.raises(ValueError, match="unsupported reset option"):
        env.reset(options={"low": -0.1})

"""Every gymnasium space through the process backend, checked the way gymnasium's tests/vector
suite checks its vectorisers: the same seeds give the same observations, rewards, flags and
infos as `SyncVectorEnv` (array spaces and Dict/Tuple of them through the shared memory; Graph,
Sequence, OneOf, Text and custom spaces pickled), in both autoreset modes with autoreset, with
reset masks in DISABLED mode, and env by env in async mode. Then what the caller gets (types,
alignment, copies) and the action checks."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

import fastbatch
from fastbatch.process.spaces import SpacePlan
from tests.envs import worker_processes
from tests.space_envs import PICKLED_SPACES, SHARED_SPACES, IntObsEnv, space_env

ALL_SPACES = SHARED_SPACES + PICKLED_SPACES
IDS = [str(s) for s in ALL_SPACES]
STATS = ("episode", "_episode")  # fastbatch's episode statistics, which SyncVectorEnv lacks


def _make(factory, num_envs: int = 3, **kwargs):
    """Blocks of 2 and 1 envs: block 0 stepped in the caller (in_parent), block 1 in a worker
    process, so both paths of every space are exercised."""
    kwargs.setdefault("num_workers", 2)
    kwargs.setdefault("in_parent", "batch_size" not in kwargs)
    return fastbatch.make([factory] * num_envs, backend="process", **kwargs)


def _without_stats(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in STATS}


def _assert_same_step(got: tuple, expected: tuple) -> None:
    obs, reward, terminated, truncated, info = got
    assert data_equivalence(obs, expected[0], exact=True), (obs, expected[0])
    np.testing.assert_array_equal(reward, expected[1].astype(np.float32))
    np.testing.assert_array_equal(terminated, expected[2])
    np.testing.assert_array_equal(truncated, expected[3])
    assert data_equivalence(_without_stats(info), expected[4], exact=True), (info, expected[4])


def test_each_space_takes_the_path_gymnasium_would():
    """Array spaces (and Dict/Tuple of them) get shared leaves, as AsyncVectorEnv's shared
    memory holds them; the rest is pickled, as AsyncVectorEnv(shared_memory=False) sends it."""
    for space in SHARED_SPACES:
        plan = SpacePlan(space)
        assert plan.shared and plan.leaves, space
        empty = create_empty_array(space, 3)
        leaves = [np.zeros((3, *shape), dtype) for shape, dtype in plan.leaves]
        assert data_equivalence(plan.assemble(leaves), empty, exact=True)
    for space in PICKLED_SPACES:
        plan = SpacePlan(space)
        assert not plan.shared and not plan.leaves, space


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("space", ALL_SPACES, ids=IDS)
def test_every_space_steps_as_in_sync_vector_env(space, mode):
    env = _make(space_env(space), autoreset_mode=mode)
    ref = SyncVectorEnv([space_env(space)] * 3, autoreset_mode=mode)
    assert env.single_observation_space == space and env.single_action_space == space
    assert env.observation_space == ref.observation_space
    assert env.action_space == ref.action_space
    obs, info = env.reset(seed=11)
    ref_obs, ref_info = ref.reset(seed=11)
    assert data_equivalence(obs, ref_obs, exact=True)
    assert data_equivalence(info, ref_info, exact=True)
    assert obs in env.observation_space
    ref.action_space.seed(5)
    ended = 0
    for _ in range(14):
        actions = ref.action_space.sample()
        expected = ref.step(actions)
        _assert_same_step(env.step(actions), expected)
        ended += int(np.sum(expected[2] | expected[3]))
    assert ended >= 3
    env.close()


@pytest.mark.parametrize(
    "space", [SHARED_SPACES[-1], PICKLED_SPACES[1], PICKLED_SPACES[-1]], ids=str
)
def test_reset_masks_in_disabled_mode_as_in_sync_vector_env(space):
    mode = AutoresetMode.DISABLED
    env = _make(space_env(space), autoreset_mode=mode)
    ref = SyncVectorEnv([space_env(space)] * 3, autoreset_mode=mode)
    assert data_equivalence(env.reset(seed=3)[0], ref.reset(seed=3)[0], exact=True)
    ref.action_space.seed(2)
    masks = 0
    for t in range(14):
        actions = ref.action_space.sample()
        expected = ref.step(actions)
        _assert_same_step(env.step(actions), expected)
        done = expected[2] | expected[3]
        if done.any():
            options = {"reset_mask": done}
            seeds = [100 + t + i for i in range(3)]
            got = env.reset(seed=seeds, options=options)
            want = ref.reset(seed=seeds, options=dict(options))
            assert data_equivalence(got[0], want[0], exact=True)
            assert data_equivalence(got[1], want[1], exact=True)
            masks += 1
    assert masks >= 2
    env.close()


def _batch(space, values: list):
    return concatenate(space, values, create_empty_array(space, len(values)))


@pytest.mark.parametrize(
    "space", [SHARED_SPACES[9], SHARED_SPACES[-1], PICKLED_SPACES[1], PICKLED_SPACES[6]], ids=str
)
def test_async_mode_steps_each_env_as_it_would_alone(space):
    """batch_size < num_envs: each received row equals that env stepped alone (a SyncVectorEnv
    of one env seeded with seed + i) with the actions it was sent."""
    n = 4
    env = _make(space_env(space), n, num_workers=n, batch_size=2)
    refs = [SyncVectorEnv([space_env(space)]) for _ in range(n)]
    obs, _ = env.reset(seed=20)
    rows = list(iterate(env.observation_space, obs))
    for i, ref in enumerate(refs):
        expected = next(iterate(ref.observation_space, ref.reset(seed=20 + i)[0]))
        assert data_equivalence(rows[i], expected, exact=True)
    single = env.single_action_space
    single.seed(3)
    actions = [single.sample() for _ in range(n)]
    env.send(_batch(single, actions))
    received = 0
    for _ in range(12):
        obs, reward, terminated, truncated, info = env.recv()
        ids = info["env_id"].tolist()
        assert len(ids) == 2
        for j, (i, row) in enumerate(zip(ids, iterate(env.observation_space, obs))):
            expected = refs[i].step(_batch(single, [actions[i]]))
            assert data_equivalence(
                row, next(iterate(refs[i].observation_space, expected[0])), exact=True
            )
            assert reward[j] == np.float32(expected[1][0])
            assert (terminated[j], truncated[j]) == (expected[2][0], expected[3][0])
            actions[i] = single.sample()
            received += 1
        env.send(_batch(single, [actions[i] for i in ids]), np.array(ids))
    assert received == 24
    env.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_blackjack_matches_sync_vector_env(mode):
    import gymnasium

    env = fastbatch.make("Blackjack-v1", 4, backend="process", num_workers=2, autoreset_mode=mode)
    ref = SyncVectorEnv([lambda: gymnasium.make("Blackjack-v1")] * 4, autoreset_mode=mode)
    assert env.single_observation_space == ref.single_observation_space
    assert data_equivalence(env.reset(seed=1)[0], ref.reset(seed=1)[0], exact=True)
    rng = np.random.default_rng(0)
    for _ in range(30):
        actions = rng.integers(2, size=4)
        _assert_same_step(env.step(actions), ref.step(actions))
    env.close()


@pytest.mark.parametrize("in_parent", [True, False])
def test_final_obs_keeps_what_the_env_returned(in_parent):
    """gymnasium's test_final_obs_info: a Discrete env returning Python ints; final_obs holds
    the int itself (not an np.int64), as SyncVectorEnv keeps it."""
    mode = AutoresetMode.SAME_STEP
    env = _make(IntObsEnv, 2, autoreset_mode=mode, in_parent=in_parent)
    ref = SyncVectorEnv([IntObsEnv] * 2, autoreset_mode=mode)
    assert data_equivalence(env.reset()[0], ref.reset()[0], exact=True)
    for actions in ([1, 2], [3, 1], [0, 3]):
        got, expected = env.step(np.array(actions)), ref.step(np.array(actions))
        _assert_same_step(got, expected)
    info = got[4]
    assert type(info["final_obs"][1]) is int and info["final_obs"][1] == 3
    assert info["final_info"]["action"][1] == 3 and info["final_info"]["_action"].tolist() == [
        False,
        True,
    ]
    env.close()


def test_dict_results_are_aligned_and_never_change_behind_the_caller():
    space = SHARED_SPACES[-1]
    env = _make(space_env(space))
    obs, _ = env.reset(seed=0)
    leaves = [obs["position"]["x"], obs["position"]["y"], *obs["velocity"]]
    kept = [leaf.copy() for leaf in leaves]
    env.action_space.seed(0)
    for _ in range(4):
        env.step(env.action_space.sample())
    for leaf, copy in zip(leaves, kept):
        assert leaf.ctypes.data % 64 == 0
        np.testing.assert_array_equal(leaf, copy)
    env.close()


def test_bool_box_actions_are_accepted_and_bad_actions_named():
    box_bool = spaces.Box(np.array([0, 0, 1]), np.array([1, 0, 1]), dtype=np.bool_)
    env = _make(space_env(spaces.Discrete(2), box_bool))
    env.reset(seed=0)
    env.action_space.seed(0)
    env.step(env.action_space.sample())  # a sampled bool action goes through
    with pytest.raises(TypeError, match="Box of bools space must be integers, got dtype float64"):
        env.step(np.zeros((3, 3)))
    env.close()

    nested = spaces.Dict(a=spaces.MultiDiscrete([2, 3]), b=spaces.Tuple((spaces.Discrete(2),)))
    env = _make(space_env(spaces.Discrete(2), nested))
    env.reset(seed=0)
    good = {"a": np.zeros((3, 2), np.int64), "b": (np.zeros(3, np.int64),)}
    env.step(good)
    with pytest.raises(ValueError, match=r"actions must have the keys \['a', 'b'\], got \['a'\]"):
        env.step({"a": good["a"]})
    with pytest.raises(
        ValueError, match=r"actions\['a'\]: actions must have shape \(3, 2\), got \(3,\)"
    ):
        env.step({**good, "a": np.zeros(3, np.int64)})
    with pytest.raises(ValueError, match=r"actions\['a'\]: action \[0, 3\] for env 1 is outside"):
        env.step({**good, "a": np.array([[0, 0], [0, 3], [1, 2]])})
    with pytest.raises(
        ValueError, match=r"actions\['b'\]\[0\]: action 2 for env 2 is outside Discrete\(2\)"
    ):
        env.step({**good, "b": (np.array([0, 1, 2]),)})
    with pytest.raises(
        TypeError, match=r"actions\['b'\] must be a tuple of 1 entries, got list of 2"
    ):
        env.step({**good, "b": [np.zeros(3, np.int64)] * 2})
    env.step(good)  # a refused action changes nothing
    env.close()

    env = _make(space_env(PICKLED_SPACES[1]))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions must hold 3 entries, got 2"):
        env.step(tuple(env.single_action_space.sample() for _ in range(2)))
    env.close()


@pytest.mark.parametrize("space", [SHARED_SPACES[-1], PICKLED_SPACES[1]], ids=str)
def test_a_restarted_worker_reports_its_fresh_observations_as_final_obs(space):
    env = _make(
        space_env(space, length=50), 4, restart=True, autoreset_mode=AutoresetMode.SAME_STEP
    )
    env.reset(seed=0)
    env.action_space.seed(0)
    env.step(env.action_space.sample())
    os.kill(worker_processes(env)[1].pid, signal.SIGKILL)
    worker_processes(env)[1].wait()  # dead before the step: its pipe is broken (pickled actions)
    obs, _, _, truncated, info = env.step(env.action_space.sample())
    assert env.restarts == 1
    np.testing.assert_array_equal(truncated[2:], [True, True])
    np.testing.assert_array_equal(info["_final_obs"], [False, False, True, True])
    rows = list(iterate(env.observation_space, obs))
    for i in (2, 3):
        assert data_equivalence(info["final_obs"][i], rows[i], exact=True)
    env.step(env.action_space.sample())
    env.close()


def test_results_larger_than_the_pipe_buffer_come_through():
    """Each worker sends several MB per step (pickled final observations of two envs): the
    worker marks its command done before sending, so neither side waits on the other."""
    big = spaces.Box(0, 255, (700, 700, 3), np.uint8)
    env = _make(
        space_env(big, spaces.Discrete(2), length=1),
        4,
        in_parent=False,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    env.reset(seed=0)
    for _ in range(3):
        _, _, _, truncated, info = env.step(np.zeros(4, np.int64))
        assert truncated.all() and all(f.shape == big.shape for f in info["final_obs"])
    env.close()


def test_envs_with_different_spaces_are_refused_as_gymnasium_refuses_them():
    import gymnasium

    factories = [lambda: gymnasium.make("CartPole-v1"), lambda: gymnasium.make("FrozenLake-v1")]
    with pytest.raises(RuntimeError, match="observation spaces are not equivalent"):
        SyncVectorEnv(factories)
    with pytest.raises(
        RuntimeError, match=r"observation spaces are not equivalent: env 1 has Discrete\(16\)"
    ):
        fastbatch.make(factories, backend="process", num_workers=1)

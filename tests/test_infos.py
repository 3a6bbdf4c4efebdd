"""Infos in gymnasium's vector layout: what the process backend's workers return, through a pipe
or shared memory, equals SyncVectorEnv's infos; and the layout helpers' fast path."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import fastbatch
from fastbatch._infos import add_info, numeric_info
from tests.envs import NumericInfoEnv, ScriptedEnv

pytestmark = pytest.mark.engine


def test_infos_statistics_and_per_env_factories_match_gymnasium():
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    fns = [lambda length=length: ScriptedEnv(length) for length in (2, 3, 4)]
    ref = RecordEpisodeStatistics(SyncVectorEnv(fns))
    with fastbatch.make(fns, backend="process", num_workers=2, stats_key="episode") as env:
        env.reset(seed=0)
        ref.reset(seed=0)
        infos_seen = episodes = 0
        for t in range(12):
            actions = np.array([1, 0, 1]) if t % 3 else np.array([0, 1, 1])
            info = env.step(actions)[4]
            rinfo = ref.step(actions)[4]
            assert set(info) == set(rinfo)
            for key in ("bonus", "_bonus", "tag", "_tag"):
                if key in rinfo:
                    np.testing.assert_array_equal(info[key], rinfo[key])
                    infos_seen += 1
            if "episode" in rinfo:
                episodes += int(rinfo["_episode"].sum())
                np.testing.assert_array_equal(info["_episode"], rinfo["_episode"])
                np.testing.assert_array_equal(info["episode"]["r"], rinfo["episode"]["r"])
                np.testing.assert_array_equal(info["episode"]["l"], rinfo["episode"]["l"])
        assert infos_seen > 0 and episodes > 3
    assert env.closed


@pytest.mark.parametrize(
    "mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]
)
def test_numeric_infos_travel_through_shared_memory_and_match_gymnasium(mode):
    fns = [lambda: NumericInfoEnv(7)] * 5
    env = fastbatch.make(fns, backend="process", num_workers=2, autoreset_mode=mode)
    ref = SyncVectorEnv(fns, autoreset_mode=mode)
    obs, info = env.reset(seed=4)
    robs, rinfo = ref.reset(seed=4)
    np.testing.assert_array_equal(obs, robs)
    assert info.keys() == rinfo.keys()
    rng = np.random.default_rng(0)
    shared, done = 0, np.zeros(5, dtype=bool)
    for t in range(40):
        if mode == AutoresetMode.DISABLED and done.any():
            obs, info = env.reset(seed=t, options={"reset_mask": done})
            robs, rinfo = ref.reset(seed=t, options={"reset_mask": done})
            done[:] = False
        else:
            actions = rng.uniform(-1, 1, (5, 1)).astype(np.float32)
            obs, _, te, tr, info = env.step(actions)
            robs, _, rte, _rtr, rinfo = ref.step(actions)
            np.testing.assert_array_equal(te, rte)
            done = te | tr
            shared += int(
                env._workers.views["control"][1, 4] == 2
            )  # HAS_INFO of worker 1: INFO_SHARED
        np.testing.assert_array_equal(obs, robs)
        info.pop("episode", None), info.pop("_episode", None)
        assert info.keys() == rinfo.keys(), t
        for key, value in rinfo.items():
            if key == "final_obs":
                for a, b in zip(info[key], value):
                    np.testing.assert_array_equal(a, b)
            elif isinstance(value, dict):
                assert info[key].keys() == value.keys()
                for k2 in value:
                    np.testing.assert_array_equal(info[key][k2], value[k2])
                    assert info[key][k2].dtype == value[k2].dtype
            else:
                np.testing.assert_array_equal(info[key], value)
                assert info[key].dtype == value.dtype, key
    assert shared > 10
    env.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from(["f64", "int", "bool", "f32", "i8"])),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 3),
)
def test_block_info_fast_path_equals_entry_by_entry(rows_and_types, first):
    from fastbatch._infos import add_info, block_info

    makers = {"f64": np.float64, "int": int, "bool": bool, "f32": np.float32, "i8": np.int8}
    entries = []
    for k, (present, kind) in enumerate(rows_and_types):
        if present:
            entries.append((first + k, None, {"a": makers[kind](k + 1), "b": float(k)}))
    rows = len(rows_and_types)
    expected: dict = {}
    for i, _, info in entries:
        expected = add_info(expected, info, i - first, rows)
    got = block_info(entries, first, rows)
    assert got.keys() == expected.keys()
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
        assert got[key].dtype == expected[key].dtype


def test_numeric_info_equals_add_info_entry_by_entry():
    """Contract v3's info arrays: NaN is an absent value, a key absent everywhere is left out."""
    layout = {"x": 1, "pair": 2, "gone": 1, "some": 1}
    values = np.arange(20, dtype=np.float64).reshape(4, 5)
    values[:, 3] = np.nan  # "gone": absent in every row
    values[[0, 2], 4] = np.nan  # "some": absent in rows 0 and 2
    expected: dict = {}
    for row in range(4):
        info = {"x": values[row, 0], "pair": values[row, 1:3].copy()}
        if row in (1, 3):
            info["some"] = values[row, 4]
        expected = add_info(expected, info, row, 4)
    present = {k: expected[k] for k in ("x", "_x", "pair", "_pair")}
    for rows, keys, want in (
        (values, layout, expected),
        (values[:, :3], {"x": 1, "pair": 2}, present),
    ):
        got = numeric_info({}, rows.copy(), keys)  # with absent values, and without (fast path)
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
            assert got[key].dtype == want[key].dtype and got[key].flags.c_contiguous

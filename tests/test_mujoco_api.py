"""fastbatch.mujoco around the envs: how make() picks them, their kwargs, infos as arrays,
results independent of threads and mode (finding MuJoCo and its errors: test_mujoco_install.py)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

pytest.importorskip("mujoco")
import fastbatch
from fastbatch import mujoco as fb_mujoco

pytestmark = [pytest.mark.engine, pytest.mark.threads]


def actions(env, steps: int, seed: int = 0) -> np.ndarray:
    space = env.single_action_space
    rng = np.random.default_rng(seed)
    return rng.uniform(space.low, space.high, (steps, env.num_envs, *space.shape)).astype(
        np.float32
    )


@pytest.mark.no_tsan
def test_make_picks_the_native_env_and_process_stays_available():
    env = fastbatch.make("HalfCheetah-v5", 2, seed=0)
    assert isinstance(env, fastbatch.NativeVectorEnv)
    assert isinstance(fastbatch.make("fastbatch/Hopper-v5", 1), fastbatch.NativeVectorEnv)
    process = fastbatch.make("HalfCheetah-v5", 1, backend="process")
    assert isinstance(process, fastbatch.ProcessVectorEnv)
    process.close()
    assert set(fb_mujoco.ENV_IDS) <= set(fastbatch.list_envs())
    single = gymnasium.make("fastbatch/HalfCheetah-v5")
    obs, _ = single.reset(seed=0)
    assert obs.shape == (17,) and obs.dtype == np.float64


@pytest.mark.parametrize(
    ("env_id", "kwargs", "param"),
    [
        ("Hopper-v5", {"reset_noise_scale": -0.1}, "reset_noise_scale"),
        ("Hopper-v5", {"healthy_z_range": (2.0, 1.0)}, "healthy_z_range"),
        ("Hopper-v5", {"healthy_z_range": (1.0,)}, "healthy_z_range"),
        ("Ant-v5", {"contact_force_range": ("a", 1.0)}, "contact_force_range"),
        ("Ant-v5", {"main_body": 99}, "main_body"),
        ("HalfCheetah-v5", {"frame_skip": 0}, "frame_skip"),
        ("Humanoid-v5", {"healthy_z_range_low": float("nan")}, "healthy_z_range_low"),
    ],
)
def test_bad_kwargs_raise_value_error_naming_the_param(env_id, kwargs, param):
    with pytest.raises(ValueError, match=param):
        fastbatch.make(env_id, 1, **kwargs)


def test_unknown_and_mistyped_kwargs_raise_type_error():
    with pytest.raises(TypeError, match="xml_file"):
        fastbatch.make("HalfCheetah-v5", 1, xml_file="half_cheetah.xml")
    with pytest.raises(TypeError, match="terminate_when_unhealthy"):
        fastbatch.make("Hopper-v5", 1, terminate_when_unhealthy=1.0)


def test_param_dependent_spaces():
    assert fastbatch.make("Ant-v5", 1).single_observation_space.shape == (105,)
    ant = fastbatch.make("Ant-v5", 1, include_cfrc_ext_in_observation=False)
    assert ant.single_observation_space.shape == (27,)
    full = fastbatch.make("Humanoid-v5", 1, exclude_current_positions_from_observation=False)
    assert full.single_observation_space.shape == (350,)


def run(env, table) -> list:
    out = [env.reset(seed=5)]
    for a in table:
        out.append(env.step(a))
    return out


def test_results_are_identical_for_any_thread_count_and_in_async_mode():
    table = actions(fastbatch.make("Hopper-v5", 6), 120)
    runs = [run(fastbatch.make("Hopper-v5", 6, num_workers=w), table) for w in (1, 2, 3)]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            for x, y in zip(a, b):
                if isinstance(x, dict):
                    assert x.keys() == y.keys()
                    for key in x:
                        if isinstance(x[key], np.ndarray):
                            np.testing.assert_array_equal(x[key], y[key])
                else:
                    np.testing.assert_array_equal(x, y)
    env = fastbatch.make("Hopper-v5", 6, num_workers=2, batch_size=3)
    env.reset(seed=5)
    received = {i: [] for i in range(6)}
    env.send(table[0])
    next_step, in_flight = np.ones(6, np.int64), 6
    while in_flight >= 3:
        obs, *_, info = env.recv()
        in_flight -= 3
        for row, i in enumerate(info["env_id"]):
            received[i].append(obs[row].copy())
        todo = [i for i in info["env_id"] if next_step[i] < len(table)]
        if todo:
            env.send(np.stack([table[next_step[i]][i] for i in todo]), env_ids=np.array(todo))
            next_step[todo] += 1
            in_flight += len(todo)
    sync_obs = np.array([step[0] for step in runs[0][1:]])
    for i in range(6):
        assert len(received[i]) > len(table) // 4  # envs progress unevenly in async mode
        np.testing.assert_array_equal(np.array(received[i]), sync_obs[: len(received[i]), i])


def row_entries(info: dict, row: int, prefix: str = "") -> dict:
    """Row `row` of every info entry present there (masks applied, nested dicts flattened)."""
    out = {}
    for key, value in info.items():
        if key.startswith("_") or key in ("episode", "env_id"):
            continue
        mask = info.get(f"_{key}")
        if mask is not None and not mask[row]:
            continue
        if isinstance(value, dict):
            out.update(row_entries(value, row, f"{prefix}{key}."))
        else:
            out[prefix + key] = np.asarray(value[row])
    return out


@pytest.mark.parametrize("mode", ["NEXT_STEP", "SAME_STEP"])
def test_async_infos_equal_sync_infos_env_by_env(mode):
    """Async recv copies each env's info row (and SAME_STEP final info) beside its results."""
    kwargs = {"autoreset_mode": gymnasium.vector.AutoresetMode[mode], "max_episode_steps": 4}
    sync = fastbatch.make("Hopper-v5", 6, **kwargs)
    table = actions(sync, 10)
    sync.reset(seed=5)
    expected = [sync.step(a)[-1] for a in table]
    env = fastbatch.make("Hopper-v5", 6, num_workers=2, batch_size=3, **kwargs)
    env.reset(seed=5)
    env.send(table[0])
    next_step, in_flight, checked = np.ones(6, np.int64), 6, 0
    while in_flight >= 3:
        *_, info = env.recv()
        in_flight -= 3
        for row, i in enumerate(info["env_id"]):
            entries = row_entries(info, row)
            reference = row_entries(expected[next_step[i] - 1], i)
            assert entries.keys() == reference.keys()
            for key in entries:
                np.testing.assert_array_equal(entries[key], reference[key], err_msg=key)
            checked += 1
        todo = [i for i in info["env_id"] if next_step[i] < len(table)]
        if todo:
            env.send(np.stack([table[next_step[i]][i] for i in todo]), env_ids=np.array(todo))
            next_step[todo] += 1
            in_flight += len(todo)
    assert checked >= 6 * len(table) - 3


def info_keys(info: dict) -> set:
    keys = {k for k in info if k not in ("episode", "_episode")}
    for name in ("final_info",):
        if name in info:
            keys |= {f"{name}.{k}" for k in info[name]}
    return keys


def test_infos_have_gymnasium_vector_layout():
    """The same keys, masks, nesting and shapes as gymnasium's SyncVectorEnv, SAME_STEP included."""
    same_step = gymnasium.vector.AutoresetMode.SAME_STEP
    env = fastbatch.make("Ant-v5", 4, seed=0, autoreset_mode=same_step, max_episode_steps=3)
    reference = gymnasium.make_vec(
        "Ant-v5", 4, "sync", vector_kwargs={"autoreset_mode": same_step}, max_episode_steps=3
    )
    _, info = env.reset()
    _, ginfo = reference.reset(seed=0)
    assert info_keys(info) == info_keys(ginfo)
    table = actions(env, 3)
    for a in table:
        _, _, _, truncated, info = env.step(a)
        _, _, _, _, ginfo = reference.step(a)
        assert info_keys(info) == info_keys(ginfo)
        for key, value in ginfo.items():
            if isinstance(value, np.ndarray) and value.dtype != object:
                assert info[key].shape == value.shape and info[key].dtype.kind == value.dtype.kind
    assert truncated.all() and info["_final_info"].all() and "reward_ctrl" not in info
    assert info["final_info"]["_reward_ctrl"].all()
    humanoid = fastbatch.make("Humanoid-v5", 3, seed=0)
    _, info = humanoid.reset()
    assert info["tendon_length"].shape == (3, 2) and info["_tendon_length"].all()


def test_masked_reset_reports_only_the_reset_rows():
    env = fastbatch.make("HalfCheetah-v5", 3, seed=0, autoreset_mode="disabled")
    env.reset()
    env.step(actions(env, 1)[0])
    _, info = env.reset(options={"reset_mask": np.array([False, True, False])})
    np.testing.assert_array_equal(info["_x_position"], [False, True, False])
    assert info["x_position"][0] == 0.0 and info["x_position"][2] == 0.0


def test_step_into_and_rollout_storage_take_float64_observations():
    env = fastbatch.make("Swimmer-v5", 4, seed=0)
    env.reset()
    obs = fastbatch.aligned_empty((4, 8), np.float64)
    reward = fastbatch.aligned_empty((4,), np.float32)
    terminated = fastbatch.aligned_empty((4,), np.bool_)
    truncated = fastbatch.aligned_empty((4,), np.bool_)
    info = env.step_into(actions(env, 1)[0], obs, reward, terminated, truncated)
    assert info["reward_forward"].shape == (4,)


def test_make_drops_the_mujoco_packages_profiling_clock_but_keeps_a_users_timer():
    # mjcb_time is one process-wide C pointer: read it from the library the envs link.
    import ctypes
    import time

    import mujoco

    library = ctypes.CDLL(str(fb_mujoco._mujoco()[2]))
    timer = ctypes.c_void_p.in_dll(library, "mjcb_time")
    mujoco.set_mjcb_time(None)  # the package's own clock, as after `import mujoco`
    try:
        assert timer.value is not None
        env = fastbatch.make("Hopper-v5", 2, seed=0)
        assert timer.value is None
        mujoco.set_mjcb_time(time.perf_counter)  # a user's timer survives the next make
        users = timer.value
        assert not fb_mujoco.drop_default_timer()
        fastbatch.make("Hopper-v5", 1).close()
        assert timer.value == users and mujoco.get_mjcb_time() is time.perf_counter
        # Physics never reads the clock: the same episode with and without it.
        steps = actions(env, 40)
        results = []
        for drop in (True, False):
            mujoco.set_mjcb_time(None)
            if drop:
                assert fb_mujoco.drop_default_timer()
            assert (timer.value is None) == drop
            env.reset(seed=3)
            results.append(np.stack([env.step(a)[0] for a in steps]))
        np.testing.assert_array_equal(results[0], results[1])
        env.close()
    finally:
        mujoco.set_mjcb_time(None)
        fb_mujoco.drop_default_timer()


@pytest.mark.parametrize(
    "end",
    [
        "env.close()",
        "pool = env._pool; env.closed = True; del env, pool; import gc; gc.collect()",  # no close
        "",  # still open at exit
    ],
)
@pytest.mark.no_tsan
def test_close_with_steps_in_flight_does_not_deadlock_on_a_python_timer(end):
    # A timer set from Python runs on the pool's threads and takes the GIL: close() must let
    # the steps in flight finish without holding it, and so must the engine's pool when it is
    # collected without close(); an env left open is closed before Python's finalization (whose
    # end of a thread taking the GIL crashed the step). In a child: a hang fails, not stalls.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import time, numpy as np, mujoco, fastbatch
        env = fastbatch.make("Hopper-v5", 8, batch_size=4, num_workers=2, seed=0)
        env.reset()
        mujoco.set_mjcb_time(time.perf_counter)
        env.send(np.zeros((8, 3), np.float32))
        END
        print("closed")
        """
    ).replace("END", end)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and "closed" in done.stdout, done.stderr[-2000:]

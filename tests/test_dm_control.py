"""Native dm_control tasks in lockstep with shimmy's envs (dm_control's own, through gymnasium).

The reference is gymnasium's SyncVectorEnv over ``FlattenObservation(gymnasium.make(id))``
(shimmy's env) with the same autoreset mode: both are reset with the same seed (env i: seed + i,
which shimmy turns into the task's ``RandomState(seed + i)``), take the same actions, and must
give the same observations bit for bit, the same rewards as float32, and the same terminated and
truncated flags, over whole episodes and across autoresets (which keep each task's random stream
going, in both).
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("shimmy")
pytest.importorskip("dm_control")
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import FlattenObservation

import fastbatch
from fastbatch import dm_control as fb_dmc

pytestmark = pytest.mark.engine

NUM_ENVS = 2
# Keys computed with np.log1p (hopper's, finger's and manipulator's touch sensors) or np.arcsinh
# (quadruped's force_torque): numpy's own SIMD versions (its AVX-512 builds) and libm's, which the
# native envs use, differ in the last bit of about one value in seven (arcsinh by two ulps, rarely).
# These keys may differ by two ulps; every other value is bit-equal.
LOG1P_KEYS = ("touch", "force_torque")


def assert_observations_equal(env_id, obs, ref_obs, where, flat=False):
    slices = fb_dmc.observation_keys(env_id, flat_observation=flat)
    exact = np.ones(obs.shape[-1], dtype=bool)
    for key in LOG1P_KEYS:
        if key in slices:
            exact[slices[key]] = False
            np.testing.assert_array_max_ulp(obs[..., slices[key]], ref_obs[..., slices[key]], 2)
    np.testing.assert_array_equal(obs[..., exact], ref_obs[..., exact], err_msg=where)


def reference(env_id: str, mode: AutoresetMode, **kwargs) -> gymnasium.vector.SyncVectorEnv:
    import shimmy  # noqa: F401  (registers the dm_control/ ids)

    def factory():
        return FlattenObservation(gymnasium.make(env_id, **kwargs))

    return gymnasium.vector.SyncVectorEnv([factory] * NUM_ENVS, autoreset_mode=mode)


def assert_infos_equal(info, ref_info, where):
    """shimmy's timestep.step_type and timestep.discount (None at a reset: absent here)."""
    np.testing.assert_array_equal(
        info["timestep.step_type"], np.array(ref_info["timestep.step_type"], dtype=float), where
    )
    ref_discount = ref_info["timestep.discount"]
    present = np.array([d is not None for d in ref_discount])
    mask = info.get("_timestep.discount", np.zeros(len(present), dtype=bool))  # all absent: none
    np.testing.assert_array_equal(mask, present, where)
    if present.any():
        np.testing.assert_array_equal(
            info["timestep.discount"][present], ref_discount[present].astype(float), where
        )


def lockstep(env_id: str, steps: int, mode=AutoresetMode.NEXT_STEP, seed=3, **kwargs) -> int:
    """Steps both `steps` times with random actions; returns how many episodes ended."""
    ours = fastbatch.make(env_id, NUM_ENVS, autoreset_mode=mode, **kwargs)
    theirs = reference(env_id, mode, **kwargs)
    try:
        obs, _ = ours.reset(seed=seed)
        ref_obs, _ = theirs.reset(seed=seed)
        flat = kwargs.get("environment_kwargs", {}).get("flat_observation", False)
        assert_observations_equal(env_id, obs, ref_obs, "reset", flat)
        space = theirs.single_action_space
        rng = np.random.default_rng(seed)
        ended = 0
        for t in range(steps):
            action = rng.uniform(space.low, space.high, (NUM_ENVS, *space.shape))
            obs, reward, terminated, truncated, info = ours.step(action)
            ref_obs, ref_reward, ref_terminated, ref_truncated, ref_info = theirs.step(action)
            where = f"{env_id} step {t}"
            assert_observations_equal(env_id, obs, ref_obs, where, flat)
            np.testing.assert_array_equal(reward, ref_reward.astype(np.float32), err_msg=where)
            np.testing.assert_array_equal(terminated, ref_terminated, err_msg=where)
            np.testing.assert_array_equal(truncated, ref_truncated, err_msg=where)
            assert_infos_equal(info, ref_info, where)
            if mode == AutoresetMode.SAME_STEP and (terminated | truncated).any():
                done = terminated | truncated
                final = np.stack(info["final_obs"][done].tolist())
                ref_final = np.stack(ref_info["final_obs"][done].tolist())
                assert_observations_equal(env_id, final, ref_final, where, flat)
            ended += int((terminated | truncated).sum())
        return ended
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize("env_id", fb_dmc.ENV_IDS)
def test_whole_episodes_and_autoreset_match_shimmy(env_id):
    # 1000 steps per episode for every task: the second episode starts from the autoreset.
    assert lockstep(env_id, 1100) == NUM_ENVS


@pytest.mark.parametrize("env_id", fb_dmc.ENV_IDS)
def test_same_step_autoreset_and_time_limit_kwarg(env_id):
    # task_kwargs' time_limit in seconds: 0.5 s is 50 cartpole or cheetah steps, 20 walker ones.
    ended = lockstep(
        env_id, 130, mode=AutoresetMode.SAME_STEP, seed=11, task_kwargs={"time_limit": 0.5}
    )
    assert ended >= 2 * NUM_ENVS


@pytest.mark.parametrize("env_id", ["dm_control/walker-walk-v0", "dm_control/cheetah-run-v0"])
def test_flat_observation_is_dm_controls_order(env_id):
    kwargs = {"environment_kwargs": {"flat_observation": True}}
    assert lockstep(env_id, 40, **kwargs) == 0


def test_observation_space_and_keys_follow_shimmy():
    for env_id in fb_dmc.ENV_IDS:
        env = fastbatch.make(env_id, 1)
        import shimmy  # noqa: F401

        ref = gymnasium.make(env_id)
        flat = FlattenObservation(ref)
        assert env.single_observation_space.shape == flat.observation_space.shape
        assert env.single_observation_space.dtype == np.float64
        assert env.single_action_space == ref.action_space
        keys = fb_dmc.observation_keys(env_id)
        assert list(keys) == list(ref.observation_space.spaces)  # gymnasium's sorted order
        obs, _ = env.reset(seed=5)
        dict_obs, _ = ref.reset(seed=5)
        for name, part in keys.items():
            np.testing.assert_array_max_ulp(obs[0, part], np.ravel(dict_obs[name]), 2)
        env.close()
        ref.close()


def test_seeds_are_randomstate_seeds():
    # Env i gets RandomState(seed + i): the same episode whatever the env's place in the batch.
    env = fastbatch.make("dm_control/cartpole-swingup-v0", 3)
    first, _ = env.reset(seed=40)
    again, _ = env.reset(seed=41)
    np.testing.assert_array_equal(first[1:], again[:2])
    # A seed of two words seeds RandomState with both, as RandomState([low, high]) does.
    big, _ = env.reset(seed=2**32 + 7)
    state = np.random.RandomState(np.array([7, 1], dtype=np.uint32))
    assert big[0, 0] == 0.01 * state.randn()  # the slider's position, the first draw
    env.close()


def test_thread_count_and_async_mode_do_not_change_episodes():
    env_id = "dm_control/walker-walk-v0"
    actions = np.random.default_rng(0).uniform(-1, 1, (60, 6, 6))
    runs = []
    for kwargs in (dict(num_workers=1), dict(num_workers=2)):
        env = fastbatch.make(env_id, 6, **kwargs)
        obs, _ = env.reset(seed=9)
        trail = [obs.copy()]
        for a in actions:
            trail.append(env.step(a)[0].copy())
        env.close()
        runs.append(np.stack(trail))
    np.testing.assert_array_equal(runs[0], runs[1])
    # Async mode (batch_size < num_envs): each env's own trajectory is the same.
    env = fastbatch.make(env_id, 6, batch_size=3, num_workers=2)
    obs, _ = env.reset(seed=9)
    seen = {i: [obs[i].copy()] for i in range(6)}
    counts = np.zeros(6, dtype=np.int64)
    ids = np.arange(6)
    env.send(np.stack([actions[0, i] for i in ids]))
    counts[:] = 1
    for _ in range(40):
        obs, _, _, _, info = env.recv()
        ids = info["env_id"]
        for row, i in enumerate(ids):
            seen[i].append(obs[row].copy())
        env.send(np.stack([actions[counts[i], i] for i in ids]), ids)
        counts[ids] += 1
    env.close()
    for i, trail in seen.items():
        assert len(trail) > 5
        np.testing.assert_array_equal(np.stack(trail), runs[0][: len(trail), i])


def test_kwargs_it_cannot_honour_are_refused():
    env_id = "dm_control/cheetah-run-v0"
    with pytest.raises(ValueError, match="seed it"):
        fastbatch.make(env_id, 1, task_kwargs={"random": 3})
    with pytest.raises(ValueError, match="n_sub_steps"):
        fastbatch.make(env_id, 1, environment_kwargs={"n_sub_steps": 2})
    with pytest.raises(ValueError, match="recolouring frames by reward"):
        fastbatch.make(env_id, 1, visualize_reward=True)
    with pytest.raises(TypeError, match="dict"):
        fastbatch.make(env_id, 1, task_kwargs=3)
    with pytest.raises(ValueError, match="time_limit"):
        fastbatch.make(env_id, 1, time_limit=-1.0)
    fastbatch.make(env_id, 1, visualize_reward=False).close()


def test_bad_actions_are_refused():
    env = fastbatch.make("dm_control/cartpole-balance-v0", 2)
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(np.full((2, 1), np.nan))
    with pytest.raises(ValueError):
        env.step(np.zeros((2, 3)))
    env.step(np.full((2, 1), 5.0))  # beyond the control range: passed on, MuJoCo clamps it
    env.close()


def test_process_backend_keeps_shimmys_env():
    env = fastbatch.make("dm_control/cartpole-balance-v0", 2, backend="process")
    native = fastbatch.make("dm_control/cartpole-balance-v0", 2)
    try:
        assert isinstance(env.single_observation_space, gymnasium.spaces.Dict)  # shimmy's own
        ref = env.reset(seed=1)[0]
        flat = np.concatenate([ref[key].reshape(2, -1) for key in sorted(ref)], axis=1)
        np.testing.assert_array_equal(flat, native.reset(seed=1)[0])
    finally:
        env.close()
        native.close()


def test_listed_and_specified():
    ids = fastbatch.list_envs()
    assert set(fb_dmc.ENV_IDS) <= set(ids)
    spec = fastbatch.spec("dm_control/walker-walk-v0")
    assert spec.observation_space.shape == (24,)
    assert spec.observation_keys == {
        "height": slice(0, 1),
        "orientations": slice(1, 15),
        "velocity": slice(15, 24),
    }
    assert fb_dmc.observation_keys("dm_control/walker-walk-v0", flat_observation=True) == {
        "orientations": slice(0, 14),
        "height": slice(14, 15),
        "velocity": slice(15, 24),
    }
    assert set(spec.params) == {"time_limit", "flat_observation", "action_repeat"} | {
        "pixels",
        "height",
        "width",
        "camera",
        "visuals",  # tests/test_pixels.py
    }


def test_the_opt_in_compile_builds_the_dm_control_envs_for_the_installed_mujoco(
    monkeypatch, tmp_path
):
    # FASTBATCH_MUJOCO_BUILD=1 compiles the family on first use, as for the MuJoCo envs (the
    # path of a fastbatch built without MuJoCo, or against another version).
    import ctypes

    from fastbatch import mujoco as fb_mujoco

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("FASTBATCH_MUJOCO_BUILD", "1")
    path = fb_dmc._library_path(fb_mujoco.installed())
    assert path.is_relative_to(tmp_path) and path.name == "fastbatch_dm_control.so"
    ctypes.CDLL(str(fb_mujoco.installed().library))
    library = ctypes.CDLL(str(path))
    version = library.fastbatch_dm_control_header_version()
    assert fb_mujoco._version_name(version) == fb_mujoco.installed().version

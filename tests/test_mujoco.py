"""Native MuJoCo envs in lockstep with gymnasium 1.x's v5 envs.

At each episode start the native state (``get_env_state``: qpos ++ qvel) is put into
gymnasium's env with ``set_state``; then both take the same actions to the episode's end (the
time limit included, for the short envs) and observation, reward, terminated, truncated and every
info key agree to 1e-6 relative, for the default kwargs and for a set of non-default ones.
Reset states equal gymnasium's for the same seeds, bit for bit.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

pytest.importorskip("mujoco")
import fastbatch
from fastbatch import mujoco as fb_mujoco

pytestmark = pytest.mark.engine

RTOL, ATOL = 1e-6, 1e-9
STEPS = {"Humanoid-v5": 150, "HumanoidStandup-v5": 150, "Ant-v5": 200}  # per env id, else 300

# Non-default v5 kwargs per env (gymnasium's spelling); each runs in lockstep too.
KWARGS = {
    "HalfCheetah-v5": dict(
        forward_reward_weight=2.0,
        ctrl_cost_weight=0.3,
        reset_noise_scale=0.2,
        exclude_current_positions_from_observation=False,
        frame_skip=3,
    ),
    "Hopper-v5": dict(
        healthy_z_range=(0.6, 5.0),
        healthy_angle_range=(-0.5, 0.5),
        healthy_state_range=(-50.0, 50.0),
        healthy_reward=2.0,
        ctrl_cost_weight=0.01,
        exclude_current_positions_from_observation=False,
    ),
    "Walker2d-v5": dict(
        healthy_z_range=(0.5, 2.5), terminate_when_unhealthy=False, forward_reward_weight=0.5
    ),
    "Ant-v5": dict(
        include_cfrc_ext_in_observation=False,
        contact_force_range=(-0.5, 0.5),
        contact_cost_weight=1e-3,
        healthy_z_range=(0.3, 1.0),
        reset_noise_scale=0.05,
    ),
    "Humanoid-v5": dict(
        include_cinert_in_observation=False,
        include_cvel_in_observation=False,
        contact_cost_range=(-1.0, 1.0),
        healthy_z_range=(0.8, 2.0),
        exclude_current_positions_from_observation=False,
    ),
    "HumanoidStandup-v5": dict(
        include_qfrc_actuator_in_observation=False,
        impact_cost_range=(-1.0, 0.5),
        ctrl_cost_weight=0.2,
    ),
    "Swimmer-v5": dict(ctrl_cost_weight=1e-2, exclude_current_positions_from_observation=False),
    "Reacher-v5": dict(reward_dist_weight=2.0, reward_control_weight=0.5),
    "Pusher-v5": dict(reward_near_weight=1.0, reward_control_weight=0.5),
    "InvertedPendulum-v5": dict(reset_noise_scale=0.05),
    "InvertedDoublePendulum-v5": dict(healthy_reward=5.0, reset_noise_scale=0.05),
}


def inject(genv, state) -> np.ndarray:
    """Starts gymnasium's episode at the native state; returns its observation there."""
    model = genv.unwrapped.model
    genv.reset()
    genv.unwrapped.set_state(state[: model.nq], state[model.nq :])
    return genv.unwrapped._get_obs()


def reset_info(genv) -> dict:
    return genv.unwrapped._get_reset_info()


def assert_info(native: dict, reference: dict, row: int, where: str) -> None:
    keys = {k for k in native if not k.startswith("_") and k not in ("episode", "final_obs")}
    keys.discard("final_info")
    present = {k for k in keys if native["_" + k][row]}
    assert present == set(reference), f"{where}: info keys {sorted(present)} != {sorted(reference)}"
    for key, value in reference.items():
        np.testing.assert_allclose(native[key][row], value, RTOL, ATOL, err_msg=f"{where}: {key}")


def lockstep(env_id: str, kwargs: dict, steps: int) -> int:
    """Runs env 0 of a native batch beside gymnasium for `steps` steps; returns episodes seen."""
    env = fastbatch.make(env_id, 2, seed=7, **kwargs)
    genv = gymnasium.make(env_id, **kwargs)
    assert env.single_observation_space == genv.observation_space
    assert env.single_action_space == genv.action_space
    assert env.single_observation_space.dtype == np.float64
    rng = np.random.default_rng(11)
    obs, info = env.reset()
    np.testing.assert_allclose(obs[0], inject(genv, env.get_env_state(0)), RTOL, ATOL)
    assert_info(info, reset_info(genv), 0, f"{env_id} reset")
    episodes, restart = 1, False
    low, high = genv.action_space.low, genv.action_space.high
    for t in range(steps):
        # A little beyond the bounds: MuJoCo clamps ctrl, the control costs see the raw action.
        actions = rng.uniform(1.2 * low, 1.2 * high, (2, *low.shape)).astype(np.float32)
        obs, reward, terminated, truncated, info = env.step(actions)
        where = f"{env_id} {kwargs} step {t}"
        if restart:  # NEXT_STEP autoreset: this step reset env 0
            np.testing.assert_allclose(obs[0], inject(genv, env.get_env_state(0)), RTOL, ATOL)
            assert_info(info, reset_info(genv), 0, where + " (autoreset)")
            episodes, restart = episodes + 1, False
            continue
        gobs, greward, gterm, gtrunc, ginfo = genv.step(actions[0])
        np.testing.assert_allclose(obs[0], gobs, RTOL, ATOL, err_msg=where)
        np.testing.assert_allclose(reward[0], greward, RTOL, 1e-6, err_msg=where)
        assert (terminated[0], truncated[0]) == (gterm, gtrunc), where
        assert_info(info, ginfo, 0, where)
        restart = bool(gterm or gtrunc)
    env.close()
    genv.close()
    return episodes


@pytest.mark.parametrize("env_id", fb_mujoco.ENV_IDS)
def test_lockstep_with_gymnasium_v5(env_id):
    steps = STEPS.get(env_id, 300)
    episodes = lockstep(env_id, {}, steps)
    if env_id in ("Reacher-v5", "Pusher-v5", "Hopper-v5", "Walker2d-v5", "InvertedPendulum-v5"):
        assert episodes > 1  # truncation or termination, and the reset after it, were compared
    lockstep(env_id, KWARGS[env_id], steps // 2)


@pytest.mark.parametrize("env_id", fb_mujoco.ENV_IDS)
def test_spec_matches_gymnasium_registration(env_id):
    spec, gspec = fastbatch.spec(env_id), gymnasium.spec(env_id)
    assert spec.max_episode_steps == gspec.max_episode_steps
    assert spec.reward_threshold == gspec.reward_threshold
    genv = gymnasium.make(env_id)
    env = fastbatch.make(env_id, 1)
    assert env.get_env_state(0).shape == (genv.unwrapped.model.nq + genv.unwrapped.model.nv,)


def reset_states(env_id: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n reset states (qpos ++ qvel) of native envs seeded 0..n-1, and of gymnasium's env reset
    with the same seeds."""
    env = fastbatch.make(env_id, n, seed=0)
    env.reset()
    native = np.array([env.get_env_state(i) for i in range(n)])
    genv = gymnasium.make(env_id).unwrapped
    reference = []
    for seed in range(n):
        genv.reset(seed=seed)
        reference.append(np.concatenate([genv.data.qpos, genv.data.qvel]))
    return native, np.array(reference)


@pytest.mark.parametrize(
    "env_id",
    ["HalfCheetah-v5", "Hopper-v5", "Ant-v5", "InvertedDoublePendulum-v5", "Reacher-v5"],
)
def test_reset_noise_is_gymnasiums_for_the_same_seeds(env_id):
    # The native envs draw numpy's streams in gymnasium's order (uniform and normal noise).
    native, reference = reset_states(env_id, 300)
    np.testing.assert_array_equal(native, reference)
    assert (reference.std(axis=0) > 0).sum() >= 2  # noise really drawn, in qpos and qvel


def test_pusher_cylinder_rejection_sampling():
    native, reference = reset_states("Pusher-v5", 800)
    for states in (native, reference):
        cylinder = states[:, 7:9]
        assert (np.linalg.norm(cylinder, axis=1) > 0.17).all()
        assert (cylinder[:, 0] <= 0).all() and (np.abs(cylinder[:, 1]) <= 0.2).all()
    np.testing.assert_allclose(native[:, 7:9].mean(0), reference[:, 7:9].mean(0), atol=0.02)

"""fastbatch-atari's envs against gymnasium's: ``fastbatch.make("ALE/<Game>-v5", n, ...)`` and
a gymnasium ``SyncVectorEnv`` over ale-py's own ``ALE/<Game>-v5`` envs, reset with the same
seed and given the same random actions, give the same observations, rewards, flags and infos
at every step, bit for bit: over whole episodes (autoresets included) in NEXT_STEP and
SAME_STEP mode, with sticky actions, for rgb, grayscale and ram observations, the full action
space, game modes, frame skips, and truncation by ``max_num_frames_per_episode``; for any
thread count; and in async mode, env by env."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastbatch

# Tests marked `engine` run again on .ci/run's ASan+UBSan build of the plugin: chosen so that each
# path of its C++ runs there once (the whole module would take minutes under the sanitizers).
E = pytest.mark.engine

INFOS = ("lives", "episode_frame_number", "frame_number")
# The atari_native preset's frames (test_preprocessing.py checks them against gymnasium's).
PREPROCESSED = {"frameskip": 1, "atari_preprocessing": True, "fire_reset": True, "frame_stack": 4}


def _reference(env_id: str, n: int, mode: AutoresetMode, kwargs: dict):
    import ale_py

    gymnasium.register_envs(ale_py)
    return gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make(env_id, **kwargs) for _ in range(n)], autoreset_mode=mode
    )


def _assert_infos_equal(ours: dict, theirs: dict, where: str) -> None:
    for key in INFOS:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=f"{where}: info {key}")


def _assert_screens_equal(ours, theirs, where: str) -> None:
    for i, (got, ref) in enumerate(zip(ours.render(), theirs.render(), strict=True)):
        assert got.shape == ref.shape == (210, 160, 3), where
        np.testing.assert_array_equal(got, ref, err_msg=f"{where}: env {i}'s screen")


def _lockstep(
    env_id: str,
    steps: int,
    *,
    n: int = 3,
    seed: int = 11,
    autoreset: AutoresetMode = AutoresetMode.NEXT_STEP,
    num_workers: int = 2,
    **kwargs,
) -> int:
    """Steps both side by side and compares everything (the rendered screens every 50 steps);
    returns the episodes that ended."""
    kwargs = {"render_mode": "rgb_array", **kwargs}
    ours = fastbatch.make(env_id, n, autoreset_mode=autoreset, num_workers=num_workers, **kwargs)
    theirs = _reference(env_id, n, autoreset, kwargs)
    try:
        assert ours.single_observation_space == theirs.single_observation_space
        assert ours.single_action_space == theirs.single_action_space
        obs, info = ours.reset(seed=seed)
        ref_obs, ref_info = theirs.reset(seed=seed)
        np.testing.assert_array_equal(obs, ref_obs, err_msg="reset obs")
        _assert_infos_equal(info, ref_info, "reset")
        rng = np.random.default_rng(seed)
        ended = 0
        for t in range(steps):
            actions = rng.integers(0, ours.single_action_space.n, size=n)
            obs, reward, terminated, truncated, info = ours.step(actions)
            ref = theirs.step(actions)
            where = f"step {t}"
            np.testing.assert_array_equal(obs, ref[0], err_msg=f"{where}: obs")
            np.testing.assert_array_equal(reward, ref[1], err_msg=f"{where}: reward")
            np.testing.assert_array_equal(terminated, ref[2], err_msg=f"{where}: terminated")
            np.testing.assert_array_equal(truncated, ref[3], err_msg=f"{where}: truncated")
            _assert_infos_equal(info, ref[4], where)
            if t % 50 == 0:
                _assert_screens_equal(ours, theirs, where)
            done = terminated | truncated
            if autoreset == AutoresetMode.SAME_STEP and done.any():
                for i in np.flatnonzero(done):
                    np.testing.assert_array_equal(
                        info["final_obs"][i], ref[4]["final_obs"][i], err_msg=f"{where}: final"
                    )
            ended += int(done.sum())
        return ended
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize(
    "env_id", ["ALE/Pong-v5", pytest.param("ALE/Breakout-v5", marks=E), "ALE/Seaquest-v5"]
)
def test_whole_episodes_equal_gymnasium(env_id):
    # A short frame limit makes Pong's and Seaquest's episodes end within the test, by truncation
    # or by the game; Breakout's random play loses its lives first.
    kwargs = {} if env_id == "ALE/Breakout-v5" else {"max_num_frames_per_episode": 1200}
    assert _lockstep(env_id, 700, **kwargs) >= 3


def test_same_step_mode_keeps_final_observations():
    assert _lockstep("ALE/Breakout-v5", 700, autoreset=AutoresetMode.SAME_STEP) >= 3


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"obs_type": "grayscale"}, marks=E),
        pytest.param({"obs_type": "ram", "full_action_space": True}, marks=E),
        {"frameskip": 1, "repeat_action_probability": 0.0},
        {"mode": 4, "difficulty": 1},
    ],
    ids=["grayscale", "ram-full-actions", "frameskip-1-no-sticky", "mode-difficulty"],
)
def test_params_equal_gymnasium(kwargs):
    _lockstep("ALE/SpaceInvaders-v5", 300, max_num_frames_per_episode=600, **kwargs)


@E
def test_truncation_by_frame_limit():
    env = fastbatch.make("ALE/Pong-v5", 2, max_num_frames_per_episode=100)
    env.reset(seed=0)
    flags = [env.step(np.zeros(2, dtype=np.int64))[3].copy() for _ in range(25)]
    env.close()
    # 100 frames at 4 a step: the 25th step truncates (gymnasium's env truncates there too).
    assert not np.any(flags[:24]) and np.all(flags[24])


def test_reset_with_the_same_seed_replays():
    env = fastbatch.make("ALE/Breakout-v5", 2)
    actions = np.random.default_rng(0).integers(0, 4, size=(200, 2))

    def run():
        frames = [env.reset(seed=3)[0].copy()]
        frames += [env.step(a)[0].copy() for a in actions]
        return np.stack(frames)

    first, second = run(), run()
    env.close()
    np.testing.assert_array_equal(first, second)


@E
@pytest.mark.threads
@pytest.mark.parametrize("kwargs", [{}, PREPROCESSED], ids=["raw", "preprocessed"])
def test_identical_for_any_thread_count(kwargs):
    def run(workers):
        env = fastbatch.make("ALE/Breakout-v5", 4, num_workers=workers, **kwargs)
        out = [env.reset(seed=5)[0].copy()]
        rng = np.random.default_rng(1)
        for _ in range(150):
            obs, _reward, *_ = env.step(rng.integers(0, 4, size=4))
            out.append(obs.copy())
        env.close()
        return np.stack(out)

    np.testing.assert_array_equal(run(1), run(2))


@E
@pytest.mark.threads
@pytest.mark.parametrize("kwargs", [{}, PREPROCESSED], ids=["raw", "preprocessed"])
def test_async_mode_equals_sync_env_by_env(kwargs):
    """Each env, given the same action at each of its own steps, sees the same frames whichever
    recv returns it."""
    n, steps = 4, 60

    def action(env_id: int, t: int) -> int:
        return int(np.random.default_rng([env_id, t]).integers(0, 4))

    sync = fastbatch.make("ALE/Breakout-v5", n, **kwargs)
    obs, _ = sync.reset(seed=2)
    expected = {i: [obs[i].copy()] for i in range(n)}
    for t in range(steps):
        obs = sync.step(np.array([action(i, t) for i in range(n)]))[0]
        for i in range(n):
            expected[i].append(obs[i].copy())
    sync.close()

    env = fastbatch.make("ALE/Breakout-v5", n, batch_size=2, num_workers=2, **kwargs)
    obs, _ = env.reset(seed=2)
    seen = {i: [obs[i].copy()] for i in range(n)}
    env.send(np.array([action(i, 0) for i in range(n)]), np.arange(n))
    while min(len(frames) for frames in seen.values()) <= steps:
        obs, _, _, _, info = env.recv()
        ids = [int(i) for i in info["env_id"]]
        for row, i in enumerate(ids):
            seen[i].append(obs[row].copy())
        # Every env is sent on at once (its action at its own next step), so none waits.
        env.send(np.array([action(i, len(seen[i]) - 1) for i in ids]), np.array(ids))
    env.close()
    for i in range(n):
        np.testing.assert_array_equal(np.stack(seen[i][: steps + 1]), np.stack(expected[i]))

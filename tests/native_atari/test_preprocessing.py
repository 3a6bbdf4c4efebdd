"""fastbatch-atari's ``atari_preprocessing=True`` against gymnasium's stack:
``fastbatch.make(id, n, frameskip=1, atari_preprocessing=True, frame_stack=4, ...)`` equals a
gymnasium ``SyncVectorEnv`` over ``FrameStackObservation(AtariPreprocessing(gymnasium.make(id,
frameskip=1)), 4)`` (with fastbatch.atari's ``FireOnReset`` inside for ``fire_reset=True``) bit
for bit: noop resets, frame skip with max-pooling, OpenCV's INTER_AREA resize, grayscale and
RGB frames, life loss, fire resets, both autoreset modes. The resize itself against ``cv2``
on random images of several sizes."""

from __future__ import annotations

import ctypes

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastbatch

# Tests marked `engine` run again on .ci/run's ASan+UBSan build of the plugin: chosen so that each
# path of its C++ runs there once (the whole module would take minutes under the sanitizers).
E = pytest.mark.engine

fastbatch_atari = pytest.importorskip("fastbatch_atari")  # conftest.py: required in CI
cv2 = pytest.importorskip("cv2")


def _resize(image: np.ndarray, width: int, height: int) -> np.ndarray:
    library = ctypes.CDLL(str(fastbatch_atari.library_path()))
    pointer = ctypes.POINTER(ctypes.c_uint8)
    library.fastbatch_atari_resize_area.argtypes = [pointer] + [ctypes.c_int64] * 3 + [pointer]
    library.fastbatch_atari_resize_area.argtypes += [ctypes.c_int64] * 2
    src = np.ascontiguousarray(image)
    channels = 1 if src.ndim == 2 else src.shape[2]
    out = np.empty((height, width, channels), np.uint8)
    as_ptr = lambda a: a.ctypes.data_as(pointer)  # noqa: E731
    code = library.fastbatch_atari_resize_area(
        as_ptr(src), src.shape[0], src.shape[1], channels, as_ptr(out), height, width
    )
    assert code == 0
    return out if src.ndim == 3 else out[..., 0]


@pytest.mark.parametrize(
    "shape, size",
    [
        ((210, 160), (84, 84)),
        ((210, 160, 3), (84, 84)),
        ((210, 160), (64, 48)),
        ((210, 160), (160, 105)),
        ((100, 77, 3), (33, 29)),
        ((210, 160), (1, 1)),
    ],
)
@E
def test_the_area_resize_equals_opencvs(shape, size):
    rng = np.random.default_rng(sum(shape) + sum(size))
    for trial in range(5):
        image = rng.integers(0, 256, size=shape, dtype=np.uint8)
        if trial % 2:
            image = (image // 85 * 85).astype(np.uint8)  # few levels: many exact ties
        expected = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        np.testing.assert_array_equal(_resize(image, *size), expected)


def _reference(env_id, n, autoreset, wrapper_kwargs, fire_reset, env_kwargs, episodic_life):
    import ale_py
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    from fastbatch.atari import FireOnReset

    gymnasium.register_envs(ale_py)

    def one():
        env = AtariPreprocessing(
            gymnasium.make(env_id, frameskip=1, render_mode="rgb_array", **env_kwargs),
            **wrapper_kwargs,
        )
        if episodic_life:  # CleanRL's order: episodic life inside the fire reset
            env = pytest.importorskip("stable_baselines3.common.atari_wrappers").EpisodicLifeEnv(
                env
            )
        return FrameStackObservation(FireOnReset(env) if fire_reset else env, 4)

    return gymnasium.vector.SyncVectorEnv([one for _ in range(n)], autoreset_mode=autoreset)


def _lockstep(
    env_id,
    steps,
    *,
    autoreset=AutoresetMode.NEXT_STEP,
    fire_reset=False,
    env_kwargs=None,
    episodic_life=False,
    reward_clip=False,
    **wrapper_kwargs,
):
    """Steps both stacks with the same random actions (the screens every 50 steps); returns the
    episodes ended. With `reward_clip` our rewards are the reference's signs and info["reward"]
    its rewards."""
    n, seed = 3, 21
    env_kwargs = {"max_num_frames_per_episode": 2400, **(env_kwargs or {})}
    ours = fastbatch.make(
        env_id,
        n,
        frameskip=1,
        atari_preprocessing=True,
        fire_reset=fire_reset,
        episodic_life=episodic_life,
        reward_clip=reward_clip,
        frame_stack=4,
        autoreset_mode=autoreset,
        num_workers=2,
        render_mode="rgb_array",
        **env_kwargs,
        **wrapper_kwargs,
    )
    theirs = _reference(env_id, n, autoreset, wrapper_kwargs, fire_reset, env_kwargs, episodic_life)
    try:
        assert ours.single_observation_space == theirs.single_observation_space
        obs, info = ours.reset(seed=seed)
        ref_obs, ref_info = theirs.reset(seed=seed)
        np.testing.assert_array_equal(obs, ref_obs, err_msg="reset")
        np.testing.assert_array_equal(info["lives"], ref_info["lives"])
        rng = np.random.default_rng(seed)
        ended = 0
        for t in range(steps):
            actions = rng.integers(0, ours.single_action_space.n, size=n)
            got, ref = ours.step(actions), theirs.step(actions)
            if reward_clip:
                np.testing.assert_array_equal(got[4]["reward"], ref[1], err_msg=f"step {t}")
                ref = (ref[0], np.sign(ref[1]), *ref[2:])
            for k, name in enumerate(("obs", "reward", "terminated", "truncated")):
                np.testing.assert_array_equal(got[k], ref[k], err_msg=f"step {t}: {name}")
            for key in ("lives", "episode_frame_number", "frame_number"):
                np.testing.assert_array_equal(got[4][key], ref[4][key], err_msg=f"step {t}: {key}")
            done = got[2] | got[3]
            if autoreset == AutoresetMode.SAME_STEP:
                for i in np.flatnonzero(done):
                    np.testing.assert_array_equal(got[4]["final_obs"][i], ref[4]["final_obs"][i])
            if t % 50 == 0:  # the screen: the last frame emulated, whatever the preprocessing
                for got_frame, ref_frame in zip(ours.render(), theirs.render(), strict=True):
                    np.testing.assert_array_equal(got_frame, ref_frame, err_msg=f"step {t}: screen")
            ended += int(done.sum())
        return ended
    finally:
        ours.close()
        theirs.close()


@E
def test_cleanrls_stack_on_breakout_with_fire_resets():
    assert _lockstep("ALE/Breakout-v5", 500, fire_reset=True) >= 3


@pytest.mark.parametrize(
    "autoreset", [AutoresetMode.NEXT_STEP, pytest.param(AutoresetMode.SAME_STEP, marks=E)]
)
def test_envpools_conventions_episodic_life_and_clipped_rewards(autoreset):
    """CleanRL's whole stack (SB3's EpisodicLifeEnv inside the fire reset, rewards by sign):
    a lost life ends an episode and the game goes on with a NOOP step."""
    ended = _lockstep(
        "ALE/Breakout-v5",
        600,
        autoreset=autoreset,
        fire_reset=True,
        episodic_life=True,
        reward_clip=True,
    )
    assert ended >= 10  # 3 envs: lives lost, not only whole games


def test_pong_to_the_frame_limit_and_same_step_mode():
    assert _lockstep("ALE/Pong-v5", 700, autoreset=AutoresetMode.SAME_STEP) >= 3


def test_seaquest_with_sticky_actions_and_fire_resets():
    # A fourth game (18 actions, FIRE at 1), with ale-py's default sticky actions under the
    # wrapper: the frames, resets and episode ends stay equal.
    ended = _lockstep(
        "ALE/Seaquest-v5",
        600,
        fire_reset=True,
        env_kwargs={"repeat_action_probability": 0.25, "max_num_frames_per_episode": 1200},
    )
    assert ended >= 3


@pytest.mark.parametrize(
    "kwargs",
    [
        {"terminal_on_life_loss": True, "noop_max": 5},
        pytest.param({"grayscale_obs": False, "screen_size": 64}, marks=E),
        pytest.param({"grayscale_newaxis": True, "frame_skip": 3}, marks=E),
        pytest.param({"screen_size": (64, 48)}, marks=E),  # (width, height): 48x64 frames
        pytest.param({"scale_obs": True, "grayscale_newaxis": True}, marks=E),  # float32 frames
        {
            "frame_skip": 1,
            "noop_max": 0,
            "scale_obs": False,
            "env_kwargs": {"repeat_action_probability": 0.0},
        },
    ],
    ids=["life-loss", "rgb-64", "newaxis-skip-3", "non-square", "scaled", "no-skip-no-noops"],
)
def test_wrapper_kwargs_equal_gymnasium(kwargs):
    _lockstep("ALE/SpaceInvaders-v5", 250, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"noop_max": 10}, r"noop_max applies with atari_preprocessing=True"),
        ({"atari_preprocessing": True}, r"frameskip=1"),  # the game still skips 4 frames
        ({"atari_preprocessing": True, "frameskip": 1, "obs_type": "ram"}, r"obs_type='ram'"),
        ({"atari_preprocessing": True, "frameskip": 1, "screen_size": 200}, r"screen_size"),
        (
            {"atari_preprocessing": True, "frameskip": 1, "screen_size": (84,)},
            r"'screen_size' must be an int or a pair \(width, height\) of positive ints",
        ),
        (
            {"atari_preprocessing": True, "frameskip": 1, "screen_size": (64, 0)},
            r"'screen_size' must be .* positive ints, .* got \(64, 0\)",
        ),
        (
            {"atari_preprocessing": True, "frameskip": 1, "screen_size": (200, 84)},
            r"'screen_width' must be an integer in \[0, 160\]",
        ),
        ({"screen_size": (64, 48)}, r"screen_width applies with atari_preprocessing=True"),
        ({"episodic_life": True}, r"episodic_life applies with atari_preprocessing=True"),
        ({"scale_obs": True}, r"scale_obs applies with atari_preprocessing=True"),
        (
            {
                "atari_preprocessing": True,
                "frameskip": 1,
                "episodic_life": True,
                "terminal_on_life_loss": True,
            },
            r"pick one",
        ),
    ],
)
@E
def test_inconsistent_preprocessing_params_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fastbatch.make("ALE/Breakout-v5", 1, **kwargs)

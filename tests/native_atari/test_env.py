"""fastbatch-atari as a user meets it: which ids it registers (gymnasium's ALE v5 ids, no more,
no fewer), how ``fastbatch.make`` routes ``ALE/`` ids (native once installed, ale-py's env with
``backend="process"`` and through ``gymnasium.make``), its errors for bad params, and its frames
through the rollout op (uint8, no Python per step)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import fastbatch
from fastbatch.native import NativeVectorEnv
from fastbatch.registry import REGISTRY

fastbatch_atari = pytest.importorskip("fastbatch_atari")  # conftest.py: required in CI


def test_registers_every_v5_id_of_ale_py():
    import ale_py

    gymnasium.register_envs(ale_py)
    ids = set(fastbatch_atari.register())
    theirs = {i for i in gymnasium.registry if i.startswith("ALE/") and i.endswith("-v5")}
    assert ids == theirs
    assert all(REGISTRY.has(i) for i in ids)


def test_make_routes_ale_ids_to_the_native_env():
    env = fastbatch.make("ALE/Pong-v5", 2)
    assert isinstance(env, NativeVectorEnv) and fastbatch.backend_for("ALE/Pong-v5") == "native"
    assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (210, 160, 3), np.uint8)
    assert env.single_action_space == gymnasium.spaces.Discrete(6)
    env.close()


@pytest.mark.no_tsan  # worker processes
def test_the_process_backend_and_gymnasium_keep_ale_pys_env():
    from ale_py.env import AtariEnv

    fastbatch_atari.register()
    single = gymnasium.make("ALE/Pong-v5")
    assert isinstance(single.unwrapped, AtariEnv)  # the native registration left it alone
    single.close()
    env = fastbatch.make("ALE/Pong-v5", 2, backend="process", num_workers=1)
    assert type(env).__name__ == "ProcessVectorEnv"
    env.close()


@pytest.mark.engine  # the plugin's checks and errors, again under ASan+UBSan
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"mode": 16}, ValueError, r"mode"),  # SpaceInvaders' modes are 0-15
        ({"difficulty": 2}, ValueError, r"difficulty"),  # its difficulties 0-1
        ({"obs_type": "depth"}, ValueError, r"obs_type"),
        ({"frameskip": 0}, ValueError, r"frameskip"),
        ({"repeat_action_probability": 1.5}, ValueError, r"repeat_action_probability"),
        ({"sound_obs": True}, TypeError, r"sound_obs"),
        ({"continuous": True}, TypeError, r"continuous"),  # not offered (plugins/atari/README)
        ({"frameskip": (2, 5)}, TypeError, r"frameskip.*integer"),  # no stochastic frameskip
    ],
)
def test_bad_params_are_refused_with_a_message(kwargs, error, match):
    with pytest.raises(error, match=match):
        fastbatch.make("ALE/SpaceInvaders-v5", 1, **kwargs)


@pytest.mark.engine  # the plugin's checks and errors, again under ASan+UBSan
def test_a_mode_the_game_lacks_is_refused_naming_its_modes():
    with pytest.raises(ValueError, match=r"mode=3 is not one of Breakout's: 0, 4, 8,"):
        fastbatch.make("ALE/Breakout-v5", 1, mode=3)


@pytest.mark.engine
def test_a_render_before_any_reset_shows_ale_pys_screen_before_its_reset():
    # An env loads its ROM at its first reset (each load builds ALE's colour tables, ~0.1 s),
    # not when made; a render before that loads it then and shows ale-py's env's screen.
    import ale_py

    gymnasium.register_envs(ale_py)
    ours = fastbatch.make("ALE/Breakout-v5", 2, render_mode="rgb_array")
    theirs = gymnasium.make("ALE/Breakout-v5", render_mode="rgb_array").unwrapped
    for frame in ours.render():
        np.testing.assert_array_equal(frame, theirs.render())
    ours.reset(seed=3)
    theirs.reset(seed=3)
    np.testing.assert_array_equal(ours.render()[0], theirs.render())
    ours.close()
    theirs.close()


def test_frames_take_the_rollout_op():
    pytest.importorskip("tensorflow")
    from tests.test_rollout_dtypes import assert_same_rollouts

    rollout = assert_same_rollouts("ALE/Breakout-v5")
    assert rollout.uses_op
    assert rollout.arrays["obs"].dtype == np.uint8
    assert rollout.obs_shape == [4, 210, 160, 3]


def test_without_ale_py_the_error_names_what_to_install(monkeypatch):
    import sys

    from fastbatch import env_packages

    monkeypatch.setattr(fastbatch_atari, "_registered", None)
    monkeypatch.setitem(sys.modules, "ale_py", None)  # import fails
    with pytest.raises(fastbatch.UnknownEnvError, match=r"'ALE/Pong-v5': .*pip install ale-py"):
        env_packages.register_native_package_for("ALE/Pong-v5")


@pytest.mark.engine  # the plugin's render, again under ASan+UBSan
def test_videos_play_the_env_the_run_trained_on():
    # A native run records fastbatch-atari's env; a process-backend run (even without wrappers,
    # e.g. kwargs only ale-py takes) records ale-py's own.
    from ale_py.env import AtariEnv

    from fastbatch.native.single import NativeEnv
    from fastbatch.ppo.video import _rendering_env

    for backend, kind in ((None, NativeEnv), ("native", NativeEnv), ("process", AtariEnv)):
        env = _rendering_env("ALE/Pong-v5", {}, backend)
        try:
            assert isinstance(env.unwrapped, kind), backend
            assert env.metadata["render_fps"] == 30  # ale-py's, also on the native env
            env.reset(seed=0)
            assert env.render().shape == (210, 160, 3)
        finally:
            env.close()
    ale_only = _rendering_env("ALE/Pong-v5", {"frameskip": (2, 5)}, "process")
    assert isinstance(ale_only.unwrapped, AtariEnv)
    ale_only.close()


@pytest.mark.engine  # the plugin's checks and errors, again under ASan+UBSan
def test_a_missing_rom_is_named_with_what_to_install(tmp_path):
    # The ROMs come from the installed ale-py: pointed at a folder without them, making an env
    # fails naming the ROM file and the package, and pointed back, it works again.
    import ctypes
    import os

    fastbatch_atari.register()
    library = ctypes.CDLL(os.fspath(fastbatch_atari.library_path()))
    library.fastbatch_atari_set_rom_dir.argtypes = [ctypes.c_char_p]
    library.fastbatch_atari_set_rom_dir(os.fsencode(tmp_path))
    try:
        with pytest.raises(fastbatch.EnvError, match=r"no ROM for pong: .*pong\.bin is missing "):
            fastbatch.make("ALE/Pong-v5", 1)
        with pytest.raises(fastbatch.EnvError, match=r"pip install ale-py"):
            fastbatch.make("ALE/Breakout-v5", 1)
        # eval --video checks before playing: a ValueError the CLI prints as its message
        from fastbatch.ppo.video import check_recordable

        with pytest.raises(ValueError, match=r"cannot record ALE/Pong-v5: .*no ROM for pong"):
            check_recordable("ALE/Pong-v5")
    finally:
        library.fastbatch_atari_set_rom_dir(os.fsencode(fastbatch_atari.rom_dir()))
    fastbatch.make("ALE/Pong-v5", 1).close()


def _preset_env(name: str, num_envs: int):
    from fastbatch.ppo.presets import PRESETS

    preset = PRESETS[name]
    return fastbatch.make(
        preset.env_id, num_envs, backend=preset.backend, **dict(preset.env_kwargs), seed=0
    )


@pytest.mark.no_tsan  # the process preset's worker processes
def test_the_native_atari_preset_steps_the_process_presets_frames():
    pytest.importorskip("cv2")
    native, process = _preset_env("atari_native", 2), _preset_env("atari", 2)
    try:
        assert native.single_observation_space == process.single_observation_space
        np.testing.assert_array_equal(native.reset(seed=3)[0], process.reset(seed=3)[0])
        rng = np.random.default_rng(3)
        for t in range(200):
            actions = rng.integers(0, 4, size=2)
            ours, theirs = native.step(actions), process.step(actions)
            for k in range(4):
                np.testing.assert_array_equal(ours[k], theirs[k], err_msg=f"step {t}, field {k}")
    finally:
        native.close()
        process.close()


def test_the_native_atari_preset_trains_through_the_rollout_op(tmp_path, monkeypatch):
    pytest.importorskip("tensorflow")
    from fastbatch.ppo import agent, train
    from fastbatch.ppo.presets import PRESETS

    made = []

    class Recorded(agent.Rollout):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(agent, "Rollout", Recorded)

    config = PRESETS["atari_native"].replace(
        total_steps=1024,
        epochs=1,
        eval_episodes=1,
        env_kwargs={**dict(PRESETS["atari_native"].env_kwargs), "max_episode_steps": 300},
    )
    result = train(config, tmp_path, progress=False)
    assert result["env_steps"] == 1024 and np.isfinite(result["eval_return"])
    assert made and all(r.uses_op for r in made)  # uint8 frames through the op, no Python
    assert made[0].obs_dtype == np.uint8 and made[0].obs_shape == [8, 4, 84, 84]
    # eval --video records the policy on the native env's own screens (render, ABI 7).
    pytest.importorskip("PIL")
    from PIL import Image

    from fastbatch.ppo.export import load_policy
    from fastbatch.ppo.video import record_video

    kwargs = {**dict(config.env_kwargs), "max_episode_steps": 40}
    returns = record_video(
        load_policy(tmp_path / "policy"), config.env_id, tmp_path / "b.gif", env_kwargs=kwargs
    )
    assert len(returns) == 1
    with Image.open(tmp_path / "b.gif") as gif:
        assert gif.size == (160, 210) and gif.n_frames > 1

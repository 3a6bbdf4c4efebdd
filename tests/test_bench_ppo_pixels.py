"""bench/ppo_pixels.py (`python bench/ppo.py --pixels`) without training: targets, the frames SB3
gets, its network against fastbatch's small torso, the seed-by-seed verdict and the whole
report from fake runs."""

import json
import sys

import gymnasium
import numpy as np
import pytest

from tests.bench_scripts import load_bench_script

pixels = load_bench_script("ppo_pixels")


def test_targets_default_and_take_a_preset_a_game_or_every_preset():
    presets = ["minatar_breakout", "minatar_freeway"]
    assert pixels.parse_targets([], presets) == {"minatar_breakout": 10.0, "minatar_freeway": 12.0}
    assert pixels.parse_targets(["breakout=12", "minatar_freeway=3"], presets) == {
        "minatar_breakout": 12.0,
        "minatar_freeway": 3.0,
    }
    assert pixels.parse_targets(["2"], presets) == dict.fromkeys(presets, 2.0)
    with pytest.raises(ValueError, match="not one of"):
        pixels.parse_targets(["asterix=1"], presets)
    with pytest.raises(ValueError, match=r"\[PRESET=\]RETURN"):
        pixels.parse_targets(["breakout=ten"], presets)


def test_a_target_counts_for_fastbatch_only_once_its_mean_covers_the_whole_window():
    # SB3's rows here need 20 finished episodes; fastbatch's progress.csv says how many its
    # mean covers, and a mean of fewer (freeway's first 16 episodes at 8 envs) does not count.
    harness = sys.modules["_harness"]  # loaded with the bench scripts
    rows = [
        [128, 1.0, float("nan"), 0],
        [256, 2.0, 13.0, 16],
        [384, 3.0, 11.0, 20],
        [512, 4.0, 12.5, 20],
    ]
    assert harness.first_crossing(rows, 12.0, 20) == (512, 4.0)
    assert harness.first_crossing(rows, 12.0, 16) == (256, 2.0)
    assert harness.first_crossing(rows, 14.0, 20) == (None, None)


class _Frames(gymnasium.Env):
    def __init__(self, frame: np.ndarray) -> None:
        self.frame = frame
        high = 1 if frame.dtype == bool else 255
        self.observation_space = gymnasium.spaces.Box(0, high, frame.shape, frame.dtype)
        self.action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return self.frame, {}


def test_sb3_gets_channel_first_float_frames():
    flags = np.zeros((10, 10, 4), bool)  # MinAtar: bool, channel-last
    flags[2, 3, 1] = True
    env = pixels.FloatFrames(_Frames(flags))
    assert env.observation_space == gymnasium.spaces.Box(0.0, 1.0, (4, 10, 10), np.float32)
    obs, _ = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (4, 10, 10) and obs.flags.c_contiguous
    assert obs[1, 2, 3] == 1.0 and obs.sum() == 1.0

    image = np.zeros((3, 8, 8), np.uint8)  # GridChase: uint8, channel-first
    image[0, 1, 2] = 255
    obs, _ = pixels.FloatFrames(_Frames(image)).reset()
    assert obs.shape == (3, 8, 8) and obs[0, 1, 2] == 1.0 and obs.sum() == 1.0


def test_sb3_network_is_fastbatch_small_torso():
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("tensorflow")
    import torch

    from fastbatch.ppo.torsos import SmallCNN, image_layout

    kwargs = pixels.sb3_policy_kwargs()
    assert kwargs["normalize_images"] is False and kwargs["net_arch"] == []
    space = gymnasium.spaces.Box(0.0, 1.0, (6, 10, 10), np.float32)
    extractor = kwargs["features_extractor_class"](space)
    assert extractor(torch.zeros(2, 6, 10, 10)).shape == (2, SmallCNN.feature_size)
    theirs = sorted(tuple(p.shape) for p in extractor.parameters())
    ours = SmallCNN(image_layout((10, 10, 6), "auto"), seed=0)
    torch_shape = {(3, 3, 6, 16): (16, 6, 3, 3), (1024, 128): (128, 1024)}  # torch's layouts
    assert theirs == sorted(torch_shape.get(tuple(v.shape), tuple(v.shape)) for v in ours.variables)


def _run(seed, seconds_to, seconds, trainer="fastbatch"):
    return {
        "preset": "minatar_breakout",
        "trainer": trainer,
        "seed": seed,
        "steps_to_threshold": None if seconds_to is None else 1024 * seed,
        "seconds_to_threshold": seconds_to,
        "final_return": 11.0,
        "env_steps": 4096,
        "seconds": seconds,
        "steps_per_second": 4096 / seconds,
    }


def test_the_verdict_pairs_seeds_and_counts_a_short_sb3_run_as_a_bound():
    ours = [_run(0, 30.0, 60.0), _run(1, 40.0, 60.0)]
    assert pixels.seed_ratio(ours[0], _run(0, 100.0, 300.0, "sb3")) == (0.3, False)
    assert pixels.seed_ratio(ours[1], _run(1, None, 200.0, "sb3")) == (0.2, True)
    assert pixels.seed_ratio(_run(2, None, 60.0), _run(2, 100.0, 300.0, "sb3")) == (None, False)
    assert (
        pixels.verdict("minatar_breakout", ours, [(0.3, False), (0.2, True)]) == "met (2/2 seeds)"
    )
    assert pixels.verdict("minatar_breakout", ours, [(0.3, False), (0.5, False)]).startswith(
        "not met (1/2"
    )
    slow = [_run(0, 171.0, 200.0)]
    assert pixels.verdict("minatar_breakout", slow, [(0.1, False)]).startswith("not met")
    assert pixels.verdict("minatar_asterix", slow, [(0.1, False)]) == "met (1/1 seeds)"


def test_main_reports_every_run_from_fake_trainings(tmp_path, capsys):
    pytest.importorskip("tensorflow")
    calls = []

    def fake_fastbatch(preset, seed, overrides, workers, threshold, total_steps):
        calls.append((preset, seed, tuple(overrides), threshold, total_steps))
        run = _run(seed, 5.0 + seed, 20.0)  # as ppo.run_fastbatch's: no preset, budget_steps
        del run["preset"], run["trainer"]
        run["budget_steps"] = run.pop("env_steps")
        return run

    out = tmp_path / "pixels.json"
    code = pixels.main(
        ["minatar_breakout", "minatar_asterix"],
        [0, 1],
        2048,
        ["epochs=2"],
        target_items=["asterix=4"],
        sb3=False,
        sb3_threads=1,
        sb3_time_limit=float("inf"),
        sb3_stop=False,
        plugin=None,
        json_path=str(out),
        run_fastbatch=fake_fastbatch,
    )
    assert code == 0
    assert calls == [
        ("minatar_breakout", 0, ("epochs=2",), 10.0, 2048),
        ("minatar_breakout", 1, ("epochs=2",), 10.0, 2048),
        ("minatar_asterix", 0, ("epochs=2",), 4.0, 2048),
        ("minatar_asterix", 1, ("epochs=2",), 4.0, 2048),
    ]
    text = capsys.readouterr().out
    rows = [line.split() for line in text.splitlines() if line.startswith("minatar_")]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (preset, seed, "fastbatch")
        for preset in ("minatar_breakout", "minatar_asterix")
        for seed in "01"
    ]
    assert "| minatar_asterix (4) | fastbatch | 2/2 | 5.0, 6.0 | 5.5 |" in text
    saved = json.loads(out.read_text())
    assert saved["meta"]["targets"] == {"minatar_breakout": 10.0, "minatar_asterix": 4.0}
    assert [r["env_steps"] for r in saved["results"]] == [4096] * 4
    assert out.with_suffix(".md").read_text().startswith("| preset (target) |")


def test_gridchase_needs_its_plugin():
    pytest.importorskip("tensorflow")
    with pytest.raises(ValueError, match="--plugin"):
        pixels.main(
            ["gridchase"],
            [0],
            None,
            [],
            target_items=[],
            sb3=False,
            sb3_threads=1,
            sb3_time_limit=float("inf"),
            sb3_stop=False,
            plugin=None,
            json_path=None,
            run_fastbatch=None,
        )

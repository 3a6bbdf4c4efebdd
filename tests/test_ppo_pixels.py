"""BatchPPO on image observations: the CNN torsos (shapes, layouts, dtypes), observations kept in
the env's dtype up to the network, export and evaluation of an image policy, and a short
learning run on a cheap image env."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import gymnasium

import fastbatch
from fastbatch.ppo import PPOConfig
from fastbatch.ppo.agent import Agent
from fastbatch.ppo.export import export_policy, load_policy, run_episodes
from fastbatch.ppo.normalize import RunningMeanStd, prepare_observations
from fastbatch.ppo.torsos import CNNS, bfloat16_is_native, image_layout, make_torso

IMAGE = "_TestImage-v0"  # uint8 (channels, size, size); reward 1 for naming the lit half


@pytest.mark.parametrize(
    "shape, channels, expected",
    [
        ((3, 8, 8), "auto", (8, 8, 3, "first")),
        ((10, 10, 4), "auto", (10, 10, 4, "last")),
        ((4, 84, 84), "auto", (84, 84, 4, "first")),
        ((84, 84, 4), "auto", (84, 84, 4, "last")),
        ((3, 3, 3), "auto", (3, 3, 3, "last")),
        ((10, 10, 4), "first", (10, 4, 10, "first")),
        ((3, 8, 8), "last", (3, 8, 8, "last")),
        ((3, 84, 84, 3), "auto", (84, 84, 9, "stacked_last")),  # frame_stack over RGB frames
        ((3, 3, 84, 84), "first", (84, 84, 9, "stacked_first")),
    ],
)
def test_the_channel_axis_is_detected_and_overridable(shape, channels, expected):
    assert image_layout(shape, channels) == expected


@pytest.mark.parametrize(
    "kind, hwc",
    [
        ("nature", (84, 84, 4)),
        ("nature", (36, 40, 1)),
        ("impala", (64, 64, 3)),
        ("small", (10, 10, 6)),
    ],
)
def test_each_torso_gives_its_features_for_either_layout(kind, hwc):
    h, w, c = hwc
    last = make_torso(kind, (h, w, c), "last", seed=3)
    first = make_torso(kind, (c, h, w), "first", seed=3)
    assert type(last) is CNNS[kind] and last.feature_size == first.feature_size
    images = tf.random.stateless_uniform([5, h, w, c], seed=[1, 2])
    out = last(images)
    assert out.shape == (5, last.feature_size)
    # The same weights over the channel-first copy of the same images: the same features.
    np.testing.assert_allclose(first(tf.transpose(images, [0, 3, 1, 2])), out, atol=1e-5)
    assert np.all(out.numpy() >= 0)  # ReLU features


def test_a_stack_of_colour_frames_joins_their_channels_frame_by_frame():
    """(k, H, W, C) frames (fastbatch's frame_stack over RGB observations) reach the torso as
    one (H, W, k*C) image, frame 0's channels first, as DrQ stacks frames; the channel-first
    stack (k, C, H, W) gives the same features."""
    frames = tf.random.stateless_uniform([2, 3, 40, 40, 3], seed=[4, 5])
    stacked = make_torso("nature", (3, 40, 40, 3), "auto", seed=1)
    joined = make_torso("nature", (40, 40, 9), "last", seed=1)
    nhwc = tf.reshape(tf.transpose(frames, [0, 2, 3, 1, 4]), [2, 40, 40, 9])
    np.testing.assert_array_equal(nhwc[..., 3:6], frames[:, 1])  # frame 1's channels
    np.testing.assert_allclose(stacked(frames), joined(nhwc), atol=1e-6)
    first = make_torso("nature", (3, 3, 40, 40), "first", seed=1)
    np.testing.assert_allclose(
        first(tf.transpose(frames, [0, 1, 4, 2, 3])), joined(nhwc), atol=1e-6
    )


def test_auto_picks_nature_for_large_images_and_small_below():
    assert isinstance(make_torso("auto", (84, 84, 4), "auto", 0), CNNS["nature"])
    assert isinstance(make_torso("auto", (10, 10, 4), "auto", 0), CNNS["small"])
    with pytest.raises(ValueError, match="36x36 or more.*cnn='small'"):
        make_torso("nature", (10, 10, 4), "auto", 0)


@pytest.mark.parametrize(
    "kind, hwc", [("nature", (84, 84, 4)), ("impala", (16, 16, 3)), ("small", (10, 10, 6))]
)
def test_a_bfloat16_torso_keeps_float32_weights_and_gives_float32_features_close_to_float32s(
    kind, hwc
):
    full = make_torso(kind, hwc, "last", seed=3)
    half = make_torso(kind, hwc, "last", seed=3, dtype="bfloat16")
    assert half.dtype == tf.bfloat16 and full.dtype == tf.float32
    assert {v.dtype for v in half.trainable_variables} == {tf.float32}
    for a, b in zip(full.trainable_variables, half.trainable_variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the same weights
    images = tf.random.stateless_uniform([6, *hwc], seed=[1, 2])
    with tf.GradientTape() as tape:
        out = half(images)
        loss = tf.reduce_sum(out)
    assert out.dtype == tf.float32
    # bfloat16 keeps 8 significant bits: features within a few percent of the float32 ones.
    reference = full(images).numpy()
    np.testing.assert_allclose(out.numpy(), reference, atol=0.05 * np.abs(reference).max())
    grads = tape.gradient(loss, half.trainable_variables)
    assert all(g is not None and g.dtype == tf.float32 for g in grads)


@pytest.mark.parametrize("dtype, casts", [("float32", 0), ("bfloat16", 6)])
def test_a_float32_torso_adds_no_casts_to_its_graph(dtype, casts):
    torso = make_torso("small", (10, 10, 4), "last", seed=0, dtype=dtype)
    graph = (
        tf.function(torso.__call__)
        .get_concrete_function(tf.TensorSpec([None, 10, 10, 4], tf.float32))
        .graph
    )
    # bfloat16: the images, the conv's and the dense layer's weight and bias, the features.
    assert sum(op.type == "Cast" for op in graph.get_operations()) == casts


def test_cnn_dtype_auto_follows_the_cpus_bfloat16_flags(tmp_path, monkeypatch):
    monkeypatch.delenv(
        "FASTBATCH_DISABLE_CPU_FEATURES", raising=False
    )  # CI runs it switched off too
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16\n")
    assert bfloat16_is_native(str(cpuinfo))
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    assert not bfloat16_is_native(str(cpuinfo))
    assert not bfloat16_is_native(str(tmp_path / "missing"))
    # Forced off (the fallback every machine tests): the flag is there, float32 is chosen.
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 amx_bf16\n")
    for off in ("avx512_bf16,amx_bf16", "all"):
        monkeypatch.setenv("FASTBATCH_DISABLE_CPU_FEATURES", off)
        assert not bfloat16_is_native(str(cpuinfo))
    monkeypatch.setenv("FASTBATCH_DISABLE_CPU_FEATURES", "avx512_bf16")
    assert bfloat16_is_native(str(cpuinfo))  # amx_bf16 still on
    monkeypatch.delenv("FASTBATCH_DISABLE_CPU_FEATURES")
    monkeypatch.setattr("fastbatch.ppo.torsos.bfloat16_is_native", lambda: False)
    assert make_torso("small", (10, 10, 4), "auto", 0, dtype="auto").dtype == tf.float32
    monkeypatch.setattr("fastbatch.ppo.torsos.bfloat16_is_native", lambda: True)
    assert make_torso("small", (10, 10, 4), "auto", 0, dtype="auto").dtype == tf.bfloat16
    with pytest.raises(ValueError, match="cnn_dtype must be one of auto, float32, bfloat16"):
        PPOConfig(cnn_dtype="float16")
    with pytest.raises(ValueError, match="cnn_dtype must be one of"):
        make_torso("small", (10, 10, 4), "auto", 0, dtype="half")


def test_observations_become_floats_only_in_the_network():
    rms = RunningMeanStd([2, 2, 1])
    pixels = tf.constant([[[[0], [255]], [[51], [102]]]], tf.uint8)
    np.testing.assert_allclose(
        prepare_observations(pixels, rms, False, 10.0)[0, :, :, 0], [[0, 1], [0.2, 0.4]]
    )
    flags = tf.constant([[[[True], [False]], [[False], [True]]]])
    np.testing.assert_array_equal(
        prepare_observations(flags, rms, False, 10.0)[0, :, :, 0], [[1, 0], [0, 1]]
    )
    assert prepare_observations(flags, rms, False, 10.0).dtype == tf.float32


def _image_config(**changes):
    base = dict(
        env_id=IMAGE,
        num_envs=8,
        rollout_steps=16,
        total_steps=8 * 16 * 2,
        epochs=2,
        minibatches=2,
        cnn="small",
        policy_layers=(),
        value_layers=(),
        normalize_reward=False,
        checkpoint_every=100,
    )
    return PPOConfig(**{**base, **changes})


def _make(config, **kwargs):
    env_kwargs = dict(config.env_kwargs)
    return fastbatch.make(
        config.env_id,
        config.num_envs,
        autoreset_mode="same_step",
        stats_key="episode",
        seed=config.seed,
        num_workers=1,
        **env_kwargs,
        **kwargs,
    )


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"env_kwargs": {"channels_last": True}},
        {"policy": "gru", "gru_size": 32, "minibatches": 2},
        {"shared_torso": False},
        {"cnn": "impala", "env_kwargs": {"size": 12}},
        {"cnn_dtype": "bfloat16"},
        {
            "cnn_dtype": "bfloat16",
            "policy": "gru",
            "gru_size": 32,
            "cnn": "nature",
            "env_kwargs": {"size": 36},
        },
    ],
    ids=[
        "small",
        "channels-last",
        "gru-on-cnn",
        "separate-torsos",
        "impala",
        "bf16",
        "bf16-gru-nature",
    ],
)
def test_an_image_agent_keeps_uint8_observations_and_updates(changes):
    config = _image_config(**changes)
    env = _make(config)
    agent = Agent(config, env)
    assert agent.image and not agent.normalize_obs  # images: scaled, not normalised, by default
    assert agent.rollout.arrays["obs"].dtype == np.uint8
    agent.start(0)
    actions = agent.collect()
    metrics = agent.update(actions)
    assert np.isfinite(float(metrics["loss/total"]))
    assert abs(float(metrics["first_ratio_max_dev"])) < 1e-5  # recomputed with the same weights
    env.close()


@pytest.mark.parametrize("cnn_dtype", ["float32", "bfloat16"])
def test_an_exported_image_policy_takes_the_envs_dtype_and_plays(tmp_path, cnn_dtype):
    config = _image_config(cnn_dtype=cnn_dtype)
    env = _make(config)
    agent = Agent(config, env)
    agent.start(0)
    export_policy(agent, tmp_path / "policy")
    policy = load_policy(tmp_path / "policy")
    model = tf.saved_model.load(str(tmp_path / "policy"))
    spec = model.signatures["step"].structured_input_signature[1]["obs"]
    assert spec.dtype == tf.uint8 and tuple(spec.shape) == (None, 3, 8, 8)
    returns = run_episodes(env, policy, 4)
    assert len(returns) == 4 and all(0 <= r <= 32 for r in returns)
    # The exported policy acts as the agent does on the same observations.
    obs, _ = env.reset(seed=5)
    ours, _ = agent.act(tf.constant(obs), agent.initial_state(len(obs)), tf.ones(len(obs), tf.bool))
    np.testing.assert_array_equal(policy(obs, np.ones(len(obs), bool)), ours.numpy())
    env.close()


def test_bool_images_through_the_process_backend():
    class Flags(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(0, 1, (6, 6, 2), bool)
        action_space = gymnasium.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return self.observation_space.sample(), {}

        def step(self, action):
            self.t += 1
            return self.observation_space.sample(), float(action), False, self.t >= 10, {}

    config = _image_config(env_id="unused", num_envs=4)
    env = fastbatch.make(
        [Flags] * 4, autoreset_mode="same_step", stats_key="episode", num_workers=1
    )
    agent = Agent(config, env)
    assert agent.rollout.arrays["obs"].dtype == np.bool_
    agent.start(0)
    agent.update(agent.collect())
    env.close()


def test_a_small_cnn_learns_the_image_task(tmp_path):
    # Reward 1 a step for naming the half the last frame's pixel was in: ~0.5 a step at random,
    # 1.0 learned (32-step episodes: returns ~16 at random, 32 learned).
    from fastbatch.ppo import train

    config = _image_config(
        num_envs=16,
        rollout_steps=32,
        total_steps=16 * 32 * 40,
        epochs=4,
        minibatches=4,
        learning_rate=1e-3,
        entropy_coef=0.0,
        eval_episodes=8,
    )
    result = train(config, tmp_path, progress=False)
    assert result["eval_return"] > 26, result


def test_the_atari_presets_take_bfloat16_where_the_cpu_has_it_and_minatar_keeps_float32():
    # README, "Training on pixels": the atari presets' `cnn_dtype=auto`; MinAtar measured no
    # faster with bfloat16 (bench/README.md), so its presets stay float32.
    from fastbatch.ppo.presets import PRESETS

    assert PRESETS["atari"].cnn_dtype == PRESETS["atari_native"].cnn_dtype == "auto"
    minatar = [name for name in PRESETS if name.startswith("minatar_")]
    assert len(minatar) == 5 and all(PRESETS[n].cnn_dtype == "float32" for n in minatar)

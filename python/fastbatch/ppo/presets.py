"""Named PPO presets, each built on `PPOConfig`'s defaults, and `resolve` (a preset or an env id,
then ``--set key=value`` overrides).

One line of rationale a preset; the measurements behind them (scores, wall clock, what was
tried) are in bench/README.md, "Preset notes".
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .config import PPOConfig, parse_value

__all__ = ["PRESETS", "resolve"]

# simple_spread's settings, which the native `spread` preset shares (see PRESETS).
_SIMPLE_SPREAD = PPOConfig(
    env_id="mpe2.simple_spread_v3",
    pettingzoo=True,
    num_envs=32,
    rollout_steps=200,
    total_steps=1_000_000,
    learning_rate=7e-4,
    anneal_lr=True,
    epochs=10,
    minibatches=64,
    entropy_coef=0.01,
    gamma=0.8,
    bootstrap_truncation=False,
    return_window=100,
    checkpoint_every=100,
)

# CleanRL's Atari PPO settings (the `atari` preset; `atari_native` shares them).
_ATARI = PPOConfig(
    env_id="ALE/Breakout-v5",
    env_kwargs={
        "frameskip": 1,
        "repeat_action_probability": 0.0,
        "wrappers": ["fastbatch.atari:preprocess"],
        "frame_stack": 4,
    },
    backend="process",
    cnn="nature",
    policy_layers=(),
    value_layers=(),
    num_envs=8,
    rollout_steps=128,
    total_steps=10_000_000,
    learning_rate=2.5e-4,
    anneal_lr=True,
    epochs=4,
    minibatches=4,
    clip_ratio=0.1,
    value_clip=0.1,
    entropy_coef=0.01,
    checkpoint_every=100,
    tf_intra_op_threads=0,  # the CNN's convolutions use every core
    cnn_dtype="auto",  # a bfloat16 torso where the CPU computes it natively
)

# CleanRL's MuJoCo PPO settings: 8 envs x 256 steps, 10 epochs of 32 minibatches, lr 3e-4 annealed.
_CLEANRL_MUJOCO = PPOConfig(
    backend="native",
    num_envs=8,
    rollout_steps=256,
    total_steps=1_000_000,
    learning_rate=3e-4,
    anneal_lr=True,
    epochs=10,
    minibatches=32,
)
# The same with 32 envs x 64 steps (half the policy calls), minibatches of 256, initial std 0.37.
_WIDE_MUJOCO = _CLEANRL_MUJOCO.replace(
    num_envs=32, rollout_steps=64, minibatches=8, init_log_std=-1.0
)
# Small images (MinAtar's 10x10, GridChase's 8x8): the small CNN, linear heads, more envs than SB3.
_SMALL_PIXELS = PPOConfig(
    cnn="small",
    policy_layers=(),
    value_layers=(),
    num_envs=32,
    rollout_steps=128,
    total_steps=1_200_000,
    learning_rate=1e-3,
    anneal_lr=True,
    epochs=4,
    minibatches=8,
    entropy_coef=0.01,
    normalize_reward=False,
    checkpoint_every=100,
    tf_intra_op_threads=0,  # the update's convolutions on every core
)

# DMC from pixels (DrQ-v2's environment: 84x84 RGB from camera 0, action repeat 2, 3 frames
# stacked) on the native dm_control envs, drawn in the pool with visuals="fast"; the Nature CNN,
# CleanRL's MuJoCo PPO update on 16 envs x 128 steps (the policy's steps; env steps are twice as
# many with the action repeat).
_DMC_PIXELS = _CLEANRL_MUJOCO.replace(
    env_kwargs={"pixels": True, "action_repeat": 2, "frame_stack": 3},
    cnn="nature",
    policy_layers=(),
    value_layers=(),
    num_envs=16,
    rollout_steps=128,
    total_steps=250_000,
    minibatches=8,
    checkpoint_every=50,
    tf_intra_op_threads=0,  # the update's convolutions on every core
    cnn_dtype="auto",
)

# minatar asterix and space_invaders: more updates a sample, a shorter GAE horizon, a faster lr.
_MINATAR_16_ENVS = {"num_envs": 16, "gae_lambda": 0.9, "learning_rate": 2e-3}

# cartpole: small nets, short rollouts, many envs (rl-baselines3-zoo's CartPole PPO).
_CARTPOLE = PPOConfig(
    env_id="CartPole-v1",
    num_envs=8,
    rollout_steps=32,
    total_steps=100_000,
    gamma=0.98,
    gae_lambda=0.8,
    learning_rate=3e-3,
    anneal_lr=True,
    epochs=15,
    minibatches=1,
    entropy_coef=0.0,
    normalize_obs=False,
    normalize_reward=False,
    checkpoint_every=100,
)

PRESETS: dict[str, PPOConfig] = {
    "cartpole": _CARTPOLE,
    # pendulum: the zoo's Pendulum PPO (gamma 0.95, 16 envs, a small initial std).
    "pendulum": PPOConfig(
        env_id="Pendulum-v1",
        num_envs=16,
        rollout_steps=128,
        total_steps=300_000,
        gamma=0.95,
        gae_lambda=0.95,
        learning_rate=1e-3,
        anneal_lr=True,
        epochs=10,
        minibatches=8,
        init_log_std=-0.5,
    ),
    # acrobot: the zoo's Acrobot PPO (gamma 0.99, lambda 0.94, 4 epochs).
    "acrobot": PPOConfig(
        env_id="Acrobot-v1",
        num_envs=16,
        rollout_steps=128,
        total_steps=300_000,
        gamma=0.99,
        gae_lambda=0.94,
        learning_rate=1e-3,
        epochs=4,
        minibatches=4,
        normalize_reward=False,
    ),
    # mountaincar_continuous: long rollouts and a far horizon for its sparse goal reward.
    "mountaincar_continuous": PPOConfig(
        env_id="MountainCarContinuous-v0",
        num_envs=16,
        rollout_steps=256,
        total_steps=500_000,
        gamma=0.999,
        gae_lambda=0.9,
        learning_rate=3e-4,
        epochs=10,
        minibatches=8,
        entropy_coef=0.005,
        init_log_std=0.0,
    ),
    # cartpole_novel: velocities hidden (zoo's NoVel): cartpole with a 64-unit GRU core.
    "cartpole_novel": _CARTPOLE.replace(
        env_id="CartPoleNoVel-v1",
        policy="gru",
        policy_layers=(64,),
        value_layers=(64,),
        normalize_obs=None,  # the default (on for vectors), not cartpole's False
    ),
    # pendulum_novel: the pendulum settings with a 64-unit GRU core for the hidden velocity.
    "pendulum_novel": PPOConfig(
        env_id="PendulumNoVel-v1",
        policy="gru",
        gru_size=64,
        num_envs=16,
        rollout_steps=128,
        total_steps=300_000,
        gamma=0.95,
        gae_lambda=0.95,
        learning_rate=1e-3,
        anneal_lr=True,
        epochs=10,
        minibatches=4,
        policy_layers=(64,),
        value_layers=(64,),
        init_log_std=-0.5,
    ),
    # halfcheetah: the zoo's tuned HalfCheetah PPO with a quarter of its update work.
    "halfcheetah": PPOConfig(
        env_id="HalfCheetah-v5",
        backend="native",
        num_envs=32,
        rollout_steps=64,
        total_steps=1_000_000,
        gamma=0.98,
        gae_lambda=0.92,
        learning_rate=2e-4,
        epochs=5,
        minibatches=8,
        clip_ratio=0.2,
        entropy_coef=0.000401762,
        value_coef=0.58096,
        max_grad_norm=0.8,
        init_log_std=-2.0,
        activation="relu",
        policy_layers=(256, 256),
        value_layers=(256, 256),
        jit_compile=True,
    ),
    # hopper, walker2d: CleanRL's MuJoCo PPO settings (8 envs x 256 steps, 32 minibatches).
    "hopper": _CLEANRL_MUJOCO.replace(env_id="Hopper-v5"),
    "walker2d": _CLEANRL_MUJOCO.replace(env_id="Walker2d-v5"),
    # humanoid: the ant settings; an initial std of 0.37 fits the actions' range of +-0.4.
    "humanoid": _WIDE_MUJOCO.replace(env_id="Humanoid-v5"),
    # ant: v4's 27-dim observation, an initial std of 0.37, 32 envs x 64 steps.
    "ant": _WIDE_MUJOCO.replace(
        env_id="Ant-v5", env_kwargs={"include_cfrc_ext_in_observation": False}
    ),
    # dmc_*: dm_control suite tasks (native, state observations) on CleanRL's MuJoCo PPO settings
    # with 16 envs x 128 steps; CleanRL's own runs on these ids are the reference (bench/README).
    **{
        f"dmc_{domain}_{task}": _CLEANRL_MUJOCO.replace(
            env_id=f"dm_control/{domain}-{task}-v0", num_envs=16, rollout_steps=128
        )
        for domain, task in (
            ("cartpole", "swingup"),
            ("cheetah", "run"),
            ("walker", "walk"),
            ("finger", "spin"),
        )
    },
    # dmc_pixels_*: DMC from pixels (DrQ-v2's set-up); 250k policy steps are 500k env steps.
    **{
        f"dmc_pixels_{domain}_{task}": _DMC_PIXELS.replace(env_id=f"dm_control/{domain}-{task}-v0")
        for domain, task in (("cheetah", "run"), ("walker", "walk"))
    },
    # minatar_*: the MinAtar paper's network on its 10x10 frames through the process backend.
    **{
        f"minatar_{key}": _SMALL_PIXELS.replace(env_id=f"MinAtar/{name}-v1", **changes)
        for key, name, changes in (
            ("breakout", "Breakout", {}),
            ("asterix", "Asterix", _MINATAR_16_ENVS),
            ("freeway", "Freeway", {}),
            ("seaquest", "Seaquest", {}),
            ("space_invaders", "SpaceInvaders", _MINATAR_16_ENVS),
        )
    },
    # atari: CleanRL's ppo_atari.py on ale-py's envs through the process backend.
    "atari": _ATARI,
    # atari_native: the same frames and settings on fastbatch-atari's native envs (plugins/atari).
    "atari_native": _ATARI.replace(
        env_kwargs={
            "frameskip": 1,
            "repeat_action_probability": 0.0,
            "atari_preprocessing": True,
            "fire_reset": True,
            "frame_stack": 4,
        },
        backend="native",
    ),
    # simple_spread: mpe2's, one network for every agent; the agents see no clock: gamma 0.8.
    "simple_spread": _SIMPLE_SPREAD,
    # spread: the native Spread-v0 (src/cpp/envs/spread.h) on simple_spread's settings.
    "spread": _SIMPLE_SPREAD.replace(env_id="Spread-v0", pettingzoo=False),
    # gridchase: the README's plugin example (examples/native_env_plugin), a uint8 (3, 8, 8) image.
    "gridchase": _SMALL_PIXELS.replace(
        env_id="GridChase-v0", num_envs=16, rollout_steps=64, total_steps=300_000
    ),
}
"""The named presets: name -> `PPOConfig` (``fastbatch train NAME``, `resolve`); each changes
only a few of the defaults. The training guide's table lists them."""


def resolve(name: str, overrides: list[str] | tuple[str, ...] = (), **changes: Any) -> PPOConfig:
    """A preset (or the defaults for an env id), then `key=value` overrides, then `changes`.

    Args:
        name: A name in `PRESETS`, else an env id (the defaults with that ``env_id``).
        overrides: ``"key=value"`` strings, as ``--set`` takes them: each value parsed by the
            field's type (bools true/false, ``none``, comma-separated tuples, JSON for
            ``env_kwargs``).
        **changes: Field name -> value, applied last.

    Returns:
        The resolved `PPOConfig`.

    Raises:
        ValueError: An override without ``=``, an unknown key, a value the field does not
            take, or a config the checks refuse.
    """
    if name in PRESETS:
        config = PRESETS[name]
    else:
        config = PPOConfig().replace(env_id=name)
    known = {f.name for f in dataclasses.fields(PPOConfig)}
    parsed: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"--set takes key=value, got {item!r}")
        key, text = item.split("=", 1)
        key = key.strip()
        if key not in known:
            raise ValueError(f"unknown config key {key!r}; known keys: {', '.join(sorted(known))}")
        try:
            parsed[key] = parse_value(key, text.strip())
        except ValueError as exc:
            raise ValueError(f"bad value for {key}: {exc}") from None
    unknown = set(changes) - known
    if unknown:
        raise ValueError(f"unknown config key(s) {sorted(unknown)}")
    return config.replace(**parsed, **changes)

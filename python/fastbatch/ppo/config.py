"""PPO configuration: one frozen dataclass, named presets built on its defaults."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class PPOConfig:
    """Every knob of a training run. Presets override a few; `--set key=value` overrides any."""

    env_id: str = "CartPole-v1"
    """Env id: a native fastbatch id, or any gymnasium id (run in worker processes)."""
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    """The env's own parameters, passed to fastbatch.make for training and evaluation (e.g.
    Ant-v5's include_cfrc_ext_in_observation); a dict is accepted and kept as sorted pairs, so
    the config stays frozen and hashable. `--set` takes a JSON object: env_kwargs={"k": false}."""
    num_envs: int = 16
    """Envs stepped together; one rollout holds num_envs * rollout_steps transitions."""
    rollout_steps: int = 128
    """Steps per env in one rollout (T)."""
    total_steps: int = 100_000
    """Env steps to train for (rounded up to whole rollouts)."""
    seed: int = 0
    """Seed of the envs (env i gets seed + i), the network initialisation and the sampling."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE(lambda) parameter."""
    learning_rate: float = 3e-4
    """Adam step size (policy and value)."""
    anneal_lr: bool = False
    """Decay the learning rate linearly to zero over the run."""
    epochs: int = 10
    """Passes over each rollout per update."""
    minibatches: int = 4
    """Minibatches per epoch."""
    trust_region: str = "clip"
    """'clip' (clipped surrogate, today's default) or 'kl' (the paper's adaptive KL penalty)."""
    clip_ratio: float = 0.2
    """Clipping range of the probability ratio ('clip' mode)."""
    kl_target: float = 0.01
    """Target KL per update ('kl' mode): the penalty grows x1.5 above 1.3x it, shrinks /1.5 below 0.7x."""
    kl_init_penalty: float = 1.0
    """Initial KL penalty coefficient beta ('kl' mode)."""
    kl_cutoff_factor: float = 2.0
    """Above kl_cutoff_factor * kl_target a steep quadratic penalty applies ('kl' mode)."""
    kl_cutoff_coef: float = 1000.0
    """Weight of that quadratic penalty ('kl' mode)."""
    value_coef: float = 0.5
    """Weight of the value loss."""
    value_clip: float = 0.0
    """Clip the value update to +-value_clip around the old value; 0 turns it off."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clipping."""
    policy: str = "mlp"
    """'mlp' (no memory: the heads read the observations) or 'gru' (a GRU core of gru_size units
    reads the observations and feeds both heads; trained by backpropagation through each
    rollout, in minibatches of whole env sequences)."""
    gru_size: int = 64
    """Units of the GRU core (policy='gru')."""
    policy_layers: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the policy MLP."""
    value_layers: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the value MLP."""
    activation: str = "tanh"
    """Hidden activation: 'tanh' or 'relu'."""
    init_log_std: float = 0.0
    """Initial log standard deviation of the Gaussian policy (Box actions)."""
    normalize_obs: bool = True
    """Normalise observations by running mean/std (frozen during each rollout and its update)."""
    obs_clip: float = 10.0
    """Clip normalised observations to +-obs_clip."""
    normalize_reward: bool = True
    """Scale rewards by the running std of the discounted return."""
    reward_clip: float = 10.0
    """Clip scaled rewards to +-reward_clip."""
    backend: str | None = None
    """fastbatch.make backend: None chooses (native ids native, others 'process')."""
    num_workers: int | None = None
    """Env workers: threads (native) or processes (process backend). None: one thread for native
    envs (keeps the cores for TensorFlow), the machine's cores for the process backend."""
    jit_compile: bool = False
    """Compile the whole update (GAE, every epoch and minibatch) with XLA: one computation in
    place of a few hundred op dispatches a minibatch. It costs 4-7 s of compilation once and
    saved 3-10% of a halfcheetah update here (bench/ppo_update.py): worth it for long runs of
    big networks only."""
    tf_inter_op_threads: int = 1
    """TensorFlow inter-op threads (0: TF's default). One avoids a thread hop per env step."""
    tf_intra_op_threads: int = 1
    """TensorFlow intra-op threads (0: TF's default, the cores). One was 25% faster per minibatch
    step for these MLPs (64x64 at batch 256, 256x256 at batch 64): their ops are too small to
    gain from the pool's hand-off."""
    checkpoint_every: int = 20
    """Save a checkpoint every this many updates (and at the end). The envs restart at each
    checkpoint (seeded by its number, so that a resumed run continues exactly): training warns
    when ``rollout_steps x checkpoint_every`` is below the env's time limit."""
    eval_episodes: int = 10
    """Episodes of the final deterministic evaluation."""
    return_window: int = 20
    """Training episodes averaged for the reported return."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "env_kwargs", _env_kwargs(self.env_kwargs))
        positive = (
            "num_envs",
            "rollout_steps",
            "total_steps",
            "epochs",
            "minibatches",
            "checkpoint_every",
            "return_window",
            "gru_size",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("tf_inter_op_threads", "tf_intra_op_threads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(
                    f"{name} must be a non-negative integer (0: TensorFlow's default), got {value!r}"
                )
        if self.eval_episodes < 0:
            raise ValueError(f"eval_episodes must be >= 0, got {self.eval_episodes}")
        if self.trust_region not in ("clip", "kl"):
            raise ValueError(f"trust_region must be 'clip' or 'kl', got {self.trust_region!r}")
        if self.activation not in ("tanh", "relu"):
            raise ValueError(f"activation must be 'tanh' or 'relu', got {self.activation!r}")
        if self.policy not in ("mlp", "gru"):
            raise ValueError(f"policy must be 'mlp' or 'gru', got {self.policy!r}")
        if self.policy == "gru" and self.num_envs % self.minibatches:
            raise ValueError(
                f"policy='gru' takes minibatches of whole env sequences: num_envs "
                f"({self.num_envs}) must be divisible by minibatches ({self.minibatches})"
            )
        if not 0 < self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError("gamma must be in (0, 1] and gae_lambda in [0, 1]")
        if (self.num_envs * self.rollout_steps) % self.minibatches:
            raise ValueError(
                f"num_envs * rollout_steps ({self.num_envs * self.rollout_steps}) must be divisible "
                f"by minibatches ({self.minibatches})"
            )
        for name in ("learning_rate", "clip_ratio", "kl_target", "max_grad_norm"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_steps

    def replace(self, **changes: Any) -> PPOConfig:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        data["env_kwargs"] = dict(self.env_kwargs)  # a JSON object, as --set takes it
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> PPOConfig:
        data = json.loads(text)
        if "num_threads" in data:  # configs saved before the knob was renamed
            data["num_workers"] = data.pop("num_threads")
        for name in ("policy_layers", "value_layers"):
            data[name] = tuple(data[name])
        return cls(**data)


# Keyword arguments that make_env sets from other fields; env_kwargs may not repeat them.
_MAKE_KEYWORDS = (
    "autoreset_mode",
    "backend",
    "num_envs",
    "num_threads",
    "num_workers",
    "seed",
    "stats_key",
)


def _frozen(value: Any) -> Any:
    """A JSON value with its lists as tuples (a range kwarg such as healthy_z_range)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def _env_kwargs(value: Any) -> tuple[tuple[str, Any], ...]:
    """env_kwargs as sorted (name, value) pairs, from a mapping or from pairs."""
    try:
        pairs = dict(value).items()
    except (TypeError, ValueError):
        raise ValueError(
            f"env_kwargs must be a mapping of parameter names to values, got {value!r}"
        ) from None
    for key, _ in pairs:
        if not isinstance(key, str):
            raise ValueError(f"env_kwargs names must be strings, got {key!r}")
        if key in _MAKE_KEYWORDS:
            raise ValueError(
                f"env_kwargs may not set {key!r}: the trainer sets it (use the config field)"
            )
    return tuple(sorted((key, _frozen(v)) for key, v in pairs))


PRESETS: dict[str, PPOConfig] = {
    # Classic control on native envs: small nets, short rollouts, many envs.
    "cartpole": PPOConfig(
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
    ),
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
    # Partially observed classic control (rl-baselines3-zoo's NoVel envs: no velocities in the
    # observation), so the policy needs memory: a GRU core of 64 units and one 64-unit layer
    # per head, as the zoo's RecurrentPPO settings (hyperparams/ppo_lstm.yml) use an LSTM of
    # 64 ... 256 units and 64-unit heads.
    "cartpole_novel": PPOConfig(
        env_id="CartPoleNoVel-v1",
        policy="gru",
        gru_size=64,
        num_envs=8,
        rollout_steps=32,
        total_steps=100_000,
        gamma=0.98,
        gae_lambda=0.8,
        learning_rate=3e-3,
        anneal_lr=True,
        epochs=15,
        minibatches=1,
        policy_layers=(64,),
        value_layers=(64,),
        normalize_reward=False,
        checkpoint_every=100,
    ),
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
    # MuJoCo locomotion on fastbatch's native MuJoCo envs (fastbatch.mujoco, the `mujoco` extra):
    # gymnasium's v5 envs in C++, float64 observations, stepped by the rollout op.
    # halfcheetah: rl-baselines3-zoo's tuned HalfCheetah PPO (small initial std, ReLU 256x256,
    # gamma 0.98, lambda 0.92) with a quarter of its update work. The zoo's own update (8 envs x
    # 64 steps, 20 epochs of 64-sample minibatches at lr 2e-5, clip 0.1) scored 6409/6667 in
    # 380/388 s, ~75% of it in the update (bench/README.md). Here 32 envs x 64 steps (a quarter
    # of the updates, ~45 s of collection), 5 epochs of 256-sample minibatches at lr 2e-4, and
    # clip 0.2, since with 4x fewer updates the clip bounded how far the policy moved (at 10
    # epochs, lr 1e-4: 5177 with clip 0.1, 5820 with 0.2). Seeds 0-2: 5923/5341/4983 in
    # 125/112/122 s.
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
    "hopper": PPOConfig(
        env_id="Hopper-v5",
        backend="native",
        num_envs=8,
        rollout_steps=256,
        total_steps=1_000_000,
        learning_rate=3e-4,
        anneal_lr=True,
        epochs=10,
        minibatches=32,
    ),
    "walker2d": PPOConfig(
        env_id="Walker2d-v5",
        backend="native",
        num_envs=8,
        rollout_steps=256,
        total_steps=1_000_000,
        learning_rate=3e-4,
        anneal_lr=True,
        epochs=10,
        minibatches=32,
    ),
    # humanoid: the ant settings below, on gymnasium's default observation (348 dims); an initial
    # std of 0.37 fits the actions' range of +-0.4 (std 1 would clip most samples to its ends).
    # Not tuned; one run (seed 0, 1M steps): 1305 in 406 s, still rising (CleanRL: 716).
    "humanoid": PPOConfig(
        env_id="Humanoid-v5",
        backend="native",
        num_envs=32,
        rollout_steps=64,
        total_steps=1_000_000,
        learning_rate=3e-4,
        anneal_lr=True,
        epochs=10,
        minibatches=8,
        init_log_std=-1.0,
    ),
    # ant: the hopper settings reached 670 (seed 0) in 362 s. Three changes, measured at 1M
    # steps (bench/README.md): the 27-dim observation of the v4 envs the published scores used
    # (no contact forces), an initial std of 0.37 (log -1; at std 1 the control cost of ~2.1 a
    # step outweighs the healthy reward of 1: the return stayed near 0 for 570k steps, though
    # that run also had 512-sample minibatches), and
    # 32 envs x 64 steps (the same 2048 a rollout, half the policy calls of 16 x 128: the
    # collection is ~90% of the time) with minibatches of 256.
    "ant": PPOConfig(
        env_id="Ant-v5",
        env_kwargs={"include_cfrc_ext_in_observation": False},
        backend="native",
        num_envs=32,
        rollout_steps=64,
        total_steps=1_000_000,
        learning_rate=3e-4,
        anneal_lr=True,
        epochs=10,
        minibatches=8,
        init_log_std=-1.0,
    ),
}


def _parse_value(name: str, text: str) -> Any:
    if name == "env_kwargs":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"env_kwargs takes a JSON object, got {text!r} ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"env_kwargs takes a JSON object, got {text!r}")
        return value
    kinds = {f.name: f.type for f in fields(PPOConfig)}
    kind = kinds[name]
    if kind == "bool":
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} takes true/false, got {text!r}")
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind.startswith("tuple"):
        return tuple(int(x) for x in text.replace("(", "").replace(")", "").split(",") if x.strip())
    if kind == "int | None":
        return None if text.lower() == "none" else int(text)
    if kind == "str | None":
        return None if text.lower() == "none" else text
    return text


def resolve(name: str, overrides: list[str] | tuple[str, ...] = (), **changes: Any) -> PPOConfig:
    """A preset (or the defaults for an env id), then `key=value` overrides, then `changes`."""
    if name in PRESETS:
        config = PRESETS[name]
    else:
        config = PPOConfig().replace(env_id=name)
    known = {f.name for f in fields(PPOConfig)}
    parsed: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"--set takes key=value, got {item!r}")
        key, text = item.split("=", 1)
        key = key.strip()
        if key not in known:
            raise ValueError(f"unknown config key {key!r}; known keys: {', '.join(sorted(known))}")
        try:
            parsed[key] = _parse_value(key, text.strip())
        except ValueError as exc:
            raise ValueError(f"bad value for {key}: {exc}") from None
    unknown = set(changes) - known
    if unknown:
        raise ValueError(f"unknown config key(s) {sorted(unknown)}")
    return config.replace(**parsed, **changes)

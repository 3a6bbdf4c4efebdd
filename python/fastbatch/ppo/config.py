"""PPO configuration: one frozen dataclass (its presets are in presets.py), its checks, JSON and
``--set`` parsing by the type hints."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from typing import Any

CNN_DTYPES = ("auto", "float32", "bfloat16")  # PPOConfig.cnn_dtype's choices


def check_cnn_dtype(name: str) -> None:
    """Refuses a `cnn_dtype` that is not one of CNN_DTYPES, naming them."""
    if name not in CNN_DTYPES:
        raise ValueError(f"cnn_dtype must be one of {', '.join(CNN_DTYPES)}, got {name!r}")


@dataclass(frozen=True)
class PPOConfig:
    """Every knob of a training run. Presets override a few; `--set key=value` overrides any.

    Frozen; its fields (below) are its constructor's keyword arguments, checked when it is made.

    Raises:
        ValueError: A field out of its range or choices (naming it and what it takes), or
            fields that do not fit together (``policy="gru"`` with ``shared_torso=False`` or
            ``num_envs`` not divisible by ``minibatches``; ``num_envs * rollout_steps`` not
            divisible by ``minibatches``).
    """

    env_id: str = "CartPole-v1"
    """Env id: a native fastbatch id, or any gymnasium id (run in worker processes); with
    ``pettingzoo=True``, a PettingZoo env: a module with ``parallel_env`` ("mpe2.simple_spread_v3")
    or "module:function"."""
    pettingzoo: bool = False
    """env_id is a PettingZoo ParallelEnv, trained with parameter sharing: every (env, agent)
    pair is a batch row of one network (`fastbatch.make_agents`; independent PPO with shared
    weights, as in the IPPO/MAPPO papers). num_envs counts ParallelEnvs, while total_steps, the
    logged steps and the episode statistics count agent rows (as SB3 over SuperSuit does). Agents
    that left their env before it ended sit out of the update until it resets."""
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    """The env's own parameters, passed to fastbatch.make for training and evaluation (e.g.
    Ant-v5's include_cfrc_ext_in_observation); a dict is accepted and kept as sorted pairs, so
    the config stays frozen and hashable. `--set` takes a JSON object: env_kwargs={"k": false}."""
    plugins: tuple[str, ...] = ()
    """Native plugin libraries to register (every env they export) before the env is made:
    `fastbatch train ID --plugin path/to/libmy_envs.so`. Kept in config.json, so `--resume` and
    `fastbatch eval` load them too."""
    imports: tuple[str, ...] = ()
    """Modules that register gymnasium ids, imported before the env is made: "module" or
    "module:function" (the function is called), e.g. "minatar.gym:register_envs". The common
    env packages (ale_py, minatar, minigrid) are imported by their ids without this."""
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
    bootstrap_truncation: bool = True
    """A truncated episode's return goes on with the value of its final observation (the time
    limit is not part of the task). False ends it there, as a termination: for envs whose fixed
    horizon is the task (MPE's max_cycles, as MAPPO and SB3 over SuperSuit treat it) and whose
    observations do not show the time left."""
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
    cnn: str = "auto"
    """The convolutional torso of image observations (rank 3, or 4 for stacked colour frames,
    whose channels are joined; vectors take none): 'nature'
    (DQN's, as CleanRL's Atari PPO: 32-64-64 filters and a 512-unit layer), 'impala' (the
    IMPALA ResNet: 3 stages of conv, max-pool and 2 residual blocks, then 256 units), 'small'
    (the MinAtar paper's: one 3x3 conv of 16 filters and 128 units, for inputs such as 10x10),
    or 'auto': 'nature' for images of 36x36 and more, 'small' below. The core (policy='mlp' or
    'gru') then reads the torso's features."""
    cnn_dtype: str = "float32"
    """The dtype the CNN torso computes in: 'float32', 'bfloat16' (mixed precision: weights,
    gradients and optimiser stay float32; images and weights are cast at each call and the
    features come back as float32), or 'auto': bfloat16 where the CPU computes it natively (x86
    avx512_bf16 or amx_bf16), float32 elsewhere."""
    channels: str = "auto"
    """Where an image's channels are: 'first' (C, H, W), 'last' (H, W, C), or 'auto': the
    shorter of the first and last axes (ties: last)."""
    shared_torso: bool = True
    """Policy and value share one CNN torso (as CleanRL's Atari PPO); False gives each its own
    (policy='mlp' only)."""
    policy_layers: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the policy MLP."""
    value_layers: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the value MLP."""
    activation: str = "tanh"
    """Hidden activation: 'tanh' or 'relu'."""
    init_log_std: float = 0.0
    """Initial log standard deviation of the Gaussian policy (Box actions)."""
    normalize_obs: bool | None = None
    """Normalise observations by running mean/std (frozen during each rollout and its update).
    None: on for vector observations, off for images (a uint8 image is scaled by 1/255, a bool
    one taken as 0/1, inside the network)."""
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
        if self.cnn not in ("auto", "nature", "impala", "small"):
            raise ValueError(f"cnn must be 'auto', 'nature', 'impala' or 'small', got {self.cnn!r}")
        check_cnn_dtype(self.cnn_dtype)
        if self.channels not in ("auto", "first", "last"):
            raise ValueError(f"channels must be 'auto', 'first' or 'last', got {self.channels!r}")
        if self.policy == "gru" and not self.shared_torso:
            raise ValueError("policy='gru' reads one torso's features: set shared_torso=True")
        for name in ("plugins", "imports"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"{name} must be a list of non-empty strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
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
        """Env steps of one rollout (of a batch of agents: its ParallelEnvs' steps; the
        agent's ``batch_size`` counts rows)."""
        return self.num_envs * self.rollout_steps

    def replace(self, **changes: Any) -> PPOConfig:
        """A copy with some fields changed.

        Args:
            **changes: Field name -> new value.

        Returns:
            The new config (this one is frozen, unchanged).

        Raises:
            TypeError: An unknown field.
            ValueError: A value the checks refuse.
        """
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        """The config as indented JSON (``env_kwargs`` as an object), as ``config.json`` holds it.

        Returns:
            The JSON text; `from_json` reads it back.
        """
        data = dataclasses.asdict(self)
        data["env_kwargs"] = dict(self.env_kwargs)  # a JSON object, as --set takes it
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> PPOConfig:
        """The config of a JSON text written by `to_json` (also configs saved before
        ``num_threads`` became ``num_workers``).

        Args:
            text: The JSON text.

        Returns:
            The config, checked as any is.

        Raises:
            ValueError: Not JSON, or a value the checks refuse.
            TypeError: An unknown field.
        """
        data = json.loads(text)
        if "num_threads" in data:  # configs saved before the knob was renamed
            data["num_workers"] = data.pop("num_threads")
        for name in ("policy_layers", "value_layers", "plugins", "imports"):
            if name in data:
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


def parse_value(name: str, text: str) -> Any:
    """The value of field `name` from its ``--set`` text, by the field's type hint: bools take
    true/false (1/0, yes/no, on/off), ``X | None`` takes "none", tuples comma-separated items,
    ``env_kwargs`` a JSON object. ValueError saying what the field takes."""
    if name == "env_kwargs":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"env_kwargs takes a JSON object, got {text!r} ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"env_kwargs takes a JSON object, got {text!r}")
        return value
    return _parse(typing.get_type_hints(PPOConfig)[name], name, text)


def _parse(hint: Any, name: str, text: str) -> Any:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if type(None) in args and text.lower() == "none":
            return None
        (hint,) = (a for a in args if a is not type(None))
        return _parse(hint, name, text)
    if typing.get_origin(hint) is tuple:
        items = text.replace("(", "").replace(")", "").split(",")
        return tuple(_parse(args[0], name, x.strip()) for x in items if x.strip())
    if hint is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} takes true/false, got {text!r}")
    if hint in (int, float):
        try:
            return hint(text)
        except ValueError:
            raise ValueError(f"{name} takes {hint.__name__} values, got {text!r}") from None
    return text

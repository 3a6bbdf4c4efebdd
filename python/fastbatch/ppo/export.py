"""The exported policy (a SavedModel), loading it back, and playing episodes with a policy.

The SavedModel that `train` writes to ``<run>/policy`` holds only the core, the policy head
and the observation statistics (not the agent, whose rollout graph may use the fastbatch op
that a loader would not have). Raw observations go in (normalised inside), deterministic
actions come out, clipped to the action space for Box actions. Signatures:

``step``: ``{"obs": float32 [B, obs], "state": float32 [B, S]} -> {"action": [B, ...],
"state": float32 [B, S]}``. One step of B envs: ``state`` is each env's core state before the
step and the returned ``state`` the one to pass with its next observation. Where an env's
episode starts, pass the initial state for it. S is the core's state size (``gru_size`` for
``policy="gru"``, 0 for the MLP).

``initial_state``: ``{"batch_size": int32 []} -> {"state": float32 [batch_size, S]}``, the
state of envs whose episode starts (zeros).

``serving_default``: ``step`` for a recurrent policy; for the MLP, ``{"obs"} -> {"action"}``
(no state, as exports made before recurrent policies existed).

`load_policy` turns either kind into a `Player`, which keeps the state between calls.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

import fastbatch
from fastbatch import api

from .normalize import prepare_observations

__all__ = ["Player", "PolicyExport", "evaluate_saved", "export_policy", "load_policy"]


class PolicyExport(tf.Module):
    """The exported policy of an agent (see the module docstring for its signatures)."""

    def __init__(self, agent):
        super().__init__()
        # Tracked only when it has weights (a GRU, a CNN torso): an MLP's export holds what it
        # always held.
        self.core = agent.core if getattr(agent.core, "trainable_variables", ()) else None
        self._recurrent = agent.recurrent
        self.policy = agent.policy
        self.obs_rms = agent.obs_rms
        core, state_size = agent.core, agent.core.state_size
        normalize, clip = agent.normalize_obs, agent.config.obs_clip
        low = None if agent.discrete else agent.action_low
        high = None if agent.discrete else agent.action_high

        def step(obs, state):
            x = prepare_observations(obs, self.obs_rms, normalize, clip)
            features, state = core(x, state, tf.zeros([tf.shape(obs)[0]], tf.bool))
            action = self.policy.mode(self.policy(features))
            action = action if low is None else tf.clip_by_value(action, low, high)
            return {"action": action, "state": state}

        def initial_state(batch_size):
            return {"state": tf.zeros([batch_size, state_size])}

        def serve(obs):
            return step(obs, tf.zeros([tf.shape(obs)[0], 0]))["action"]

        # Observations in the env's dtype (uint8 images stay uint8), as the agent reads them.
        obs_dtype = tf.as_dtype(agent.rollout.arrays["obs"].dtype)
        obs_spec = tf.TensorSpec([None, *agent.obs_shape], obs_dtype, name="obs")
        state_spec = tf.TensorSpec([None, state_size], tf.float32, name="state")
        self.step = tf.function(step, autograph=False, input_signature=[obs_spec, state_spec])
        self.initial_state = tf.function(
            initial_state,
            autograph=False,
            input_signature=[tf.TensorSpec([], tf.int32, name="batch_size")],
        )
        if not agent.recurrent:
            self.serve = tf.function(serve, autograph=False, input_signature=[obs_spec])

    def signatures(self) -> dict:
        serving = self.step if self._recurrent else self.serve
        return {"serving_default": serving, "step": self.step, "initial_state": self.initial_state}


def export_policy(agent, path: Path) -> None:
    """Writes the agent's policy as a SavedModel to `path`."""
    module = PolicyExport(agent)
    tf.saved_model.save(module, str(path), signatures=module.signatures())


class Player:
    """A policy playing a batch of envs: ``player(obs, starts) -> actions``, where ``starts
    [B]`` marks envs whose episode begins with `obs`. It keeps each env's state between calls
    and gives an env whose episode starts (or a batch of another size) the initial state.

    `load_policy` makes one. Call it as ``actions = player(obs, starts)``: ``obs`` ``[B, *obs]``
    (cast to the policy's observation dtype) and ``starts`` ``[B]`` bool; the actions are a
    numpy array ``[B, ...]`` (deterministic, clipped to a Box action space).

    Args:
        step: ``(obs, state) -> (actions, state)``, on numpy arrays.
        initial_state: ``batch -> state``: the state ``[batch, S]`` of envs whose episode
            starts.
        obs_dtype: The dtype the policy takes its observations in.
    """

    def __init__(self, step, initial_state, obs_dtype=np.float32):
        self._step, self._initial_state = step, initial_state
        self._obs_dtype = np.dtype(obs_dtype)  # what the policy's signature takes
        self._state: np.ndarray | None = None

    def __call__(self, obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, self._obs_dtype)
        initial = self._initial_state(len(obs))
        if self._state is None or len(self._state) != len(obs):
            state = initial
        else:
            state = np.where(np.asarray(starts, bool)[:, None], initial, self._state)
        actions, self._state = self._step(obs, state)
        return actions


def load_policy(path: str | Path) -> Player:
    """The deterministic policy of a SavedModel exported by `train`, as a `Player`.

    Exports from before recurrent policies (no ``step`` signature) play statelessly.

    Args:
        path: The SavedModel directory (``<run>/policy``).

    Returns:
        A `Player`: ``player(obs, starts) -> actions`` on numpy arrays.

    Raises:
        OSError: No SavedModel at ``path`` (TensorFlow's error).
    """
    model = tf.saved_model.load(str(path))
    if "step" not in model.signatures:
        serve = model.signatures["serving_default"]

        def stateless(obs, state):
            out = serve(obs=tf.constant(obs))
            return next(iter(out.values())).numpy(), state

        return Player(stateless, lambda batch: np.zeros((batch, 0), np.float32))
    step, initial = model.signatures["step"], model.signatures["initial_state"]
    obs_dtype = step.structured_input_signature[1]["obs"].dtype.as_numpy_dtype

    def play(obs, state):
        out = step(obs=tf.constant(obs), state=tf.constant(state))
        return out["action"].numpy(), out["state"].numpy()

    initial_state = lambda batch: initial(batch_size=tf.constant(batch))["state"].numpy()  # noqa: E731
    return Player(play, initial_state, obs_dtype)


def run_episodes(env, policy, episodes: int) -> list[float]:
    """Returns of the first `episodes` episodes that `policy` plays on `env` (SAME_STEP
    autoreset mode); `policy(obs, starts) -> actions` as a `Player`."""
    obs, _ = env.reset()
    starts = np.ones(env.num_envs, bool)
    returns: list[float] = []
    while len(returns) < episodes:
        obs, _, terminated, truncated, info = env.step(policy(obs, starts))
        starts = terminated | truncated
        if "episode" in info:
            returns.extend(info["episode"]["r"][info["_episode"]].tolist())
    return returns[:episodes]


def evaluate_saved(
    path: str | Path,
    env_id: str,
    episodes: int,
    seed: int = 0,
    *,
    pettingzoo: bool = False,
    **make_kwargs,
) -> list[float]:
    """Plays `episodes` episodes of `env_id` with a SavedModel exported by `train`.

    The policy is deterministic; up to 16 envs play at once, in SAME_STEP autoreset mode.

    Args:
        path: The SavedModel directory (``<run>/policy``).
        env_id: The env to play, as `fastbatch.make` takes it.
        episodes: How many episodes to play.
        seed: Env ``i`` gets ``seed + i``.
        pettingzoo: `env_id` names a PettingZoo env (as a ``pettingzoo`` run's config) and the
            episodes are agents' (`fastbatch.make_agents`: every agent plays the policy), as
            they are for a native multi-agent env (``"Spread-v0"``).
        **make_kwargs: More keyword arguments of the env's make (its params, ``backend``,
            ``num_workers``).

    Returns:
        The returns of the first `episodes` episodes to end, in the order they ended.

    Raises:
        OSError: No SavedModel at ``path``.
        UnknownEnvError: No backend knows `env_id`.
    """
    policy = load_policy(path)
    make_kwargs = {"seed": seed, "autoreset_mode": "same_step", **make_kwargs}
    agents = True if pettingzoo else None  # None: as the id is (native agents or not)
    found = api.route(env_id, multi_agent=agents, **{**make_kwargs, "stats_key": "episode"})
    make = fastbatch.make_agents if found.multi_agent else fastbatch.make
    env = make(found, min(episodes, 16))
    returns = run_episodes(env, policy, episodes)
    env.close()
    return returns

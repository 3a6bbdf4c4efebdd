"""BatchPPO: in-graph collection and update over a fastbatch vector env.

One `collect()` call runs a whole rollout of T steps x N envs inside a single `tf.function`:
the policy samples in-graph and each batch step reaches the env through `Rollout.step`
(rollout.py: the compiled rollout op for native envs, `tf.numpy_function` otherwise), which
writes observations straight into preallocated, 64-byte-aligned rollout storage that
TensorFlow reads through DLPack aliases: no copies. One `update()` call runs every epoch and
minibatch inside a single `tf.function`.

Truncation bootstraps the value from the final observation (the envs run in SAME_STEP
autoreset mode, so every stored transition is real: no padded steps), seen from the core's
state carried to that step; termination does not.

Recurrent cores (core.py): each env's state at the start of a rollout is kept in the agent
(``rollout_state``, with ``rollout_starts`` marking envs whose first observation begins an
episode), the state is reset wherever an episode starts (the step after terminated or
truncated), and the update replays each env's whole rollout from that kept state with the
current weights: minibatches are sets of whole env sequences, and gradients flow back through
the rollout (truncated BPTT). The feed-forward core is the same code with one step per
"sequence" and a minibatch of shuffled steps.
Observation statistics are frozen from the start of a rollout to the end of its update, then
updated with that rollout's observations, so the normaliser never drifts between collection
and update (the first minibatch's probability ratio is exactly 1).
"""

from __future__ import annotations

import functools
import logging

import gymnasium
import tensorflow as tf

from . import losses
from .config import PPOConfig
from .core import make_core
from .distribute import Key, LocalSync
from .gae import gae
from .minibatches import advantage_stats, shuffle_orders, take
from .networks import Policy, Value
from .normalize import RunningMeanStd, prepare_observations, scale_rewards
from .optim import Adam
from .rollout import Rollout
from .torsos import Encoded, make_torso


def flat(x):
    """`x` with its two leading axes merged: ``[T, N, ...] -> [T * N, ...]``."""
    return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0))


def adapt_kl_penalty(beta, kl, target):
    """The paper's rule: x1.5 when the update's KL exceeds 1.3x the target, /1.5 below 0.7x."""
    return tf.where(kl > 1.3 * target, beta * 1.5, tf.where(kl < 0.7 * target, beta / 1.5, beta))


# What each minibatch step reports, averaged over an update (`_minibatch` names them).
MINIBATCH_METRICS = (
    "policy_loss",
    "value_loss",
    "entropy",
    "kl",
    "clip_fraction",
    "grad_norm",
    "loss",
)


class Agent(tf.Module):
    """Networks, normalisers, optimiser and counters of one run (everything a checkpoint holds),
    plus the rollout storage and the env it is bound to (which a checkpoint does not hold).
    ``rollout_op=False`` steps the env through tf.numpy_function even where the op would fit.
    `sync` (distribute.py) exchanges gradients, metrics and statistics with the other workers
    of a data-parallel run; the default is one process."""

    def __init__(self, config: PPOConfig, env, *, rollout_op: bool = True, sync=None):
        super().__init__(name="agent")
        self.config = config
        self.sync = sync or LocalSync()
        obs_space, act_space = env.single_observation_space, env.single_action_space
        shape = getattr(obs_space, "shape", None)
        if not isinstance(obs_space, gymnasium.spaces.Box) or len(shape) not in (1, 3, 4):
            raise ValueError(
                "PPO here takes Box observations of rank 1 (vectors), 3 (images, channel-first "
                f"or channel-last) or 4 (stacked images), got {obs_space}"
            )
        self.obs_shape = tuple(int(d) for d in shape)
        self.image = len(self.obs_shape) in (3, 4)
        # None: on for vectors; images are scaled inside the network instead (normalize).
        normalize = config.normalize_obs
        self.normalize_obs = (not self.image) if normalize is None else bool(normalize)
        self.discrete = hasattr(act_space, "n")
        if not self.discrete and len(act_space.shape) != 1:
            raise ValueError(f"PPO here takes flat Box actions, got shape {act_space.shape}")
        self.core, policy_in, value_in = self._make_core(config)
        self.recurrent = self.core.state_size > 0
        self.policy = Policy(
            self.core.feature_size,
            act_space,
            config.policy_layers,
            config.activation,
            config.init_log_std,
            config.seed,
            take=policy_in,
        )
        self.value = Value(
            self.core.feature_size, config.value_layers, config.activation, config.seed, value_in
        )
        self.obs_rms = RunningMeanStd(list(self.obs_shape), name="obs_rms")
        self.ret_rms = RunningMeanStd([], name="ret_rms")
        # Batch rows: the envs, or every (env, agent) pair of a batch of agents (make_agents).
        self.num_rows = n = env.num_envs
        self.batch_size = n * config.rollout_steps
        self.running_return = tf.Variable(tf.zeros([n], tf.float64), trainable=False)
        variables = [
            *getattr(self.core, "trainable_variables", ()),
            *self.policy.trainable_variables,
            *self.value.trainable_variables,
        ]
        self.optimizer = Adam(variables, config.learning_rate, config.max_grad_norm)
        self.beta = tf.Variable(
            config.kl_init_penalty, trainable=False, dtype=tf.float32, name="beta"
        )
        self.env_steps = tf.Variable(0, trainable=False, dtype=tf.int64, name="env_steps")
        self.updates = tf.Variable(0, trainable=False, dtype=tf.int64, name="updates")
        if not self.discrete:
            self.action_low = tf.constant(act_space.low, tf.float32)
            self.action_high = tf.constant(act_space.high, tf.float32)
        if self.recurrent:  # checkpointed; an MLP agent's checkpoint has no such entries
            self.rollout_state = tf.Variable(
                self.core.initial_state(n), trainable=False, name="rollout_state"
            )
            self.rollout_starts = tf.Variable(
                tf.ones([n], tf.bool), trainable=False, name="rollout_starts"
            )
        self._next_start = None  # (state, starts) where the last collected rollout ended
        # The update's graph function; with config.jit_compile, the same as one XLA computation.
        self._update_call = self._update
        if config.jit_compile and self.sync.distributed:
            logging.getLogger("fastbatch").warning(
                "fastbatch: jit_compile is off in a distributed run (XLA on CPU has no "
                "collectives); the update runs as a graph"
            )
        elif config.jit_compile:
            graph = functools.partial(type(self)._update.python_function, self)
            self._update_call = tf.function(graph, autograph=False, jit_compile=True)
        self.rollout = Rollout(env, config.rollout_steps, use_op=rollout_op)

    def _make_core(self, config: PPOConfig):
        """The core (core.py) over the observations, behind a CNN torso for images
        (torsos.py); and which columns of its features each head reads (None: all of them)."""
        if not self.image:
            core = make_core(config.policy, self.obs_shape[0], config.gru_size, config.seed)
            return core, None, None
        count = 1 if config.shared_torso else 2
        torsos = [
            make_torso(
                config.cnn,
                self.obs_shape,
                config.channels,
                config.seed + 1000 * k,
                config.cnn_dtype,
            )
            for k in range(count)
        ]
        size = torsos[0].feature_size
        core = Encoded(torsos, make_core(config.policy, size * count, config.gru_size, config.seed))
        if config.shared_torso:
            return core, None, None
        return core, (0, size), (size, 2 * size)

    def start(self, seed: int) -> None:
        """Resets every env (env i gets seed + i) into slot 0 of the rollout storage; every
        env's episode starts there."""
        self.rollout.start(seed)
        self.running_return.assign(tf.zeros_like(self.running_return))
        if self.recurrent:
            self.rollout_state.assign(tf.zeros_like(self.rollout_state))
            self.rollout_starts.assign(tf.ones_like(self.rollout_starts))

    def initial_state(self, batch):
        """The core's state ``[batch, state_size]`` for envs whose episode starts."""
        return self.core.initial_state(batch)

    def _rollout_start(self):
        """(state, starts) of every env at slot 0 of the rollout (graph side)."""
        if self.recurrent:
            return tf.identity(self.rollout_state), tf.identity(self.rollout_starts)
        n = self.num_rows
        return self.core.initial_state(n), tf.ones([n], tf.bool)

    # ------------------------------------------------------------------ collection
    def normalize(self, obs):
        """Raw observations (the env's dtype) as the networks read them (normalize.py)."""
        return prepare_observations(obs, self.obs_rms, self.normalize_obs, self.config.obs_clip)

    # The graph functions below are written with explicit tf.while_loop and autograph off:
    # autograph's source transformation was most of the start-up time (about 2 s of 2.3 s).
    # The rollout storage is passed in as arguments, never captured: tf.function would bake a
    # captured tensor of up to 128 elements into the graph as a constant.

    def collect(self):
        """One rollout of T steps: returns the sampled actions [T, N, ...]."""
        actions, state, done = self._collect(self.rollout.tensors["obs"])
        self._next_start = (state, done)
        self.rollout.finish()
        return actions

    @tf.function(autograph=False)
    def _collect(self, obs_store):
        """Everything else the update needs (log-probs, values, distribution parameters) it
        recomputes in one batch from the stored observations, with the same weights and frozen
        statistics: the loop stays short and the results are identical."""
        c = self.config
        T, N = c.rollout_steps, self.num_rows
        # Worker r samples as envs r * N ... r * N + N - 1 of one batch over every worker.
        base = tf.cast(self.env_steps, tf.int32) + self.sync.rank * T * N
        state0, starts0 = self._rollout_start()

        def body(t, obs, state, starts, actions):
            features, state = self.core(self.normalize(obs), state, starts)
            params = self.policy(features)
            action = self.policy.sample(params, tf.stack([base, t + 7919 * c.seed]))
            env_action = (
                action
                if self.discrete
                else tf.clip_by_value(action, self.action_low, self.action_high)
            )
            next_obs, done = self.rollout.step(t, env_action)
            return t + 1, next_obs, state, done, actions.write(t, action)

        actions = tf.TensorArray(tf.int64 if self.discrete else tf.float32, T)
        _, _, state, done, actions = tf.while_loop(
            lambda t, *_: t < T,
            body,
            (tf.constant(0), obs_store[0], state0, starts0, actions),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([N, *self.obs_shape]),
                state0.shape,
                tf.TensorShape([N]),
                None,
            ),
        )
        self.env_steps.assign_add(T * N * self.sync.world_size)  # every worker's steps
        return actions.stack(), state, done

    def bootstrap_values(self, next_obs, final_obs, states, done):
        """Values that the rollout's last step and its truncated episodes bootstrap from, each
        seen from the core's state carried to it: ``next_obs [N, obs]`` (slot T, after the
        last step's reset rule) gives ``[N]``; ``final_obs [T, N, obs]`` (the final observation
        of an episode that ended at step t) with ``states [T, N, S]`` (the state after step t)
        gives ``[T, N]``. ``done [T, N]``: the episode ended at step t."""
        T, N = self.config.rollout_steps, self.num_rows
        last_features, _ = self.core(self.normalize(next_obs), states[-1], done[-1])
        final_features, _ = self.core(
            self.normalize(tf.reshape(final_obs, [T * N, *self.obs_shape])),
            tf.reshape(states, [T * N, self.core.state_size]),
            tf.zeros([T * N], tf.bool),
        )
        return self.value(last_features), tf.reshape(self.value(final_features), [T, N])

    def scale_rewards(self, rewards, done):
        """Divides rewards by the running std of the discounted return (normalize.py)."""
        if not self.config.normalize_reward:
            return rewards
        c = self.config
        return scale_rewards(
            rewards, done, self.running_return, self.ret_rms, self.sync, c.gamma, c.reward_clip
        )

    def update(self, actions):
        """All epochs and minibatches of one update; returns the logged metrics. The next
        rollout then starts where this one ended (observations and core states)."""
        t = self.rollout.tensors
        state0, starts0 = self._rollout_start()
        metrics = self._update_call(
            actions,
            t["obs"],
            t["reward"],
            t["terminated"],
            t["truncated"],
            t["final_obs"],
            t["active"],
            state0,
            starts0,
        )
        self.rollout.carry_over()
        if self.recurrent and self._next_start is not None:
            self.rollout_state.assign(self._next_start[0])
            self.rollout_starts.assign(self._next_start[1])
        self._next_start = None
        return metrics

    @tf.function(autograph=False)
    def _update(
        self, actions, raw_obs, reward, terminated, truncated, final_obs, active, state0, starts0
    ):
        c = self.config
        T, N = c.rollout_steps, self.num_rows
        batch = T * N
        done = tf.logical_or(terminated, truncated)
        # Where a row's episode may begin next (Rollout.step's done): in a batch of agents also
        # after a step its agent sat out.
        breaks = tf.logical_or(done, tf.logical_not(active)) if self.rollout.masked else done
        obs = raw_obs[:T]  # [T, N, *obs_shape], the env's dtype: made float inside the networks
        starts = tf.concat([starts0[None], breaks[:-1]], axis=0)  # the episode begins at obs[t]

        # The behaviour policy's view of the rollout (the weights it was collected with).
        features, states = self.core.sequence(self.normalize(obs), state0, starts)
        b_params = self.policy(flat(features))
        b_logp = self.policy.log_prob(b_params, flat(actions))
        b_values = self.value(flat(features))
        last_values, final_values = self.bootstrap_values(raw_obs[T], final_obs, states, breaks)
        rewards = self.scale_rewards(reward, done)
        if not c.bootstrap_truncation:  # the horizon ends the task: truncation terminates
            terminated, truncated = done, tf.zeros_like(truncated)
        adv, returns = gae(
            tf.reshape(b_values, [T, N]),
            rewards,
            terminated,
            truncated,
            final_values,
            last_values,
            c.gamma,
            c.gae_lambda,
        )
        old_log_std = tf.identity(self.policy.log_std) if not self.discrete else tf.zeros([0])
        # Stop gradients into the recomputed old quantities: they are the behaviour policy's.
        b_params, b_logp, b_values = (tf.stop_gradient(x) for x in (b_params, b_logp, b_values))
        # Minibatches take units along axis 1 of [S, U, ...] data: whole env sequences for a
        # recurrent core (S = T, U = N), single steps otherwise (S = 1, U = T * N).
        S, U = (T, N) if self.recurrent else (1, batch)

        def units(x):
            return tf.reshape(x, tf.concat([[S, U], tf.shape(x)[1:]], axis=0))

        data = {
            "obs": obs if self.recurrent else units(flat(obs)),
            "starts": starts if self.recurrent else tf.ones([S, U], tf.bool),
            "actions": actions if self.recurrent else units(flat(actions)),
            "old_logp": units(b_logp),
            "old_values": units(b_values),
            "old_params": units(b_params),
            "adv": units(flat(adv)),
            "returns": units(flat(returns)),
        }
        # A batch of agents: each sample weighs 1 where its agent acted, 0 where it sat out.
        weight = units(flat(tf.cast(active, tf.float32))) if self.rollout.masked else None
        if weight is not None:
            data["weight"] = weight
        state0 = state0 if self.recurrent else self.core.initial_state(U)
        mb = U // c.minibatches
        steps = c.epochs * c.minibatches
        # One minibatch: the whole batch, no shuffle, no gathers.
        orders = None
        if c.minibatches > 1:
            orders = shuffle_orders(self.updates, c.seed, self.sync.rank, c.epochs, U)
        adv_stats = advantage_stats(data["adv"], orders, c.minibatches, self.sync, weight)

        def epoch_body(epoch, stats, first_ratio):
            # Each epoch shuffles the units once; its minibatches are consecutive slices.
            shuffled_state0, shuffled = state0, data
            if orders is not None:
                order = orders[epoch]
                shuffled_state0 = tf.gather(state0, order)
                shuffled = {k: tf.gather(x, order, axis=1) for k, x in data.items()}
            epoch_adv_stats = adv_stats.at(0 if orders is None else epoch)

            def minibatch_body(k, stats, first_ratio):
                lo = k * mb
                mb_losses, ratio_dev = self._minibatch(
                    take(shuffled_state0, lo, mb, 0),
                    {name: take(x, lo, mb, 1) for name, x in shuffled.items()},
                    old_log_std,
                    epoch_adv_stats.at(k),
                )
                first_ratio = tf.where(tf.equal(epoch + k, 0), ratio_dev, first_ratio)
                return k + 1, {n: stats[n] + mb_losses[n] for n in stats}, first_ratio

            _, stats, first_ratio = tf.while_loop(
                lambda k, *_: k < c.minibatches,
                minibatch_body,
                (tf.constant(0), stats, first_ratio),
            )
            return epoch + 1, stats, first_ratio

        _, stats, first_ratio = tf.while_loop(
            lambda epoch, *_: epoch < c.epochs,
            epoch_body,
            (tf.constant(0), {n: tf.constant(0.0) for n in MINIBATCH_METRICS}, tf.constant(0.0)),
        )
        # The means over every minibatch of every worker (the global KL), in one all-reduce.
        (means,) = self.sync.mean(
            [tf.stack([stats[n] for n in MINIBATCH_METRICS]) / float(steps)], Key.METRICS
        )
        stats = dict(zip(MINIBATCH_METRICS, tf.unstack(means), strict=True))
        kl = stats["kl"]
        if c.trust_region == "kl":
            self.beta.assign(adapt_kl_penalty(self.beta, kl, c.kl_target))
        if self.normalize_obs or not self.image:  # (vectors: kept as checkpoints always had)
            self.obs_rms.update_merged(
                tf.reshape(raw_obs[:T], [batch, *self.obs_shape]),
                self.sync,
                Key.OBS_MOMENTS,
                None if weight is None else tf.reshape(weight, [batch]),
            )
        self.updates.assign_add(1)
        b_returns, b_weight = flat(returns), None if weight is None else tf.reshape(weight, [-1])
        var_y = losses.variance(b_returns, b_weight)
        explained = 1.0 - losses.variance(b_returns - b_values, b_weight) / (var_y + 1e-8)
        return {
            "loss/policy": stats["policy_loss"],
            "loss/value": stats["value_loss"],
            "loss/entropy": stats["entropy"],
            "kl": kl,
            "clip_fraction": stats["clip_fraction"],
            "grad_norm": stats["grad_norm"],
            "loss/total": stats["loss"],
            "beta": tf.identity(self.beta),
            "explained_variance": explained,
            "first_ratio_max_dev": first_ratio,
            "learning_rate": tf.identity(self.optimizer.lr),
        }

    def _minibatch(self, state0, batch, log_std, adv_stats):
        """One gradient step on a minibatch of sequences: `state0` [B, S], `batch` the data
        of `_update` by name, each [S, B, ...] (the core replays each sequence from its state;
        losses are over every step). `adv_stats`: the `MeanStd` its advantages are normalised
        with (minibatches.py). Returns the MINIBATCH_METRICS by name and the largest |ratio - 1|."""
        c = self.config
        obs, starts = batch["obs"], batch["starts"]
        actions, old_logp, old_values, old_params, adv, returns = (
            flat(batch[name])
            for name in ("actions", "old_logp", "old_values", "old_params", "adv", "returns")
        )
        weight = flat(batch["weight"]) if "weight" in batch else None
        adv = (adv - adv_stats.mean) / (adv_stats.std + 1e-8)
        with tf.GradientTape() as tape:
            features, _ = self.core.sequence(self.normalize(obs), state0, starts)
            features = flat(features)
            params = self.policy(features)
            logp = self.policy.log_prob(params, actions)
            ratio = tf.exp(logp - old_logp)
            kl = losses.mean(self.policy.kl(old_params, log_std, params), weight)
            if c.trust_region == "clip":
                policy_loss = losses.clipped_surrogate(ratio, adv, c.clip_ratio, weight)
            else:
                cutoff = c.kl_cutoff_factor * c.kl_target
                policy_loss = -losses.mean(ratio * adv, weight) + self.beta * kl
                policy_loss += c.kl_cutoff_coef * tf.square(tf.maximum(0.0, kl - cutoff))
            value = self.value(features)
            value_loss = losses.value_loss(value, old_values, returns, c.value_clip, weight)
            entropy = losses.mean(self.policy.entropy(params), weight)
            loss = policy_loss + c.value_coef * value_loss - c.entropy_coef * entropy
        grads = self.sync.mean(tape.gradient(loss, self.optimizer.variables_), Key.GRADIENTS)
        norm = self.optimizer.apply(grads)
        clip_frac = losses.mean(tf.cast(tf.abs(ratio - 1.0) > c.clip_ratio, tf.float32), weight)
        metrics = {
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "kl": kl,
            "clip_fraction": clip_frac,
            "grad_norm": norm,
            "loss": loss,
        }
        return metrics, tf.reduce_max(tf.abs(ratio - 1.0))

    # ------------------------------------------------------------------ acting
    def act(self, obs, state, starts):
        """Deterministic actions for raw observations ``[B, obs]`` (clipped to the action space
        for Box) and the core's next state: ``state [B, S]`` is the core's state before this
        step, ``starts [B]`` marks envs whose episode begins with `obs` (their state is reset)."""
        features, state = self.core(self.normalize(obs), state, starts)
        action = self.policy.mode(self.policy(features))
        if not self.discrete:
            action = tf.clip_by_value(action, self.action_low, self.action_high)
        return action, state

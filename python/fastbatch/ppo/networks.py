"""Policy and value heads as plain `tf.Module`s (checkpointable, exportable).

Both read features, not observations: a core (core.py) turns observations and its per-env
state into features; for the MLP policy the features are the normalised observations.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import tensorflow as tf


class MLP(tf.Module):
    """Dense layers with orthogonal initialisation (output layer scaled by `out_scale`)."""

    def __init__(self, sizes, activation: str, out_scale: float, seed: int, name=None):
        super().__init__(name=name)
        self.activation = tf.nn.tanh if activation == "tanh" else tf.nn.relu
        init = tf.keras.initializers.Orthogonal
        self.weights, self.biases = [], []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            gain = out_scale if i == len(sizes) - 2 else math.sqrt(2.0)
            w = init(gain=gain, seed=seed + i)((a, b))
            self.weights.append(tf.Variable(w, name=f"w{i}"))
            self.biases.append(tf.Variable(tf.zeros(b), name=f"b{i}"))

    def __call__(self, x):
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = tf.matmul(x, w) + b
            if i < len(self.weights) - 1:
                x = self.activation(x)
        return x


class Policy(tf.Module):
    """Categorical (Discrete actions) or diagonal Gaussian with state-independent log-std (Box)."""

    def __init__(
        self, in_size: int, action_space, layers, activation, init_log_std, seed, take=None
    ):
        super().__init__(name="policy")
        self.discrete = hasattr(action_space, "n")
        out = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.action_size = out
        self.take = take
        in_size = in_size if take is None else take[1] - take[0]
        self.net = MLP([in_size, *layers, out], activation, 0.01, seed)
        if not self.discrete:
            self.log_std = tf.Variable(tf.fill([out], float(init_log_std)), name="log_std")

    def __call__(self, features):
        """Logits (Discrete) or means (Box) for a batch of features (``take``: the columns
        [start, stop) this head reads, when the value head has its own torso)."""
        return self.net(_columns(features, self.take))

    def log_prob(self, params, actions):
        if self.discrete:
            return -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=params)
        std = tf.exp(self.log_std)
        z = (actions - params) / std
        return tf.reduce_sum(
            -0.5 * tf.square(z) - self.log_std - 0.5 * math.log(2 * math.pi), axis=-1
        )

    def entropy(self, params):
        if self.discrete:
            p = tf.nn.softmax(params)
            return -tf.reduce_sum(p * tf.nn.log_softmax(params), axis=-1)
        return tf.reduce_sum(self.log_std + 0.5 * math.log(2 * math.pi * math.e)) * tf.ones_like(
            params[:, 0]
        )

    def kl(self, old_params, old_log_std, params):
        """KL(old || new) per sample; `old_log_std` is the Gaussian's log-std at collection."""
        if self.discrete:
            old_logp = tf.nn.log_softmax(old_params)
            return tf.reduce_sum(tf.exp(old_logp) * (old_logp - tf.nn.log_softmax(params)), axis=-1)
        var_old, var_new = tf.exp(2.0 * old_log_std), tf.exp(2.0 * self.log_std)
        terms = (
            self.log_std
            - old_log_std
            + (var_old + tf.square(old_params - params)) / (2.0 * var_new)
            - 0.5
        )
        return tf.reduce_sum(terms, axis=-1)

    def sample(self, params, seed):
        if self.discrete:
            return tf.random.stateless_categorical(params, 1, seed, dtype=tf.int64)[:, 0]
        noise = tf.random.stateless_normal(tf.shape(params), seed)
        return params + tf.exp(self.log_std) * noise

    def mode(self, params):
        return tf.argmax(params, axis=-1) if self.discrete else params


class Value(tf.Module):
    """The state-value estimate of a batch of features."""

    def __init__(self, in_size: int, layers, activation, seed, take=None):
        super().__init__(name="value")
        self.take = take
        in_size = in_size if take is None else take[1] - take[0]
        self.net = MLP([in_size, *layers, 1], activation, 1.0, seed + 100)

    def __call__(self, features):
        return self.net(_columns(features, self.take))[:, 0]


def _columns(features, take):
    return features if take is None else features[:, take[0] : take[1]]

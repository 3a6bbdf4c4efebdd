"""PPO's losses of one minibatch, as means over its samples, optionally weighted.

A weight of 0 leaves a sample out: the rows of agents that sat out a step (rollout.py's
``active``) carry no real transition. ``weight=None`` (every env that is not a batch of agents)
takes plain means, so those runs compute exactly what they did before weights existed.
"""

from __future__ import annotations

import tensorflow as tf


def mean(x, weight=None):
    """The mean of `x` (any shape), over the samples whose `weight` (x's shape) is 1."""
    if weight is None:
        return tf.reduce_mean(x)
    return tf.reduce_sum(x * weight) / tf.maximum(tf.reduce_sum(weight), 1.0)


def variance(x, weight=None):
    """The variance of `x` over the samples whose `weight` is 1."""
    if weight is None:
        return tf.math.reduce_variance(x)
    return mean(tf.square(x - mean(x, weight)), weight)


def clipped_surrogate(ratio, adv, clip_ratio: float, weight=None):
    """The clipped policy loss: -mean(min(r * A, clip(r, 1 - eps, 1 + eps) * A))."""
    clipped = tf.clip_by_value(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio)
    return -mean(tf.minimum(ratio * adv, clipped * adv), weight)


def value_loss(value, old_values, returns, value_clip: float, weight=None):
    """0.5 * mean squared error to the returns; with ``value_clip > 0``, the larger of it and the
    error of the value moved at most `value_clip` from its old one (as CleanRL)."""
    loss = tf.square(value - returns)
    if value_clip > 0:
        moved = old_values + tf.clip_by_value(value - old_values, -value_clip, value_clip)
        loss = tf.maximum(loss, tf.square(moved - returns))
    return 0.5 * mean(loss, weight)

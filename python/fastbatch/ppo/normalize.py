"""Streaming statistics kept in TensorFlow variables (checkpointed with the agent)."""

from __future__ import annotations

import tensorflow as tf


class RunningMeanStd(tf.Module):
    """Mean and variance of a stream of batches (Chan et al.'s parallel update), in float64."""

    def __init__(self, shape, name=None):
        super().__init__(name=name)
        self.mean = tf.Variable(tf.zeros(shape, tf.float64), trainable=False, name="mean")
        self.var = tf.Variable(tf.ones(shape, tf.float64), trainable=False, name="var")
        self.count = tf.Variable(tf.constant(1e-4, tf.float64), trainable=False, name="count")

    def update(self, batch):
        """Folds a batch (leading axis = samples) into the statistics."""
        batch = tf.cast(batch, tf.float64)
        b_mean = tf.reduce_mean(batch, axis=0)
        b_var = tf.math.reduce_variance(batch, axis=0)
        b_count = tf.cast(tf.shape(batch)[0], tf.float64)
        delta = b_mean - self.mean
        total = self.count + b_count
        m2 = (
            self.var * self.count
            + b_var * b_count
            + tf.square(delta) * self.count * b_count / total
        )
        return tf.group(
            self.mean.assign_add(delta * b_count / total),
            self.var.assign(m2 / total),
            self.count.assign(total),
        )

    def normalize(self, x, clip: float):
        out = (tf.cast(x, tf.float64) - self.mean) / tf.sqrt(self.var + 1e-8)
        return tf.cast(tf.clip_by_value(out, -clip, clip), tf.float32)

"""Streaming statistics kept in TensorFlow variables (checkpointed with the agent)."""

from __future__ import annotations

import tensorflow as tf

from .distribute import Key


class RunningMeanStd(tf.Module):
    """Mean and variance of a stream of batches (Chan et al.'s parallel update), in float64."""

    def __init__(self, shape, name=None):
        super().__init__(name=name)
        self.mean = tf.Variable(tf.zeros(shape, tf.float64), trainable=False, name="mean")
        self.var = tf.Variable(tf.ones(shape, tf.float64), trainable=False, name="var")
        self.count = tf.Variable(tf.constant(1e-4, tf.float64), trainable=False, name="count")

    def update(self, batch):
        """Folds a batch (leading axis = samples) into the statistics."""
        return self.fold(moments(batch))

    def update_merged(self, batch, sync, key, weight=None):
        """Folds every worker's batch, in rank order (`sync`: distribute.py), so that every
        worker holds the same statistics; one worker's is `update`. `weight` (``[samples]``,
        0 or 1): only the samples weighing 1 count (see `moments`)."""
        every = sync.gather(moments(batch, weight), key)  # [workers, 2 * size + 1]
        return self.fold_each(every, sync.world_size)

    def fold_each(self, every, workers: int):
        """Folds rows of `moments`, first to last (a graph-time loop over `workers` rows)."""
        op = tf.no_op()
        for w in range(workers):
            with tf.control_dependencies([op]):
                op = self.fold(every[w])
        return op

    def fold(self, packed):
        """Folds one batch's packed moments (see `moments`): Chan et al.'s parallel update."""
        size = (packed.shape[0] - 1) // 2
        b_mean = tf.reshape(packed[:size], self.mean.shape)
        b_var = tf.reshape(packed[size : 2 * size], self.mean.shape)
        b_count = packed[-1]
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


def prepare_observations(obs, obs_rms, normalize: bool, clip: float):
    """What the networks read of raw observations: float32, normalised by `obs_rms` (clipped to
    +-clip) when `normalize`, else uint8 scaled by 1/255 and bool taken as 0/1 (images keep
    their dtype until here). The agent and the exported policy share this rule."""
    if normalize:
        return obs_rms.normalize(obs, clip)
    if obs.dtype == tf.uint8:
        return tf.cast(obs, tf.float32) * (1.0 / 255.0)
    return tf.cast(obs, tf.float32)


def moments(batch, weight=None):
    """A batch's mean and variance over its leading axis and its size, packed into one float64
    vector ``[mean (flat), var (flat), count]`` (what workers exchange). With `weight`
    (``[samples]``, 0 or 1) only the samples weighing 1 count; none at all gives count 0, which
    folds as nothing."""
    batch = tf.cast(batch, tf.float64)
    if weight is None:
        b_mean = tf.reduce_mean(batch, axis=0)
        b_var = tf.math.reduce_variance(batch, axis=0)
        b_count = tf.cast(tf.shape(batch)[0], tf.float64)
    else:
        w = tf.reshape(tf.cast(weight, tf.float64), [-1] + [1] * (batch.shape.rank - 1))
        b_count = tf.reduce_sum(w)
        safe = tf.maximum(b_count, 1.0)
        b_mean = tf.reduce_sum(batch * w, axis=0) / safe
        b_var = tf.reduce_sum(tf.square(batch - b_mean) * w, axis=0) / safe
    return tf.concat([tf.reshape(b_mean, [-1]), tf.reshape(b_var, [-1]), b_count[None]], axis=0)


def scale_rewards(rewards, done, running_return, ret_rms, sync, gamma: float, clip: float):
    """Divides rewards ``[T, N]`` by the running std of the discounted return, clipped to
    +-`clip`. ``running_return [N]`` (float64) carries each env's discounted return across
    rollouts; `ret_rms` folds its values step by step, every worker's batch of step t in rank
    order (`sync`: distribute.py), so all workers scale by the same std."""
    steps = rewards.shape[0]

    def accumulate(t, batches):
        ret = running_return * gamma + tf.cast(rewards[t], tf.float64)
        assign = running_return.assign(tf.where(done[t], tf.zeros_like(ret), ret))
        with tf.control_dependencies([assign]):
            return t + 1, batches.write(t, moments(ret))

    _, batches = tf.while_loop(
        lambda t, _: t < steps,
        accumulate,
        (tf.constant(0), tf.TensorArray(tf.float64, steps)),
    )
    every = sync.gather(batches.stack(), Key.RETURN_MOMENTS)  # [workers, T, 3]

    def fold(t):
        with tf.control_dependencies([ret_rms.fold_each(every[:, t], sync.world_size)]):
            return (t + 1,)

    (done_steps,) = tf.while_loop(lambda t: t < steps, fold, (tf.constant(0),))
    with tf.control_dependencies([done_steps]):
        scale = tf.cast(tf.sqrt(ret_rms.var + 1e-8), tf.float32)
    return tf.clip_by_value(rewards / scale, -clip, clip)

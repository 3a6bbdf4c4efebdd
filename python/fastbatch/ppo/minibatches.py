"""How an update splits its batch into minibatches: each epoch's shuffle, each minibatch's
slice, and the advantage statistics every minibatch is normalised with.

The update's data is ``[S, U, ...]``: minibatches take units along axis 1 (whole env
sequences for a recurrent core, single steps otherwise). Every epoch shuffles the units once
and its minibatches are consecutive slices of ``U // minibatches`` units (a remainder is left
out of that epoch).

Advantages are normalised per minibatch (mean 0, std 1). In a data-parallel run a minibatch
is the union of every worker's k-th minibatch, and its gradient is their mean, so its
advantages are normalised with the statistics of that union: every worker computes the mean
and variance of each of its minibatches for every epoch up front (the shuffles depend only on
the update's counter, the seed and the rank), and one gather per update merges them.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from .distribute import Key


class MeanStd(NamedTuple):
    """Advantage statistics by name: a mean and a std of one shape (``[epochs, minibatches]``
    from `advantage_stats`, one minibatch's scalars after `at`)."""

    mean: tf.Tensor
    std: tf.Tensor

    def at(self, index) -> MeanStd:
        """Both statistics at `index` along their first axis (an epoch, then a minibatch)."""
        return MeanStd(self.mean[index], self.std[index])


def shuffle_orders(update, seed: int, rank: int, epochs: int, units: int):
    """``[epochs, units]`` int32: each epoch's permutation of the units, its own on every
    worker (so a global minibatch does not pair the workers' samples of one (step, env slot))."""
    orders = []
    for epoch in range(epochs):
        key_seed = tf.stack([tf.cast(update, tf.int32), epoch + 104729 * seed + 7919 * rank])
        # Random bits, not floats: XLA's uniform floats differ from the kernel's, its bits do
        # not, so both forms of the update take the same minibatches.
        keys = tf.random.stateless_uniform(
            [units], seed=key_seed, minval=None, maxval=None, dtype=tf.int64
        )
        orders.append(tf.argsort(keys, stable=True))
    return tf.stack(orders)


def take(x, lo, size: int, axis: int):
    """`size` entries of `x` from `lo` along `axis` (a static size: XLA's form)."""
    begin = [lo if a == axis else 0 for a in range(x.shape.rank)]
    return tf.slice(x, tf.stack(begin), [size if a == axis else -1 for a in range(x.shape.rank)])


def advantage_stats(adv, orders, minibatches: int, sync, weight=None):
    """`MeanStd`, each ``[epochs, minibatches]``: the advantages' mean and std for each epoch's
    k-th minibatch, over every worker's (`sync`: distribute.py). `adv` is ``[S, U]``; `orders` is
    `shuffle_orders`' output, or None for one unshuffled minibatch (then ``epochs`` is 1 and
    every epoch reads row 0). `weight` (``[S, U]``, 0 or 1): only the samples weighing 1 count
    (a batch of agents: the steps their agents acted)."""
    groups = _groups(adv, orders, minibatches)
    if weight is None:
        mean = tf.reduce_mean(groups, axis=[1, 3])  # [epochs, minibatches]
        var = tf.reduce_mean(tf.square(groups - mean[:, None, :, None]), axis=[1, 3])
        return merge_moments(mean, var, sync)
    w = _groups(weight, orders, minibatches)
    count = tf.reduce_sum(w, axis=[1, 3])
    mean = tf.reduce_sum(groups * w, axis=[1, 3]) / tf.maximum(count, 1.0)
    m2 = tf.reduce_sum(tf.square(groups - mean[:, None, :, None]) * w, axis=[1, 3])
    every = sync.gather(tf.stack([count, mean, m2]), Key.ADVANTAGES)  # [workers, 3, ...]
    total = tf.maximum(tf.reduce_sum(every[:, 0], axis=0), 1.0)
    union_mean = tf.reduce_sum(every[:, 0] * every[:, 1], axis=0) / total
    spread = tf.reduce_sum(every[:, 0] * tf.square(every[:, 1] - union_mean), axis=0)
    union_var = (tf.reduce_sum(every[:, 2], axis=0) + spread) / total
    return MeanStd(union_mean, tf.sqrt(union_var))


def _groups(x, orders, minibatches: int):
    """``[S, U]`` data as ``[epochs, S, minibatches, size]``: each epoch's minibatches."""
    size = x.shape[1] // minibatches
    if orders is None:
        shuffled = x[None]
    else:
        shuffled = tf.gather(x, orders, axis=1)  # [S, epochs, U]
        shuffled = tf.transpose(shuffled, [1, 0, 2])
    epochs = shuffled.shape[0]
    return tf.reshape(shuffled[:, :, : size * minibatches], [epochs, -1, minibatches, size])


def merge_moments(mean, var, sync) -> MeanStd:
    """The mean and std of the union of equal-sized samples whose
    means and variances the workers hold: the union's variance is the mean of the variances
    plus the variance of the means (computed from every worker's means, centred: no
    cancellation). One worker's are its own, bit for bit."""
    every = sync.gather(tf.stack([mean, var]), Key.ADVANTAGES)  # [workers, 2, ...]
    union_mean = tf.reduce_mean(every[:, 0], axis=0)
    spread = tf.reduce_mean(tf.square(every[:, 0] - union_mean), axis=0)
    union_var = tf.reduce_mean(every[:, 1], axis=0)
    return MeanStd(union_mean, tf.sqrt(union_var + spread))

"""Generalised advantage estimation (Schulman et al. 2016), as BatchPPO's update computes it.

Termination cuts the bootstrap; truncation bootstraps from the value of the episode's final
observation (the envs run in SAME_STEP autoreset mode, so the step after a truncation is the
next episode's first, and its value is not the one to bootstrap from).
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["gae"]


def gae(values, rewards, terminated, truncated, final_values, last_values, gamma, lam):
    """GAE(lambda) advantages and returns ``(adv, adv + values)``, each [T, N]. ``values``,
    ``rewards``, ``terminated``, ``truncated`` and ``final_values`` (the value of the final
    observation of an episode that ended at step t) are [T, N]; ``last_values`` [N] is the value
    of the observation after the last step."""
    T = values.shape[0]
    done = tf.logical_or(terminated, truncated)
    next_values = tf.concat([values[1:], last_values[None]], axis=0)
    next_values = tf.where(truncated, final_values, next_values)
    next_values = tf.where(terminated, tf.zeros_like(next_values), next_values)
    deltas = rewards + gamma * next_values - values
    not_done = 1.0 - tf.cast(done, tf.float32)

    def body(t, running, adv):
        running = deltas[t] + gamma * lam * not_done[t] * running
        return t - 1, running, adv.write(t, running)

    _, _, adv = tf.while_loop(
        lambda t, *_: t >= 0,
        body,
        (tf.constant(T - 1), tf.zeros_like(last_values), tf.TensorArray(tf.float32, T)),
    )
    adv = adv.stack()
    return adv, adv + values

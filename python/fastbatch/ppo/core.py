"""Cores: what turns an env's observations into the features that the policy and value heads
read, with the per-env state that carries memory between steps.

Every core has the same interface, so the agent never asks which one it holds:

- ``initial_state(batch)``: the state ``[batch, state_size]`` of an env whose episode starts;
- ``__call__(obs, state, starts)``: one step for a batch: ``obs [B, D]``, ``state [B, S]`` and
  ``starts [B]`` (bool: the episode begins at this observation, so the state is reset to the
  initial state before the step) give ``(features [B, F], next_state [B, S])``;
- ``sequence(obs, state, starts)``: the same over a time axis, ``obs [T, B, D]``,
  ``starts [T, B]`` from the state ``[B, S]`` before step 0, giving features and the state after
  every step, both ``[T, B, ...]``. Gradients flow through the whole sequence (truncated
  backpropagation through time: the state before step 0 is an input, not a function of the
  weights).

`FeedForward` is the MLP policy's core: no state (``state_size`` 0), the observations are the
features. `GRU` is a gated recurrent unit (Cho et al. 2014, the "reset after" form that cuDNN
and PyTorch use): z = sigmoid(x Wz + h Uz + bz), r = sigmoid(x Wr + h Ur + br),
n = tanh(x Wn + bn + r * (h Un + cn)), h' = (1 - z) * n + z * h. Its features are its state.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["GRU", "FeedForward", "make_core"]


class FeedForward:
    """No memory: features are the observations. A plain object, not a `tf.Module`, so that
    an MLP agent's checkpoint holds exactly what it held before cores existed."""

    state_size = 0

    def __init__(self, obs_size: int):
        self.feature_size = obs_size

    def initial_state(self, batch):
        return tf.zeros([batch, 0])

    def __call__(self, obs, state, starts):
        del starts
        return obs, state

    def sequence(self, obs, state, starts):
        del state, starts
        shape = tf.shape(obs)
        return obs, tf.zeros([shape[0], shape[1], 0])


class GRU(tf.Module):
    """One GRU layer of `size` units over observations of `obs_size` (orthogonal weights, zero
    biases, zero initial state)."""

    def __init__(self, obs_size: int, size: int, seed: int):
        super().__init__(name="gru")
        self.state_size = self.feature_size = size
        init = tf.keras.initializers.Orthogonal
        self.kernel = tf.Variable(init(seed=seed + 200)((obs_size, 3 * size)), name="kernel")
        self.recurrent = tf.Variable(init(seed=seed + 201)((size, 3 * size)), name="recurrent")
        self.bias = tf.Variable(tf.zeros(3 * size), name="bias")
        self.recurrent_bias = tf.Variable(tf.zeros(3 * size), name="recurrent_bias")

    def initial_state(self, batch):
        return tf.zeros([batch, self.state_size])

    def _step(self, x_proj, state, starts):
        """One step from the input projection ``x W + b`` ``[B, 3H]``."""
        size = self.state_size
        h = tf.where(starts[:, None], tf.zeros_like(state), state)
        h_proj = tf.matmul(h, self.recurrent) + self.recurrent_bias
        gates = tf.sigmoid(x_proj[:, : 2 * size] + h_proj[:, : 2 * size])
        z, r = gates[:, :size], gates[:, size:]
        n = tf.tanh(x_proj[:, 2 * size :] + r * h_proj[:, 2 * size :])
        return n + z * (h - n)

    def __call__(self, obs, state, starts):
        h = self._step(tf.matmul(obs, self.kernel) + self.bias, state, starts)
        return h, h

    def sequence(self, obs, state, starts):
        shape = tf.shape(obs)
        steps, batch = shape[0], shape[1]
        # The input projection of every step in one matmul; only h U stays in the loop.
        flat = tf.reshape(obs, [steps * batch, obs.shape[-1]])
        x_proj = tf.reshape(tf.matmul(flat, self.kernel) + self.bias, [steps, batch, -1])

        def body(t, h, out):
            h = self._step(x_proj[t], h, starts[t])
            return t + 1, h, out.write(t, h)

        _, _, out = tf.while_loop(
            lambda t, *_: t < steps,
            body,
            (tf.constant(0), state, tf.TensorArray(tf.float32, steps)),
        )
        states = out.stack()
        states.set_shape([None, None, self.state_size])
        return states, states


def make_core(kind: str, obs_size: int, size: int, seed: int):
    """The core a config names: 'mlp' (FeedForward) or 'gru'."""
    return GRU(obs_size, size, seed) if kind == "gru" else FeedForward(obs_size)

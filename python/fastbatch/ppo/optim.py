"""The optimiser of BatchPPO: Adam with global-norm gradient clipping, checkpointed as variables."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["Adam"]


class Adam(tf.Module):
    """Adam with global-norm gradient clipping, as variables the checkpoint carries."""

    def __init__(self, variables, learning_rate: float, max_grad_norm: float):
        super().__init__(name="adam")
        self.variables_ = list(variables)
        self.lr = tf.Variable(learning_rate, trainable=False, dtype=tf.float32, name="lr")
        self.max_grad_norm = max_grad_norm
        self.m = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.variables_]
        self.v = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.variables_]
        self.t = tf.Variable(0.0, trainable=False, name="t")

    def apply(self, grads):
        """One clipped Adam step. Each variable is updated by TensorFlow's fused Adam kernel
        (m, v and the variable in one op: var -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m /
        (sqrt(v) + eps)), which cut the optimiser's share of a minibatch step by several ops
        per variable."""
        grads, norm = tf.clip_by_global_norm(grads, self.max_grad_norm)
        t = self.t.assign_add(1.0)
        b1, b2, eps = 0.9, 0.999, 1e-5
        b1_power, b2_power = tf.pow(b1, t), tf.pow(b2, t)
        for var, g, m, v in zip(self.variables_, grads, self.m, self.v, strict=True):
            tf.raw_ops.ResourceApplyAdam(
                var=var.handle,
                m=m.handle,
                v=v.handle,
                beta1_power=b1_power,
                beta2_power=b2_power,
                lr=self.lr,
                beta1=b1,
                beta2=b2,
                epsilon=eps,
                grad=g,
                use_locking=False,
            )
        return norm

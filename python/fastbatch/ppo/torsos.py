"""Convolutional torsos: what turns an image observation into a feature vector, ahead of the
core (core.py), which then reads features as it reads a vector observation.

A torso takes float images ``[B, *obs_shape]`` in the env's layout (already scaled: x/255 for
uint8, 0/1 for bool, see `Agent.normalize`) and returns ``[B, feature_size]``. Channel-first
images are transposed to TensorFlow's NHWC inside (a stack of colour frames, rank 4, with its
frames' channels joined), so the env's layout never matters outside.
Weights are orthogonal with gain sqrt(2) and zero biases, as CleanRL's ``layer_init`` does.
A torso computes in its ``dtype``: float32, or bfloat16 (``cnn_dtype``), where the images and
each weight are cast to bfloat16 at the call and the features cast back to float32: the
variables, their gradients and the optimiser stay float32, as in mixed-precision training.

- `NatureCNN` (Mnih et al. 2015, DQN; CleanRL's ``ppo_atari.py``): conv 32 8x8 stride 4, conv 64
  4x4 stride 2, conv 64 3x3 stride 1, a 512-unit layer, ReLU after each. Needs 36x36 or more.
- `ImpalaCNN` (Espeholt et al. 2018): 3 stages of 16, 32, 32 channels, each a 3x3 conv, a 3x3
  max-pool of stride 2 and 2 residual blocks (ReLU, conv, ReLU, conv, plus the input), then
  ReLU and a 256-unit layer.
- `SmallCNN` (Young & Tian 2019, MinAtar's network): one 3x3 conv of 16 filters (stride 1), a
  128-unit layer, ReLU after each: for small inputs such as MinAtar's 10x10.
"""

from __future__ import annotations

import math

import tensorflow as tf

from fastbatch import cpu

from .config import CNN_DTYPES, check_cnn_dtype

__all__ = [
    "CNNS",
    "CNN_DTYPES",
    "Encoded",
    "ImpalaCNN",
    "NatureCNN",
    "SmallCNN",
    "bfloat16_is_native",
    "image_layout",
    "make_torso",
]

_GAIN = math.sqrt(2.0)


def bfloat16_is_native(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes bfloat16 dot products itself (the x86 flags avx512_bf16 or
    amx_bf16), which oneDNN then uses; elsewhere bfloat16 is converted in software. Either flag
    switched off by FASTBATCH_DISABLE_CPU_FEATURES counts as absent (fastbatch.cpu)."""
    return cpu.has("avx512_bf16", cpuinfo) or cpu.has("amx_bf16", cpuinfo)


def resolve_dtype(name: str) -> tf.DType:
    """The dtype `name` (one of CNN_DTYPES) gives: 'auto' is bfloat16 where the CPU has it."""
    check_cnn_dtype(name)
    if name == "auto":
        name = "bfloat16" if bfloat16_is_native() else "float32"
    return tf.dtypes.as_dtype(name)


def image_layout(shape: tuple[int, ...], channels: str) -> tuple[int, int, int, str]:
    """(height, width, channels, layout) of an image observation of `shape`: rank 3, or rank 4
    for a stack of frames (fastbatch's ``frame_stack`` over colour frames: ``(k, H, W, C)``, or
    ``(k, C, H, W)`` with ``channels="first"``), whose frames' channels are then joined, frame
    after frame, as DrQ stacks them. ``channels`` "first", "last" or "auto" (rank 3: the shorter of
    the first and last axes, ties last; rank 4: last). ``layout`` is "first", "last",
    "stacked_first" or "stacked_last"."""
    if len(shape) == 4:
        if channels == "first":
            return shape[2], shape[3], shape[0] * shape[1], "stacked_first"
        return shape[1], shape[2], shape[0] * shape[3], "stacked_last"
    if len(shape) != 3:
        raise ValueError(f"an image observation has rank 3 (or 4, stacked frames), got {shape}")
    first = channels == "first" or (channels == "auto" and shape[0] < shape[2])
    if first:
        return shape[1], shape[2], shape[0], "first"
    return shape[0], shape[1], shape[2], "last"


def _nhwc(images, layout: str, channels: int):
    """`images` (a batch) as NHWC, with a stack's frames' channels joined."""
    if layout == "first":
        return tf.transpose(images, [0, 2, 3, 1])
    if layout == "last":
        return images
    order = [0, 3, 4, 1, 2] if layout == "stacked_first" else [0, 2, 3, 1, 4]
    x = tf.transpose(images, order)  # N, H, W, k, C
    return tf.reshape(x, tf.concat([tf.shape(x)[:3], [channels]], 0))


class _Conv(tf.Module):
    def __init__(self, in_channels, out_channels, kernel, stride, padding, seed, name):
        super().__init__(name=name)
        init = tf.keras.initializers.Orthogonal(gain=_GAIN, seed=seed)
        self.kernel = tf.Variable(init((kernel, kernel, in_channels, out_channels)), name="kernel")
        self.bias = tf.Variable(tf.zeros(out_channels), name="bias")
        self.stride, self.padding = stride, padding

    def __call__(self, x):
        kernel, bias = (tf.cast(v, x.dtype) for v in (self.kernel, self.bias))
        return tf.nn.conv2d(x, kernel, self.stride, self.padding) + bias


class _Dense(tf.Module):
    def __init__(self, in_size, out_size, seed, name):
        super().__init__(name=name)
        init = tf.keras.initializers.Orthogonal(gain=_GAIN, seed=seed)
        self.weights = tf.Variable(init((in_size, out_size)), name="w")
        self.bias = tf.Variable(tf.zeros(out_size), name="b")

    def __call__(self, x):
        return tf.matmul(x, tf.cast(self.weights, x.dtype)) + tf.cast(self.bias, x.dtype)


class _Torso(tf.Module):
    """The layout handling every torso shares; subclasses define `_features(nhwc)`."""

    def __init__(self, layout, name, dtype=tf.float32):
        super().__init__(name=name)
        self.height, self.width, self.channels, self.layout = layout
        self.dtype = tf.dtypes.as_dtype(dtype)

    def __call__(self, images):
        x = _nhwc(images, self.layout, self.channels)
        return tf.cast(self._features(tf.cast(x, self.dtype)), tf.float32)


def _valid(size: int, kernel: int, stride: int) -> int:
    return (size - kernel) // stride + 1


class NatureCNN(_Torso):
    feature_size = 512

    def __init__(self, layout, seed: int, dtype=tf.float32):
        super().__init__(layout, "nature_cnn", dtype)
        h, w = self.height, self.width
        for kernel, stride in ((8, 4), (4, 2), (3, 1)):
            h, w = _valid(h, kernel, stride), _valid(w, kernel, stride)
        if h < 1 or w < 1:
            raise ValueError(
                f"cnn='nature' needs images of 36x36 or more, got {self.height}x{self.width}: "
                "use cnn='small' (or 'impala')"
            )
        self.convs = [
            _Conv(self.channels, 32, 8, 4, "VALID", seed + 300, "conv0"),
            _Conv(32, 64, 4, 2, "VALID", seed + 301, "conv1"),
            _Conv(64, 64, 3, 1, "VALID", seed + 302, "conv2"),
        ]
        self.dense = _Dense(h * w * 64, self.feature_size, seed + 303, "dense")

    def _features(self, x):
        for conv in self.convs:
            x = tf.nn.relu(conv(x))
        return tf.nn.relu(self.dense(tf.reshape(x, [tf.shape(x)[0], -1])))


class ImpalaCNN(_Torso):
    feature_size = 256

    def __init__(self, layout, seed: int, dtype=tf.float32):
        super().__init__(layout, "impala_cnn", dtype)
        h, w, c = self.height, self.width, self.channels
        self.stages = []
        for k, depth in enumerate((16, 32, 32)):
            base = seed + 310 + 5 * k
            stage = {
                "conv": _Conv(c, depth, 3, 1, "SAME", base, f"stage{k}_conv"),
                "blocks": [
                    (
                        _Conv(depth, depth, 3, 1, "SAME", base + 1 + 2 * b, f"stage{k}_res{b}a"),
                        _Conv(depth, depth, 3, 1, "SAME", base + 2 + 2 * b, f"stage{k}_res{b}b"),
                    )
                    for b in range(2)
                ],
            }
            self.stages.append(stage)
            h, w, c = math.ceil(h / 2), math.ceil(w / 2), depth
        self.dense = _Dense(h * w * c, self.feature_size, seed + 330, "dense")

    def _features(self, x):
        for stage in self.stages:
            x = stage["conv"](x)
            x = tf.nn.max_pool2d(x, 3, 2, "SAME")
            for first, second in stage["blocks"]:
                x = x + second(tf.nn.relu(first(tf.nn.relu(x))))
        x = tf.nn.relu(x)
        return tf.nn.relu(self.dense(tf.reshape(x, [tf.shape(x)[0], -1])))


class SmallCNN(_Torso):
    feature_size = 128

    def __init__(self, layout, seed: int, dtype=tf.float32):
        super().__init__(layout, "small_cnn", dtype)
        if self.height < 3 or self.width < 3:
            raise ValueError(
                f"cnn='small' needs images of 3x3 or more, got {self.height}x{self.width}"
            )
        self.conv = _Conv(self.channels, 16, 3, 1, "VALID", seed + 340, "conv")
        cells = (self.height - 2) * (self.width - 2) * 16
        self.dense = _Dense(cells, self.feature_size, seed + 341, "dense")

    def _features(self, x):
        x = tf.nn.relu(self.conv(x))
        return tf.nn.relu(self.dense(tf.reshape(x, [tf.shape(x)[0], -1])))


CNNS = {"nature": NatureCNN, "impala": ImpalaCNN, "small": SmallCNN}


def make_torso(
    kind: str, shape: tuple[int, ...], channels: str, seed: int, dtype: str = "float32"
) -> _Torso:
    """The torso `kind` names ("auto": nature for images of 36x36 and more, small below) for
    image observations of `shape`, computing in `dtype` (one of CNN_DTYPES)."""
    layout = image_layout(shape, channels)
    if kind == "auto":
        kind = "nature" if min(layout[0], layout[1]) >= 36 else "small"
    return CNNS[kind](layout, seed, resolve_dtype(dtype))


class Encoded(tf.Module):
    """A core over a torso's features: the core interface of core.py (``initial_state``,
    ``__call__``, ``sequence``) for image observations. ``torsos`` is one torso (shared by the
    policy and value heads) or two (the policy's, then the value's: the features are both
    torsos' features side by side, and each head reads its half)."""

    def __init__(self, torsos, core):
        super().__init__(name="encoded")
        self.torsos = list(torsos)
        self.core = core
        self.state_size = core.state_size
        self.feature_size = core.feature_size

    def encode(self, images):
        """Features ``[B, F]`` of images ``[B, *obs_shape]``."""
        parts = [torso(images) for torso in self.torsos]
        return parts[0] if len(parts) == 1 else tf.concat(parts, axis=-1)

    def initial_state(self, batch):
        return self.core.initial_state(batch)

    def __call__(self, obs, state, starts):
        return self.core(self.encode(obs), state, starts)

    def sequence(self, obs, state, starts):
        shape = tf.shape(obs)
        flat = tf.reshape(obs, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))
        features = self.encode(flat)
        features = tf.reshape(features, [shape[0], shape[1], features.shape[-1]])
        return self.core.sequence(features, state, starts)

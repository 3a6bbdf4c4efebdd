"""The rollout op: compiled on first use against the installed TensorFlow, cached, optional.

`load()` returns the loaded op library, or None (with one logged warning saying why) when it
cannot be built or loaded; the trainer then steps the env through `tf.numpy_function`.
Set FASTBATCH_TF_OP=0 to skip the op. The library is cached per TensorFlow version, fastbatch
version and source under $XDG_CACHE_HOME/fastbatch (default ~/.cache/fastbatch).
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import tensorflow as tf

import fastbatch
from fastbatch._compile import compile_shared

_SOURCE = Path(__file__).with_name("fastbatch_tf_op.cc")
_LOG = logging.getLogger("fastbatch")
_loaded: dict[str, object] = {}


def _cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    digest = hashlib.sha256(_SOURCE.read_bytes()).hexdigest()[:12]
    return base / "fastbatch" / f"tf-{tf.__version__}-fb-{fastbatch.__version__}-{digest}"


def build() -> Path:
    """Compiles the op library if it is not cached; returns its path. Raises on failure."""
    flags = [str(_SOURCE), *tf.sysconfig.get_compile_flags(), *tf.sysconfig.get_link_flags()]
    return compile_shared(_cache_dir() / "fastbatch_tf_op.so", flags, "the rollout op")


def load():
    """The op library, or None when it is switched off or cannot be built (logged once)."""
    if os.environ.get("FASTBATCH_TF_OP", "1") == "0":
        return None
    if "op" not in _loaded:
        try:
            _loaded["op"] = tf.load_op_library(str(build()))
        except Exception as exc:  # the numpy_function path still works
            _LOG.warning(
                "fastbatch: the TensorFlow rollout op is unavailable (%s); stepping envs "
                "through tf.numpy_function instead",
                exc,
            )
            _loaded["op"] = None
    return _loaded["op"]

"""The rollout op: a prebuilt TensorFlow op library beside the extension, optional.

The library (``fastbatch_tf_op.so`` next to ``fastbatch._core``, built from
src/cpp/tf_op/rollout_op.cc with fastbatch) uses only TensorFlow's stable C API, so the one
binary loads into every supported TensorFlow (2.16 to 2.21) and nothing is compiled at run time.
`load()` returns the loaded op library, or None when it is switched off or cannot be loaded (one
logged warning naming the TensorFlow version, the path and the reason); the trainer then steps
the env through `tf.numpy_function`. Set FASTBATCH_TF_OP=0 to skip the op (no warning).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import tensorflow as tf

from fastbatch._build_info import package_dir

_LOG = logging.getLogger("fastbatch")
_loaded: dict[str, object] = {}  # by library path: the op library, or None once it failed


def library_path() -> Path:
    """Where the prebuilt op library is installed: beside the extension."""
    return package_dir() / "fastbatch_tf_op.so"


def load():
    """The op library, or None when it is switched off or does not load (logged once a path)."""
    if os.environ.get("FASTBATCH_TF_OP", "1") == "0":
        return None
    path = library_path()
    key = str(path)
    if key not in _loaded:
        try:
            if not path.is_file():
                raise FileNotFoundError("no such file")
            _loaded[key] = tf.load_op_library(key)
        except Exception as exc:  # the numpy_function path still works
            _LOG.warning(
                "fastbatch: the TensorFlow rollout op %s does not load into TensorFlow %s (%s); "
                "stepping envs through tf.numpy_function instead",
                path,
                tf.__version__,
                exc,
            )
            _loaded[key] = None
    return _loaded[key]

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
import shutil
import subprocess
import tempfile
from pathlib import Path

import tensorflow as tf

import fastbatch

_SOURCE = Path(__file__).with_name("fastbatch_tf_op.cc")
_LOG = logging.getLogger("fastbatch")
_loaded: dict[str, object] = {}


def _cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    digest = hashlib.sha256(_SOURCE.read_bytes()).hexdigest()[:12]
    return base / "fastbatch" / f"tf-{tf.__version__}-fb-{fastbatch.__version__}-{digest}"


def build() -> Path:
    """Compiles the op library if it is not cached; returns its path. Raises on failure."""
    target = _cache_dir() / "fastbatch_tf_op.so"
    if target.exists():
        return target
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        raise RuntimeError("no C++ compiler found (set CXX)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".so", delete=False) as tmp:
        partial = Path(tmp.name)
    cmd = [
        compiler,
        "-std=c++17",
        "-O2",
        "-shared",
        "-fPIC",
        str(_SOURCE),
        "-o",
        str(partial),
        *tf.sysconfig.get_compile_flags(),
        *tf.sysconfig.get_link_flags(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"compiling the rollout op failed:\n{done.stderr[-2000:]}")
    os.replace(partial, target)  # atomic: concurrent builders agree on one file
    return target


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

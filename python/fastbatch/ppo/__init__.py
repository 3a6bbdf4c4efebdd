"""BatchPPO in TensorFlow 2 over fastbatch vector envs (imports TensorFlow).

from fastbatch.ppo import resolve, train
result = train(resolve("cartpole"), "runs/cartpole")
"""

import os
import sys

# TensorFlow's oneDNN graph rewrites cost more than they save on these small networks: with
# them off, in-graph collection was ~20% and an update ~10% faster (bench/ppo_collect.py). The
# switch is read when TensorFlow is first imported, so it only applies if this package is
# imported first and TF_ENABLE_ONEDNN_OPTS is not set already.
if "tensorflow" not in sys.modules:
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from .config import PPOConfig
from .export import evaluate_saved
from .presets import PRESETS, resolve
from .train import train

__all__ = ["PRESETS", "PPOConfig", "evaluate_saved", "resolve", "train"]

"""BatchPPO in TensorFlow 2 over fastbatch vector envs (imports TensorFlow).

    from fastbatch.ppo import resolve, train
    result = train(resolve("cartpole"), "runs/cartpole")
"""

from .config import PRESETS, PPOConfig, resolve
from .train import evaluate_saved, train

__all__ = ["PPOConfig", "PRESETS", "evaluate_saved", "resolve", "train"]

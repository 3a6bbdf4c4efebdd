"""BatchPPO in TensorFlow 2 over fastbatch vector envs (imports TensorFlow).

from fastbatch.ppo import resolve, train
result = train(resolve("cartpole"), "runs/cartpole")
"""

from .config import PPOConfig
from .export import evaluate_saved
from .presets import PRESETS, resolve
from .train import train

__all__ = ["PRESETS", "PPOConfig", "evaluate_saved", "resolve", "train"]

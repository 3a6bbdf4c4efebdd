"""The native backend: a batch of C++ envs stepped by the C++ worker pool.

`vector` is `NativeVectorEnv` (over `_core._VectorPool`) and `RolloutBinding`; `attrs` answers
gymnasium's `get_attr`/`call`/`render` from the env's spec; `single` is one native env behind
gymnasium's single-env API (what ``gymnasium.make("fastbatch/<id>")`` returns).
"""

from fastbatch.native.vector import NativeVectorEnv, RolloutBinding

__all__ = ["NativeVectorEnv", "RolloutBinding"]

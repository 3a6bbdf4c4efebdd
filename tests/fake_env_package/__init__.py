"""A stand-in for an env package that registers its ids on import, as ale_py ("ALE/...") and
minigrid do: importing it registers the "FakeNS" namespace, with a string entry point into the
package. A worker process never imports it by itself (unless a factory from it brings it along)."""

import gymnasium
import numpy as np

gymnasium.register(
    id="FakeNS/Space-v0",
    entry_point="tests.fake_env_package.envs:FakeSpaceEnv",
    max_episode_steps=4,
    kwargs={"marker": np.arange(3)},  # an array: its spec's == does not give a bool
)


def make_space_env():
    """A factory pickled by reference: unpickling it imports this package in the worker, which
    then registers the namespace itself before the caller's registry is installed there."""
    return gymnasium.make("FakeNS/Space-v0")

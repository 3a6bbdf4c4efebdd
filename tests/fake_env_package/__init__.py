"""A stand-in for an env package that registers its ids on import, as ale_py ("ALE/...") and
minigrid do: importing it registers the "FakeNS" namespace, with a string entry point into the
package. A worker process never imports it by itself."""

import gymnasium

gymnasium.register(
    id="FakeNS/Space-v0",
    entry_point="tests.fake_env_package.envs:FakeSpaceEnv",
    max_episode_steps=4,
)

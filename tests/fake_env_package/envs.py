"""The fake env package's env (see __init__.py)."""

from gymnasium import spaces

from tests.space_envs import SpaceEnv


class FakeSpaceEnv(SpaceEnv):
    def __init__(self, render_mode=None, marker=None):
        super().__init__(spaces.Dict(a=spaces.Discrete(3), b=spaces.MultiBinary(2)), length=10)
        self.render_mode = render_mode
        self.marker = marker

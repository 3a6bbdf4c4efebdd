"""Registration as a plugin author meets it (fastbatch.registration, fastbatch.plugins): limits
and spaces that depend on params, through fastbatch and gymnasium alike; re-registration with
new defaults; ids a library exports twice; errors that name the env."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest

import fastbatch
from tests.native_builds import mistake_builder

pytestmark = pytest.mark.engine

SOURCE = Path(__file__).parent / "plugins" / "param_envs.cc"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """library(mistake=0) -> the path of param_envs.cc built with -DMISTAKE=mistake."""
    return mistake_builder(tmp_path_factory, SOURCE)


@pytest.fixture
def grid(library):
    fastbatch.register_native_env("Grid-v0", library(), replace=True)
    return "Grid-v0"


def steps_to_truncation(env, limit_guess: int) -> int:
    """Steps of env 0's first episode until it is truncated (the envs never terminate)."""
    env.reset(seed=0)
    actions = np.zeros(env.num_envs, dtype=np.int64)
    for t in range(1, limit_guess + 2):
        _, _, terminated, truncated, _ = env.step(actions)
        assert not terminated[0]
        if truncated[0]:
            return t
    return -1


@pytest.mark.parametrize("size", [4, 12])
def test_a_limit_that_depends_on_params_is_applied_and_reported_everywhere(grid, size):
    limit = 4 * size * size  # 256 at the default size 8
    assert gymnasium.spec(f"fastbatch/{grid}").max_episode_steps is None  # no fixed limit
    env = fastbatch.make(grid, 2, size=size)
    assert env.time_limit == limit and env.get_attr("spec")[0].max_episode_steps == limit
    assert steps_to_truncation(env, limit) == limit
    vec = gymnasium.make_vec(
        f"fastbatch/{grid}", 2, vectorization_mode="vector_entry_point", size=size
    )
    assert (
        vec.spec.max_episode_steps == limit and vec.get_attr("spec")[0].max_episode_steps == limit
    )
    assert steps_to_truncation(vec, limit) == limit
    single = gymnasium.make(f"fastbatch/{grid}", size=size)
    assert single.spec.max_episode_steps == limit
    single.reset(seed=0)
    for t in range(1, limit + 1):
        _, _, terminated, truncated, _ = single.step(0)
        assert not terminated and truncated == (t == limit)
    for made in (env, vec, single):
        made.close()


def test_a_limit_given_to_make_is_the_one_reported():
    env = fastbatch.make("CartPole-v1", 2, max_episode_steps=33)
    assert env.time_limit == 33 and env.get_attr("spec")[0].max_episode_steps == 33
    vec = gymnasium.make_vec(
        "fastbatch/CartPole-v1", 2, vectorization_mode="vector_entry_point", max_episode_steps=33
    )
    assert vec.spec.max_episode_steps == 33 and vec.time_limit == 33
    # A fixed limit stays registered with gymnasium, so gymnasium.make wraps it as it always has.
    assert gymnasium.spec("fastbatch/CartPole-v1").max_episode_steps == 500
    env.close()
    vec.close()


def test_re_registering_with_new_defaults_refreshes_the_spec(grid, library):
    fastbatch.register_native_env(grid, library(), replace=True, size=5)
    spec = fastbatch.spec(grid)
    assert spec.observation_space.shape == (3, 5, 5) and spec.max_episode_steps == 100
    assert spec.params["size"] == 5
    env = fastbatch.make(grid, 1)
    assert env.single_observation_space == spec.observation_space and env.time_limit == 100
    env.close()
    fastbatch.register_native_env(grid, library(), replace=True)
    assert fastbatch.spec(grid).observation_space.shape == (3, 8, 8)
    assert fastbatch.spec(grid).max_episode_steps == 256


def test_a_library_exporting_one_id_twice_is_refused_naming_both(library):
    with pytest.raises(fastbatch.PluginError, match=r"two envs with the id 'Grid-v0' \(tables 0"):
        fastbatch.register_native_env(None, library(1), replace=True)


@pytest.mark.parametrize(
    "mistake, field",
    [(2, "param 'size': the default is outside its range"), (3, "param 'look'")],
)
def test_a_bad_param_default_names_the_env_and_the_field(library, mistake, field):
    with pytest.raises(fastbatch.PluginError, match=f"Grid.*{field}"):
        fastbatch.register_native_env(None, library(mistake), replace=True)


def test_a_throwing_make_spec_or_constructor_names_the_env(grid, library):
    # std::invalid_argument (the env refuses its params) is a ValueError, any other an EnvError.
    with pytest.raises(ValueError, match="Grid-v0.*size 13 is not a grid") as refused:
        fastbatch.make(grid, 2, size=13)
    assert not isinstance(refused.value, fastbatch.EnvError)
    with pytest.raises(fastbatch.EnvError, match="Grid-v0.*size 11 cannot be built"):
        fastbatch.make(grid, 2, size=11)
    with pytest.raises(fastbatch.PluginError, match="Grid-v0.*size 13 is not a grid"):
        fastbatch.register_native_env(grid, library(), replace=True, size=13)
    assert fastbatch.spec(grid).params["size"] == 8  # the refused registration changed nothing


def test_registration_errors_name_the_env(grid, library):
    with pytest.raises(ValueError, match="Grid-v0 parameter 'size' must be an integer in"):
        fastbatch.register_native_env(grid, library(), replace=True, size=40)
    with pytest.raises(TypeError, match="Grid-v0: max_episode_steps must be an integer >= 0"):
        fastbatch.register_native_env(grid, library(), replace=True, max_episode_steps=1.5)
    with pytest.raises(ValueError, match="already registered as 'Grid-v0'"):
        fastbatch.register_native_env(grid, library())


def test_builtin_params_take_gymnasiums_kwarg_types():
    # gymnasium's CartPole takes sutton_barto_reward as a bool: so do the native envs.
    ours = fastbatch.make("CartPole-v1", 2, sutton_barto_reward=True, seed=3)
    vec = gymnasium.make_vec(
        "fastbatch/CartPole-v1",
        2,
        vectorization_mode="vector_entry_point",
        sutton_barto_reward=True,
    )
    reference = gymnasium.make_vec(
        "CartPole-v1", 2, vectorization_mode="sync", sutton_barto_reward=True
    )
    for env in (ours, vec, reference):
        env.reset(seed=3)
    actions = np.ones(2, dtype=np.int64)
    for _ in range(30):
        expected = reference.step(actions)[1]
        np.testing.assert_array_equal(ours.step(actions)[1], expected)
        np.testing.assert_array_equal(vec.step(actions)[1], expected)
    assert fastbatch.spec("CartPole-v1").params["sutton_barto_reward"] is False
    with pytest.raises(TypeError, match="'sutton_barto_reward' must be a bool, got 1.0"):
        fastbatch.make("CartPole-v1", 2, sutton_barto_reward=1.0)
    for env in (ours, vec, reference):
        env.close()


def test_observation_keys_name_parts_of_the_flat_observation_and_are_checked(monkeypatch):
    from fastbatch.registration import add_native_env
    from fastbatch.registry import REGISTRY

    monkeypatch.setattr(REGISTRY, "_entries", dict(REGISTRY._entries))  # restored afterwards
    env_type = REGISTRY.resolve("CartPole-v1")[0]
    keys = {"cart": (0, 2), "pole": slice(2, 4)}
    spec = add_native_env(env_type, "_KeyedCartPole-v1", observation_keys=keys)
    assert spec.observation_keys == {"cart": slice(0, 2), "pole": slice(2, 4)}
    assert fastbatch.spec("_KeyedCartPole-v1").observation_keys == spec.observation_keys
    assert fastbatch.spec("CartPole-v1").observation_keys == {}
    with pytest.raises(ValueError, match="not within the observation's 4 values"):
        add_native_env(env_type, "_KeyedCartPole-v1", observation_keys={"x": (2, 5)})
    with pytest.raises(TypeError, match="map names to slices"):
        add_native_env(env_type, "_KeyedCartPole-v1", observation_keys={"x": (0.5, 2)})

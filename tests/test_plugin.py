"""Native env plugins: the README's out-of-tree build, registration, and every kind of bad plugin."""

from __future__ import annotations

import ctypes
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import fastbatch
from tests.native_builds import built_plugin

pytestmark = pytest.mark.engine

FAULTY = Path(__file__).parent / "plugins" / "faulty_plugins.cc"


@pytest.fixture
def example_library(readme_example) -> Path:
    """examples/native_env_plugin's PointReacher, built from an empty folder as README.md says."""
    return readme_example["point_reacher"]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """Builds faulty_plugins.cc with -DFAULT=n; returns the library path."""
    folder = tmp_path_factory.mktemp("faulty")

    def build(fault: int) -> Path:
        out = folder / f"libfaulty{fault}.so"
        return built_plugin(FAULTY, out, f"-DFAULT={fault}")

    return build


def test_the_example_plugin_runs_like_a_builtin(example_library):
    fastbatch.register_native_env("PointReacher-v0", example_library, replace=True)
    assert "PointReacher-v0" in fastbatch.list_envs()
    env = fastbatch.make("PointReacher-v0", num_envs=64, seed=0)
    obs, _ = env.reset()
    assert obs.shape == (64, 6) and env.single_action_space.shape == (2,)
    ended = 0
    for _ in range(400):
        obs, _reward, terminated, _truncated, _info = env.step(np.clip(obs[:, 4:6] * 5.0, -1, 1))
        assert env.observation_space.contains(obs)
        ended += int(terminated.sum())
    assert ended > 0  # the greedy controller reaches targets
    again = fastbatch.make("PointReacher-v0", num_envs=64, seed=0)
    np.testing.assert_array_equal(
        again.reset()[0], fastbatch.make("PointReacher-v0", num_envs=64, seed=0).reset()[0]
    )
    vec = gymnasium.make_vec(
        "fastbatch/PointReacher-v0", num_envs=4, vectorization_mode="vector_entry_point"
    )
    assert vec.reset(seed=1)[0].shape == (4, 6)


def test_kwargs_reach_the_plugin_and_unknown_ones_are_refused(example_library):
    fastbatch.register_native_env("PointReacher-v0", example_library, replace=True)
    frozen = fastbatch.make("PointReacher-v0", num_envs=8, seed=0, force_scale=0.0)
    start, _ = frozen.reset()
    start = start.copy()
    moved = frozen.step(np.ones((8, 2), np.float32))[0]
    np.testing.assert_array_equal(moved[:, :2], start[:, :2])  # no force, no motion
    with pytest.raises(TypeError, match="unexpected keyword argument.*'mass'"):
        fastbatch.make("PointReacher-v0", num_envs=2, mass=1.0)
    # Registration defaults apply to every make() of that id.
    fastbatch.register_native_env(
        "FrozenReacher-v0", example_library, replace=True, force_scale=0.0
    )
    env = fastbatch.make("FrozenReacher-v0", num_envs=8, seed=0)
    start, _ = env.reset()
    start = start.copy()
    np.testing.assert_array_equal(env.step(np.ones((8, 2), np.float32))[0][:, :2], start[:, :2])
    with pytest.raises(
        TypeError, match="unexpected keyword argument.*gravity.*accepts: target_radius"
    ):
        fastbatch.register_native_env("Bad-v0", example_library, gravity=1.0)


def test_registering_an_id_twice_needs_replace(example_library):
    fastbatch.register_native_env("Twice-v0", example_library, replace=True)
    with pytest.raises(ValueError, match="already registered.*replace=True"):
        fastbatch.register_native_env("Twice-v0", example_library)
    with pytest.raises(ValueError, match="already registered"):
        fastbatch.register_native_env("CartPole-v1", example_library)
    with pytest.raises(ValueError, match="already registered"):  # its gymnasium id: the same env
        fastbatch.register_native_env("fastbatch/CartPole-v1", example_library)
    fastbatch.register_native_env("Twice-v0", example_library, replace=True)


def test_a_capsule_from_the_authors_own_module_works(example_library):
    lib = ctypes.CDLL(str(example_library))
    lib.fastbatch_get_env_api.restype = ctypes.c_void_p
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new_capsule(lib.fastbatch_get_env_api(), b"fastbatch.env_api", None)
    fastbatch.register_native_env("CapsuleReacher-v0", capsule, replace=True)
    env = fastbatch.make("CapsuleReacher-v0", num_envs=4, seed=0)
    assert env.reset()[0].shape == (4, 6)
    wrong = new_capsule(lib.fastbatch_get_env_api(), b"something.else", None)
    with pytest.raises(fastbatch.PluginError, match="capsule named 'fastbatch.env_api'"):
        fastbatch.register_native_env("WrongCapsule-v0", wrong)


@pytest.mark.parametrize(
    "fault, match",
    [
        (0, "does not export 'fastbatch_get_env_api'"),
        (1, "ABI version 999"),
        (2, "unsupported dtype"),
        (3, "empty shape"),
        (5, "missing a required function"),
        (8, "its table has render but its spec declares no frame"),
        (9, "its spec declares a frame but its table has no render"),
        (10, r"its frame must be 0 x 0 \(none\) or 1 to 16384 pixels a side .*got 0 x 5"),
    ],
)
def test_bad_plugins_raise_plugin_errors(faulty, fault, match):
    with pytest.raises(fastbatch.PluginError, match=match):
        fastbatch.register_native_env(f"Faulty{fault}-v0", faulty(fault))
    assert f"Faulty{fault}-v0" not in fastbatch.list_envs()
    assert issubclass(fastbatch.PluginError, ValueError)


def test_a_table_older_than_version_7_draws_nothing_whatever_it_holds(faulty):
    # A version-6 table whose memory past its fields happens to look like a frame and a render
    # function: read as version 6, it loads, steps and does not render.
    fastbatch.register_native_env("Faulty11-v0", faulty(11), replace=True)
    assert fastbatch.spec("Faulty11-v0").frame is None
    with pytest.raises(ValueError, match="Faulty11-v0 does not render"):
        fastbatch.make("Faulty11-v0", 1, render_mode="rgb_array")
    env = fastbatch.make("Faulty11-v0", 2)
    env.reset(seed=0)
    env.step(np.zeros(2, np.int64))
    with pytest.raises(NotImplementedError, match=r"ABI version 6 \(this came in version 7\)"):
        env._pool.render(0)  # the binding's own refusal, below make's check
    env.close()


def test_an_env_class_without_render_is_named_by_the_binding():
    env = fastbatch.make("_TestCounter-v0", 1)
    with pytest.raises(NotImplementedError, match=r"_TestCounter-v0 .*no `void Render\(uint8_t"):
        env._pool.render(0)
    env.close()


def test_bad_sources_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no plugin library"):
        fastbatch.register_native_env("Missing-v0", tmp_path / "nope.so")
    text = tmp_path / "not_a_library.so"
    text.write_text("hello")
    with pytest.raises(fastbatch.PluginError, match="cannot load plugin library"):
        fastbatch.register_native_env("Text-v0", text)
    with pytest.raises(TypeError, match="path to a shared library or a PyCapsule"):
        fastbatch.register_native_env("Int-v0", 42)
    with pytest.raises(ValueError, match="env_id"):
        fastbatch.register_native_env("_hidden", text)


def test_a_plugin_exception_propagates_like_a_builtins(faulty):
    fastbatch.register_native_env("Throwing-v0", faulty(4), replace=True)
    env = fastbatch.make("Throwing-v0", num_envs=8, num_workers=2)
    env.reset(seed=0)
    env.step(np.zeros(8, dtype=np.int64))
    actions = np.zeros(8, dtype=np.int64)
    actions[5] = 1
    with pytest.raises(fastbatch.EnvError, match="env 5: step refused action 1") as caught:
        env.step(actions)
    assert caught.value.env_index == 5
    env.reset()
    env.step(np.zeros(8, dtype=np.int64))


def test_a_constructor_exception_fails_make_cleanly(faulty):
    fastbatch.register_native_env("NoCreate-v0", faulty(6), replace=True)
    with pytest.raises(fastbatch.EnvError, match="creating envs failed: constructor refused"):
        fastbatch.make("NoCreate-v0", num_envs=4, fail_in_constructor=1)
    assert fastbatch.make("NoCreate-v0", num_envs=4).reset()[0].shape == (4, 3)


def test_a_table_shorter_than_get_state_is_not_read_past_its_end(faulty):
    fastbatch.register_native_env("FullTable-v0", faulty(6), replace=True)
    full = fastbatch.make("FullTable-v0", num_envs=2)
    full.reset(seed=0)
    full.step(np.zeros(2, dtype=np.int64))
    np.testing.assert_array_equal(full.get_env_state(0), [1.0])  # the same env, full table
    fastbatch.register_native_env("ShortTable-v0", faulty(7), replace=True)
    env = fastbatch.make("ShortTable-v0", num_envs=2)
    env.reset(seed=0)
    env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="does not expose its state"):
        env.get_env_state(0)

"""The VectorEnv API of the process backend beyond step and reset, with gymnasium's semantics
(as its tests/vector suite checks SyncVectorEnv and AsyncVectorEnv): ``get_attr``, ``set_attr``,
``call``, ``np_random_seed``, ``render_mode`` and ``render()``, metadata; and ids the caller knows
but a fresh worker would not: registered at run time, or by a package imported in the caller."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import SyncVectorEnv

import fastbatch
from tests.space_envs import SpaceEnv, space_env

DICT = spaces.Dict(a=spaces.Discrete(3), b=spaces.MultiBinary(2))


def _make(env, num_envs=3, **kwargs):
    kwargs.setdefault("num_workers", 2)
    return fastbatch.make(env, num_envs, backend="process", **kwargs)


@pytest.fixture
def registered():
    """Registers gymnasium ids for one test and removes them afterwards."""
    ids = []

    def register(env_id, **kwargs):
        gymnasium.register(env_id, **kwargs)
        ids.append(env_id)

    yield register
    for env_id in ids:
        del gymnasium.registry[env_id]


# ---------------------------------------------------------------------------- get/set/call
@pytest.mark.parametrize("in_parent", [True, False])
def test_set_attr_then_get_attr_in_env_order(in_parent):
    env = _make("CartPole-v1", 4, in_parent=in_parent)
    assert env.get_attr("gravity") == (9.8,) * 4
    env.set_attr("gravity", [9.81, 3.72, 8.87, 1.62])  # before reset, as gymnasium's test does
    assert env.get_attr("gravity") == (9.81, 3.72, 8.87, 1.62)
    env.set_attr("gravity", (1.0, 2.0, 3.0, 4.0))
    assert env.get_attr("gravity") == (1.0, 2.0, 3.0, 4.0)
    env.set_attr("gravity", 5.0)  # one value for every env
    assert env.get_attr("gravity") == (5.0,) * 4
    with pytest.raises(ValueError, match=r"one value per env \(a list or tuple of 4\).*got 3"):
        env.set_attr("gravity", [1.0, 2.0, 3.0])
    env.close()


def test_call_passes_arguments_and_get_attr_calls_methods_as_gymnasium_does():
    env = _make([space_env(DICT)] * 3)
    ref = SyncVectorEnv([space_env(DICT)] * 3)
    assert (
        env.call("scaled", 3, factor=5)
        == ref.call("scaled", 3, factor=5)
        == (("space-env", 15),) * 3
    )
    assert env.get_attr("label") == ref.get_attr("label") == ("space-env",) * 3
    assert env.call("label") == ("space-env",) * 3  # an attribute is returned as it is
    env.reset(seed=0)
    env.set_attr("label", ["x", "y", "z"])
    assert env.call("scaled", 1) == (("x", 2), ("y", 2), ("z", 2))
    env.close()


@pytest.mark.parametrize("in_parent", [True, False])
def test_a_failing_call_raises_the_envs_error_here_and_the_env_goes_on(in_parent):
    env = _make([space_env(DICT)] * 3, in_parent=in_parent)
    env.reset(seed=0)
    with pytest.raises(
        AttributeError, match=r"(?s)env 0: the call raised.*no attribute 'missing'"
    ) as caught:
        env.get_attr("missing")
    assert caught.value.env_index == 0
    with pytest.raises(TypeError, match=r"(?s)env 0:.*scaled\(\) missing 1 required positional"):
        env.get_attr("scaled")  # gymnasium's get_attr calls a method, here without its argument
    with pytest.raises(TypeError, match=r"(?s)env [01]: the call raised.*pickle.*lock"):
        env.get_attr("lock")  # a result that cannot travel (nor be copied) is the call's error
    with pytest.raises(ValueError, match=r"call\('step'\) would bypass the vector env"):
        env.call("step", 0)
    with pytest.raises(TypeError, match="an attribute name must be a str"):
        env.get_attr(3)
    env.action_space.seed(0)
    env.step(env.action_space.sample())  # the env is still usable
    env.close()
    with pytest.raises(fastbatch.ClosedEnvError):
        env.get_attr("label")


def test_calls_wait_for_envs_in_flight_in_async_mode():
    env = _make([space_env(DICT)] * 2, 2, batch_size=1)
    env.reset(seed=0)
    env.send({"a": np.zeros(2, np.int64), "b": np.zeros((2, 2), np.int8)})
    with pytest.raises(fastbatch.AsyncStateError, match="recv"):
        env.get_attr("label")
    env.recv()
    env.recv()
    assert env.get_attr("label") == ("space-env",) * 2
    env.close()


def test_np_random_seed_is_the_tuple_of_the_envs_seeds():
    env = _make("CartPole-v1", 3)
    ref = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")] * 3)
    env.reset(seed=42)
    ref.reset(seed=42)
    assert env.np_random_seed == ref.np_random_seed == (42, 43, 44)
    env.reset(seed=None)  # an unseeded reset keeps the seeds
    ref.reset(seed=None)
    assert env.np_random_seed == (42, 43, 44)
    generators = env.np_random
    assert len(generators) == 3 and isinstance(generators[0], np.random.Generator)
    assert generators[1].bit_generator.state == ref.np_random[1].bit_generator.state
    env.close()


# ---------------------------------------------------------------------------- render
def test_render_mode_goes_to_the_envs_and_render_returns_their_frames():
    env = _make("CartPole-v1", 3, render_mode="rgb_array")
    ref = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1", render_mode="rgb_array")] * 3)
    assert env.render_mode == ref.render_mode == "rgb_array"
    assert env.metadata["render_fps"] == ref.metadata["render_fps"]
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.NEXT_STEP
    env.reset(seed=4)
    ref.reset(seed=4)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    assert data_equivalence(frames, ref.render(), exact=True)
    env.close()
    plain = _make("CartPole-v1", 2)
    assert plain.render_mode is None
    plain.close()


def test_factories_report_their_render_mode_and_metadata():
    env = _make([functools.partial(SpaceEnv, DICT, render_mode="rgb_array")] * 2, 2)
    assert env.render_mode == "rgb_array" and env.metadata["render_fps"] == 7
    env.reset(seed=0)
    assert [f.shape for f in env.render()] == [(3, 4, 3)] * 2
    env.close()


# ---------------------------------------------------------------------------- ids in workers
def _locally_defined_factory():
    return SpaceEnv(DICT, length=3)


def test_ids_registered_at_run_time_work_in_the_workers(registered):
    registered(
        "RunTimeString-v0",
        entry_point="tests.space_envs:SpaceEnv",
        kwargs={"observation_space": DICT},
    )
    registered(
        "RunTimeClass-v0", entry_point=SpaceEnv, kwargs={"observation_space": DICT, "length": 2}
    )

    def closure():  # pickled by value: the worker cannot import it
        return SpaceEnv(spaces.Discrete(4))

    registered("RunTimeClosure-v0", entry_point=closure)
    for env_id in ("RunTimeString-v0", "RunTimeClass-v0", "RunTimeClosure-v0"):
        env = _make(env_id, 2, in_parent=False)
        ref = SyncVectorEnv([lambda env_id=env_id: gymnasium.make(env_id)] * 2)
        assert data_equivalence(env.reset(seed=8)[0], ref.reset(seed=8)[0], exact=True)
        ref.action_space.seed(0)
        for _ in range(5):
            actions = ref.action_space.sample()
            assert data_equivalence(env.step(actions)[0], ref.step(actions)[0], exact=True)
        env.close()
    env = _make("RunTimeString-v0", 2, length=1)  # keyword arguments still reach the env
    env.reset(seed=0)
    assert env.step({"a": np.zeros(2, np.int64), "b": np.zeros((2, 2), np.int8)})[3].all()
    env.close()


def test_ids_of_a_package_that_registers_on_import_work_in_the_workers(capfd):
    from tests.fake_env_package import make_space_env  # registers the FakeNS namespace

    by_id = _make("FakeNS/Space-v0", 2, in_parent=False)
    factories = [functools.partial(gymnasium.make, "FakeNS/Space-v0")] * 2
    by_factory = fastbatch.make(factories, backend="process", num_workers=2, in_parent=False)
    importing = fastbatch.make([make_space_env] * 2, backend="process", in_parent=False)
    ref = SyncVectorEnv(factories)
    for env in (by_id, by_factory, importing):
        assert data_equivalence(env.reset(seed=1)[0], ref.reset(seed=1)[0], exact=True)
        assert env.get_attr("spec")[0].id == "FakeNS/Space-v0"
        np.testing.assert_array_equal(env.get_attr("marker")[1], [0, 1, 2])
        env.close()
    # Importing the package in the worker re-registers its ids; that warning is silenced there.
    assert "Overriding environment" not in capfd.readouterr().err


def test_workers_import_a_callable_entry_points_module_only_to_make_its_env(tmp_path):
    # The caller's registry reaches the workers with callable entry points pickled inside
    # DeferredEntryPoint: a worker that installs it imports their modules only when it makes
    # one of their ids (shimmy's partials would otherwise import shimmy, dm_control and pygame
    # in every worker, and pygame turns a worker's segfault into an abort).
    import subprocess
    import sys

    from fastbatch.process.gym_registry import registry_snapshot

    gymnasium.register("DeferredProbe-v0", entry_point=functools.partial(_probe_env, "CartPole-v1"))
    try:
        (tmp_path / "snapshot.pkl").write_bytes(pickle.dumps(registry_snapshot()))
    finally:
        gymnasium.registry.pop("DeferredProbe-v0")
    script = f"""
import pickle, sys
import gymnasium
from fastbatch.process.gym_registry import install_registry
install_registry(pickle.loads(open({str(tmp_path / "snapshot.pkl")!r}, "rb").read()))
assert "tests.process.test_api" not in sys.modules, "imported at install"
env = gymnasium.make("DeferredProbe-v0")
assert "tests.process.test_api" in sys.modules
print(type(env.unwrapped).__name__)
"""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "CartPoleEnv"


def _probe_env(env_id, **kwargs):
    return gymnasium.make(env_id, **kwargs)

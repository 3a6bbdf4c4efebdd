"""fastbatch.env_packages: the env packages gymnasium does not import by itself, made by their
ids (or named for installing), and a config's plugins and imports loaded once a process."""

from __future__ import annotations

import re
import sys
import types
from importlib import metadata

import gymnasium
import numpy as np
import pytest

import fastbatch
from fastbatch import env_packages
from fastbatch.env_packages import (
    KNOWN_PACKAGES,
    load_env_sources,
    load_plugins,
    register_package_for,
    run_imports,
)

# An id of each known package, as its users write it.
SAMPLE_IDS = {
    "ale-py": "ALE/Pong-v5",
    "minatar": "MinAtar/Breakout-v1",
    "minigrid": "MiniGrid-Empty-5x5-v0",
    "shimmy[dm-control]": "dm_control/humanoid-walk-v0",  # not a native task: shimmy's env
}


def forget_ids(monkeypatch, package) -> None:
    """This process's gymnasium registry without `package`'s ids (restored afterwards)."""
    for name in [n for n in gymnasium.registry if package.owns(n)]:
        monkeypatch.delitem(gymnasium.registry, name)


def package_named(name: str):
    return next(p for p in KNOWN_PACKAGES if p.name == name)


def test_every_known_package_has_a_sample_id():
    assert {p.name for p in KNOWN_PACKAGES} == set(SAMPLE_IDS)
    for package in KNOWN_PACKAGES:
        assert package.owns(SAMPLE_IDS[package.name])
    assert register_package_for("CartPole-v1") is None  # no package's prefix: left to gymnasium


@pytest.mark.no_tsan
def test_a_minatar_id_is_made_in_worker_processes_without_registering_it_first(monkeypatch):
    pytest.importorskip("minatar")
    forget_ids(monkeypatch, package_named("minatar"))
    # The workers are fresh interpreters that never call register_envs: the id reaches them
    # in the caller's registry.
    env = fastbatch.make("MinAtar/Breakout-v1", 2, seed=0, num_workers=2)
    try:
        obs, _ = env.reset()
        assert obs.shape == (2, 10, 10, 4) and obs.dtype == np.bool_
        assert env.single_action_space == gymnasium.spaces.Discrete(3)
        for _ in range(5):
            obs, reward, terminated, _, _ = env.step(np.zeros(2, np.int64))
            assert env.observation_space.contains(obs) and reward.shape == terminated.shape == (2,)
    finally:
        env.close()
    # The ids are registered now: asking again registers nothing twice (gymnasium would warn,
    # and warnings are errors here).
    assert register_package_for("MinAtar/Breakout-v1").name == "minatar"


def test_an_unknown_id_of_an_installed_package_says_so(monkeypatch):
    pytest.importorskip("minatar")
    with pytest.raises(
        fastbatch.UnknownEnvError, match=r"'MinAtar/Nope-v1' .* nor an id of minatar"
    ):
        fastbatch.make("MinAtar/Nope-v1", 2)


@pytest.mark.parametrize("name", sorted(SAMPLE_IDS))
def test_an_id_of_a_package_not_installed_names_what_to_install(monkeypatch, name):
    package = package_named(name)
    forget_ids(monkeypatch, package)
    monkeypatch.setitem(sys.modules, package.module.split(".")[0], None)  # import fails
    monkeypatch.setitem(sys.modules, package.module, None)
    env_id = SAMPLE_IDS[name]
    with pytest.raises(fastbatch.UnknownEnvError, match=re.escape(f"pip install {name}")) as caught:
        # The process backend's path: where fastbatch-atari is installed, a plain make of an
        # ALE id is native (tests/native_atari has that package's own missing-ale-py error).
        fastbatch.make(env_id, 2, backend="process")
    assert repr(env_id) in str(caught.value)
    assert isinstance(caught.value, gymnasium.error.NameNotFound)  # as gymnasium's own is


def test_a_missing_dependency_of_an_installed_package_is_not_reported_as_the_package(
    monkeypatch, tmp_path
):
    (tmp_path / "fb_broken_pkg.py").write_text("import no_such_dependency_fb\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = env_packages.EnvPackage("broken-pkg", "fb_broken_pkg", ("Broken/",))
    monkeypatch.setattr(env_packages, "KNOWN_PACKAGES", (broken,))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_fb"):
        fastbatch.make("Broken/Game-v0", 2)


CALLS: list[str] = []


def register_counter_env() -> None:
    """Registers "EnvPackagesTest/CartPole-v0" (run by run_imports as "module:function")."""
    CALLS.append("register_counter_env")
    gymnasium.register(
        id="EnvPackagesTest/CartPole-v0",
        entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv",
        max_episode_steps=20,
    )


def fail_to_register() -> None:
    raise RuntimeError("no such game")


@pytest.mark.no_tsan
def test_imports_run_once_a_process_and_their_ids_reach_the_workers():
    target = f"{__name__}:register_counter_env"
    run_imports([target])
    run_imports([target])  # a second registration would warn: done once
    assert CALLS == ["register_counter_env"]
    env = fastbatch.make("EnvPackagesTest/CartPole-v0", 2, seed=0, num_workers=2)
    try:
        assert env.reset()[0].shape == (2, 4)
    finally:
        env.close()
    run_imports(["tests.fake_env_package"])  # a module alone: imported, which registers
    assert "FakeNS/Space-v0" in gymnasium.registry


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module_fb", r"import 'no_such_module_fb': ModuleNotFoundError: No module named"),
        (
            f"{__name__}:nothing_here",
            r"import '.*:nothing_here': .* has no function 'nothing_here'",
        ),
        (f"{__name__}:fail_to_register", r"fail_to_register\(\) raised RuntimeError: no such game"),
    ],
)
def test_a_failing_import_names_it(target, message):
    with pytest.raises(ImportError, match=message):
        run_imports([target])
    with pytest.raises(ImportError):  # not marked as done
        run_imports([target])


def test_a_missing_or_broken_plugin_library_is_named(tmp_path):
    missing = tmp_path / "libmissing.so"
    with pytest.raises(fastbatch.PluginError, match=f"plugin '{missing}': no such file"):
        load_plugins([missing])
    junk = tmp_path / "libjunk.so"
    junk.write_bytes(b"not a shared library")
    with pytest.raises(fastbatch.PluginError, match=f"plugin '{junk}': "):
        load_plugins([str(junk)])
    config = types.SimpleNamespace(plugins=(str(missing),), imports=())
    with pytest.raises(fastbatch.PluginError, match="no such file"):
        load_env_sources(config)


class _FakeNativePackage:
    """What a `fastbatch.envs` entry point names: a module's ID_PREFIXES and native_kwargs."""

    ID_PREFIXES = ("FakeNative/",)

    @staticmethod
    def native_kwargs(spec, kwargs):
        return {**kwargs, "seen_by": spec.id}


def test_a_native_package_turns_its_own_ids_kwargs_into_params(monkeypatch):
    ours = metadata.EntryPoint("fake", f"{__name__}:_FakeNativePackage", "fastbatch.envs")
    absent = metadata.EntryPoint("absent", "fb_not_imported_pkg", "fastbatch.envs")
    monkeypatch.setattr(env_packages, "_NATIVE_PACKAGES", (absent, ours))
    kwargs = {"screen_size": (64, 48)}
    game, other = (types.SimpleNamespace(id=i) for i in ("FakeNative/Game-v0", "Other/Game-v0"))
    translated = env_packages.native_kwargs(game, kwargs)
    assert translated == {"screen_size": (64, 48), "seen_by": "FakeNative/Game-v0"}
    assert kwargs == {"screen_size": (64, 48)}  # the caller's dict is left alone
    assert env_packages.native_kwargs(other, kwargs) is kwargs  # not its id
    assert "fb_not_imported_pkg" not in sys.modules  # a package not imported is not asked

"""The router (`fastbatch.api`): the one place an id becomes an env. An id is looked up once per
make; no other module strips the namespace or resolves ids; a native env family comes in through
the ``fastbatch.envs`` entry points with no edit to api.py; each backend's options are read from
its constructor; and the rules that had drifted apart are written once."""

from __future__ import annotations

import ast
import typing
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

import fastbatch
from fastbatch import _core, api, env_packages
from fastbatch._base import NO_IDLE_ENVS
from fastbatch.agents import AgentsVectorEnv
from fastbatch.agents.native import NativeAgentsVectorEnv
from fastbatch.registration import add_native_env
from fastbatch.registry import REGISTRY

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fastbatch"


@pytest.fixture
def lookups(monkeypatch):
    """Counts every lookup in the native registry (resolve and has go through lookup)."""
    calls: list[str] = []
    lookup = REGISTRY.lookup

    def counted(env_id):
        calls.append(env_id)
        return lookup(env_id)

    monkeypatch.setattr(REGISTRY, "lookup", counted)
    return calls


def test_an_id_is_looked_up_once_per_make(lookups):
    with fastbatch.make("fastbatch/CartPole-v1", 2, seed=0) as env:
        assert isinstance(env, fastbatch.NativeVectorEnv)
    assert lookups == ["CartPole-v1"]  # the prefix stripped once, before the one lookup
    lookups.clear()
    with fastbatch.make_agents("fastbatch/Spread-v0", 2, seed=0) as env:
        assert isinstance(env, NativeAgentsVectorEnv)
    assert lookups == ["Spread-v0"]
    lookups.clear()
    found = api.route("CartPole-v1", seed=1)
    with fastbatch.make(found, 3) as env:  # a Route is built as it is: no lookup again
        assert env.num_envs == 3
    assert lookups == ["CartPole-v1"]


def test_the_trainer_routes_its_env_once(lookups):
    pytest.importorskip("tensorflow")
    from fastbatch.ppo import resolve
    from fastbatch.ppo.train import make_env

    env = make_env(resolve("cartpole", ["num_envs=2"]))
    try:
        assert env.backend == "native" and not env.multi_agent and env.num_workers == 1
    finally:
        env.close()
    assert lookups == ["CartPole-v1"]


# Calls that resolve an id (or strip its namespace), and the modules allowed to make them.
RESOLVING = {"strip_namespace", "register_package_for", "register_native_package_for"}
REGISTRY_LOOKUPS = {"resolve", "lookup", "has"}
ALLOWED = {
    "api.py": "the router",
    "registry.py": "the table: lookup strips the prefix",
    "env_packages.py": "defines the package and family registrars the router calls",
    "native/single.py": "gymnasium.make's entry point, which gymnasium hands the id",
    "plugins.py": "registering: the name an env is registered under, not an id being made",
    "native/attrs.py": "the renderer: gymnasium's id of the twin that draws a native env",
    "info.py": "`python -m fastbatch --info` lists the installed families",
}


def _resolving_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        owner = func.value if isinstance(func, ast.Attribute) else None
        owner_name = getattr(owner, "id", None)
        if name in RESOLVING:
            found.append(f"{name} (line {node.lineno})")
        elif name in REGISTRY_LOOKUPS and owner_name == "REGISTRY":
            found.append(f"REGISTRY.{name} (line {node.lineno})")
        elif name == "spec" and owner_name == "gymnasium":
            found.append(f"gymnasium.spec (line {node.lineno})")
        elif name == "removeprefix" and any("fastbatch" in ast.unparse(a) for a in node.args):
            found.append(f"removeprefix (line {node.lineno})")
    return found


def test_no_module_but_the_router_resolves_ids():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        calls = _resolving_calls(path)
        if calls and name not in ALLOWED:
            offenders[name] = calls
    assert not offenders, f"ids resolved outside fastbatch.api: {offenders}"
    assert _resolving_calls(PACKAGE / "api.py"), "the scan finds the router's own calls"


def test_api_names_no_env_family():
    tree = ast.parse((PACKAGE / "api.py").read_text())
    imported = {
        alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert not [m for m in imported if "mujoco" in m or "atari" in m], imported


class _FakeFamily:
    """A native env family as a separate package ships one (env_packages' protocol): its ids,
    register() and native_kwargs(spec, kwargs). It registers CartPole's env type anew."""

    ENV_IDS = ("FakePole-v0",)
    registered = 0

    @classmethod
    def register(cls):
        cls.registered += 1
        if not REGISTRY.has("FakePole-v0"):
            add_native_env(_core._builtin_env_types()["CartPole-v1"], "FakePole-v0")
        return list(cls.ENV_IDS)

    @staticmethod
    def native_kwargs(spec, kwargs):
        out = dict(kwargs)
        if out.pop("reward_style", None) == "sutton_barto":
            out["sutton_barto_reward"] = True
        assert spec.id == "FakePole-v0"
        return out


def test_a_new_native_family_needs_no_edit_to_the_router(monkeypatch):
    family = metadata.EntryPoint("fake", f"{__name__}:_FakeFamily", "fastbatch.envs")
    monkeypatch.setattr(env_packages, "_NATIVE_PACKAGES", (*env_packages.native_packages(), family))
    assert fastbatch.backend_for("FakePole-v0") == "native"
    with fastbatch.make("FakePole-v0", 2, reward_style="sutton_barto", seed=0) as env:
        assert isinstance(env, fastbatch.NativeVectorEnv)
        assert env.get_attr("sutton_barto_reward") == (True, True)
    assert _FakeFamily.registered >= 2  # before every make of its ids
    assert "FakePole-v0" in fastbatch.list_envs()
    before = _FakeFamily.registered
    with pytest.raises(fastbatch.UnknownEnvError, match="nor a gymnasium id"):
        api.route("FakePole-v0", backend="process")  # gymnasium's env of the id: it has none
    assert _FakeFamily.registered == before  # the family is not asked for the process backend


def test_mujoco_is_a_family_of_fastbatchs_own_entry_points():
    names = {e.value for e in env_packages.native_packages()}
    assert "fastbatch.mujoco" in names
    from fastbatch import mujoco

    assert env_packages.owns(mujoco, "Hopper-v5") and not env_packages.owns(mujoco, "Hopper-v4")


def test_routes_say_where_an_env_goes():
    assert api.route("CartPole-v1").kind == "native"
    assert api.route("CartPole-v1", backend="process").kind == "process"
    assert api.route("Acrobot-v1", multi_agent=None).kind == "native"
    assert api.route("Spread-v0", multi_agent=None).kind == "native_agents"
    assert api.route("Spread-v0", multi_agent=True).multi_agent
    petting = api.route("fastbatch.agents.spread", multi_agent=True, N=3)
    assert (petting.kind, petting.env_kwargs) == ("process_agents", {"N": 3})
    with pytest.raises(ValueError, match=r"multi-agent env .*make_agents\('Spread-v0'"):
        fastbatch.make("Spread-v0", 2)
    with pytest.raises(ValueError, match="single-agent native env"):
        fastbatch.make_agents("CartPole-v1", 2)
    with pytest.raises(ValueError, match="steps in the native backend"):
        api.route("Spread-v0", backend="process", multi_agent=True)


def test_process_options_are_read_from_the_backend_itself():
    # liveness_interval was missing from a copied list and went to gymnasium.make as an env
    # kwarg (CartPoleEnv refused it).
    found = api.route("CartPole-v1", backend="process", liveness_interval=0.2, render_mode=None)
    assert found.options == {"liveness_interval": 0.2}
    assert found.env_kwargs == {"render_mode": None}
    with fastbatch.make("CartPole-v1", 2, backend="process", liveness_interval=0.2) as env:
        env.reset(seed=0)


def _send_twice(env, rows: int) -> None:
    env.reset(seed=0)
    env.send(np.zeros(rows, np.int64))
    env.send(np.zeros(rows, np.int64))


@pytest.mark.parametrize(
    "make",
    [
        lambda: fastbatch.make("CartPole-v1", 4, batch_size=2, num_workers=2),
        lambda: fastbatch.make(
            "CartPole-v1", 4, backend="process", batch_size=2, num_workers=2, in_parent=False
        ),
        lambda: fastbatch.make_agents("Spread-v0", 4, batch_size=2, num_workers=2),
    ],
    ids=["native", "process", "native-agents"],
)
def test_every_backend_says_no_idle_envs_alike(make):
    with make() as env:
        with pytest.raises(fastbatch.AsyncStateError) as error:
            _send_twice(env, env.num_envs)
        assert str(error.value) == NO_IDLE_ENVS


def test_max_episode_steps_is_checked_by_one_rule():
    with pytest.raises(TypeError, match=r"CartPole-v1: max_episode_steps must be an integer >= 0"):
        fastbatch.make("CartPole-v1", 2, max_episode_steps=1.5)
    with pytest.raises(TypeError, match=r"Pole-v9: max_episode_steps must be an integer >= 0"):
        add_native_env(_core._builtin_env_types()["CartPole-v1"], "_Pole-v9", max_episode_steps="x")
    with pytest.raises(ValueError, match=r"max_episode_steps must be >= 0, got -1"):
        fastbatch.make_agents("Spread-v0", 2, max_episode_steps=-1)


@pytest.mark.parametrize("env_fn", ["Spread-v0", "fastbatch.agents.spread"])
def test_frame_stack_on_a_batch_of_agents_says_it_is_not_supported_yet(env_fn):
    with pytest.raises(ValueError, match="frame stacking is not supported yet for multi-agent"):
        fastbatch.make_agents(env_fn, 2, frame_stack=4)


def test_make_agents_is_annotated_with_what_it_returns():
    returned = typing.get_args(typing.get_type_hints(fastbatch.make_agents)["return"])
    assert set(returned) == {AgentsVectorEnv, NativeAgentsVectorEnv}
    with fastbatch.make_agents("Spread-v0", 1) as env:
        assert isinstance(env, returned) and env.multi_agent and env.backend == "native"


def test_spec_registers_the_family_of_its_id():
    pytest.importorskip("mujoco")
    assert fastbatch.spec("fastbatch/Hopper-v5").id == "Hopper-v5"

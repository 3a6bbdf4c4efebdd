"""The docs site's generated tables, as rows: each built from what the code holds (the env
registry, ``fastbatch.ppo.PRESETS``, the command's argument parser), so a page cannot drift
from it. ``fastbatch_sphinx`` renders them; ``tests/test_docs.py`` checks them against the
same sources by another path.

A table is ``(header, rows)``: a tuple of column titles and a list of row tuples of strings
holding Markdown inline text.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Sequence

import gymnasium

import fastbatch

Table = tuple[tuple[str, ...], list[tuple[str, ...]]]

# The env families a page can list: how each family's ids are found.
FAMILIES = ("classic", "mujoco", "dm_control", "atari", "agents")


def space_text(space: gymnasium.Space) -> str:
    """A space as the env tables write it: ``Box(4,) float32``, ``Box(1,) float32 in [-2, 2]``
    (bounds shown when every element shares them), ``Discrete(3)``."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, gymnasium.spaces.Box):
        shape = (
            "("
            + ", ".join(str(n) for n in space.shape)
            + ("," if len(space.shape) == 1 else "")
            + ")"
        )
        text = f"Box{shape} {space.dtype}"
        low, high = space.low.flat[0], space.high.flat[0]
        if (space.low == low).all() and (space.high == high).all() and abs(low) != float("inf"):
            text += f" in [{_number(low)}, {_number(high)}]"
        return text
    return str(space)


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{float(x):g}"


def family_ids(family: str) -> list[str]:
    """The native ids of `family` (one of `FAMILIES`), sorted; [] when the family's package
    is not installed (``atari`` without fastbatch-atari, ``mujoco`` without MuJoCo)."""
    if family == "classic":
        owned = set(_mujoco_ids())
        return sorted(i for i in fastbatch.list_envs() if i not in owned and "/" not in i)
    if family == "mujoco":
        return sorted(_mujoco_ids())
    if family == "dm_control":
        try:
            import fastbatch.dm_control as dm_control

            return sorted(dm_control.register())
        except ImportError:
            return []
    if family == "atari":
        if importlib.util.find_spec("fastbatch_atari") is None:
            return []
        fastbatch.spec("ALE/Pong-v5")  # registers the family
        return sorted(i for i in fastbatch.list_envs() if i.startswith("ALE/"))
    if family == "agents":
        return sorted(fastbatch.list_envs(multi_agent=True))
    raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")


def _mujoco_ids() -> Sequence[str]:
    try:
        import fastbatch.mujoco as mujoco

        mujoco.register()
    except ImportError:
        return ()
    return mujoco.ENV_IDS


def env_table(family: str) -> Table:
    """One row an id of `family`: its spaces, time limit and reward threshold, read from
    ``fastbatch.spec`` (its params: `env_params`)."""
    header = ("id", "observation", "action", "time limit", "reward threshold")
    rows = []
    for env_id in family_ids(family):
        spec = fastbatch.spec(env_id)
        observation = space_text(spec.observation_space)
        action = space_text(spec.action_space)
        if spec.num_agents > 1:
            observation += f" per agent ({spec.num_agents} agents)"
            action += " per agent"
        rows.append(
            (
                f"`{env_id}`",
                observation,
                action,
                "-" if spec.max_episode_steps is None else str(spec.max_episode_steps),
                "-" if spec.reward_threshold is None else _number(spec.reward_threshold),
            )
        )
    return header, rows


def env_params(family: str) -> list[tuple[str, list[str]]]:
    """Each id of `family` with the names of its params (``fastbatch.spec(id).params``: the
    keyword arguments ``make`` takes for it)."""
    return [(env_id, list(fastbatch.spec(env_id).params)) for env_id in family_ids(family)]


def param_table(env_id: str) -> Table:
    """Every param of `env_id`: kind, default and accepted values (the registry's
    ``param_info``)."""
    spec = fastbatch.spec(env_id)
    rows = []
    for name, info in spec.param_info.items():
        if info.kind == "choice":
            accepted = " / ".join(f"`{c}`" for c in info.choices)
        elif info.kind == "bool":
            accepted = "`True` / `False`"
        else:
            accepted = f"{_number(info.low)} to {_number(info.high)}"
        rows.append((f"`{name}`", info.kind, f"`{info.default!r}`", accepted))
    return ("param", "kind", "default", "accepted"), rows


def preset_table() -> Table:
    """One row a preset of ``fastbatch.ppo.PRESETS``: its env, total steps and every field it
    sets away from ``PPOConfig``'s defaults."""
    from fastbatch.ppo import PRESETS, PPOConfig

    defaults = PPOConfig()
    rows = []
    for name, config in PRESETS.items():
        # Plain text, so that a long list wraps in its cell; env_kwargs (pairs) as a dict.
        changed = [
            f"{field.name}={_value(field.name, getattr(config, field.name))}"
            for field in dataclasses.fields(config)
            if field.name not in ("env_id", "total_steps")
            and getattr(config, field.name) != getattr(defaults, field.name)
        ]
        rows.append(
            (
                f"`{name}`",
                f"`{config.env_id}`",
                f"{config.total_steps:,}",
                ", ".join(changed) or "-",
            )
        )
    return (
        "preset",
        "env",
        "total steps",
        "fields it sets (the rest are `PPOConfig`'s defaults)",
    ), rows


def _value(name: str, value: object) -> str:
    return repr(dict(value)) if name == "env_kwargs" else repr(value)


def cli_help(command: str | None = None) -> str:
    """``fastbatch [command] --help``'s text, at a fixed width of 100 columns."""
    from fastbatch import cli

    parser = cli.build_parser()
    if command is not None:
        parser = cli.subparser(parser, command)
    formatter = parser.formatter_class
    parser.formatter_class = lambda prog: formatter(prog, width=100)
    try:
        return parser.format_help()
    finally:
        parser.formatter_class = formatter


def markdown(table: Table) -> str:
    """`table` as a Markdown pipe table."""
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"

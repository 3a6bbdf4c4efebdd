"""Sphinx directives that write the generated parts of the site into the pages:

- ``fastbatch-envs`` (``:family:`` one of ``fastbatch_tables.FAMILIES``): the env table of a
  family, from the registry; ``fastbatch-env-ids`` the same family's ids as one line;
- ``fastbatch-params`` (argument: an env id): that env's params;
- ``fastbatch-presets``: ``fastbatch.ppo.PRESETS``;
- ``fastbatch-cli`` (argument: a subcommand, or none): the command's ``--help``;
- ``fastbatch-bench-headlines``: the headline ratios of the committed benchmark results.

At ``builder-inited`` the benchmark plots are rendered from ``bench/published/`` into
``docs/_generated/`` (by ``bench/plots.py``), where the benchmark page's images point.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import ClassVar

import fastbatch_tables as tables
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "docs" / "_generated"
BENCH_DATA = ROOT / "bench" / "published"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def bench_plots():
    """bench/plots.py, imported by path (bench/ is scripts, not a package), after the helper it
    imports by name from its own folder, bench/_published.py."""
    if "_published" not in sys.modules:
        _load("_published", ROOT / "bench" / "_published.py")
    return _load("fastbatch_bench_plots", ROOT / "bench" / "plots.py")


class _MarkdownDirective(SphinxDirective):
    """A directive whose output is Markdown text, parsed as if it were written in the page."""

    def markdown(self) -> str:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        # In a MyST page the text is parsed as Markdown where the directive stands, so its
        # tables and code render as the page's own.
        return self.parse_text_to_nodes(self.markdown())


def _family(value: str) -> str:
    return directives.choice(value, tables.FAMILIES)


class EnvTable(_MarkdownDirective):
    option_spec: ClassVar = {"family": _family}

    def markdown(self) -> str:
        # The params follow the table as a list: long names such as
        # exclude_current_positions_from_observation do not fit a column.
        family = self.options["family"]
        params = [
            f"- `{env_id}`: " + (", ".join(names) or "none")
            for env_id, names in tables.env_params(family)
        ]
        return (
            tables.markdown(tables.env_table(family))
            + "\nTheir params (keyword arguments of `make`; `fastbatch.spec(id).param_info` gives"
            + " each one's kind, default and range):\n\n"
            + "\n".join(params)
        )


class EnvIds(_MarkdownDirective):
    option_spec: ClassVar = {"family": _family}

    def markdown(self) -> str:
        ids = tables.family_ids(self.options["family"])
        if not ids:
            return (
                f"(The {self.options['family']} family is not installed where this page was built.)"
            )
        return f"{len(ids)} ids: " + ", ".join(f"`{i}`" for i in ids) + "."


class ParamTable(_MarkdownDirective):
    required_arguments = 1

    def markdown(self) -> str:
        return tables.markdown(tables.param_table(self.arguments[0]))


class PresetTable(_MarkdownDirective):
    def markdown(self) -> str:
        # A list, not a table: a preset's fields are a long line, which a table column of a
        # page's width cannot hold beside the names.
        _, rows = tables.preset_table()
        return "\n".join(
            f"- **{name.strip('`')}**: {env}, {steps} steps; {fields}."
            for name, env, steps, fields in rows
        )


class CliHelp(SphinxDirective):
    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        text = tables.cli_help(self.arguments[0] if self.arguments else None)
        block = nodes.literal_block(text, text, language="text")
        return [block]


class BenchHeadlines(_MarkdownDirective):
    def markdown(self) -> str:
        return bench_plots().headlines(BENCH_DATA)


def _render_plots(app: Sphinx) -> None:
    GENERATED.mkdir(exist_ok=True)
    bench_plots().render(BENCH_DATA, GENERATED)


def _napoleon_as_prose(app: Sphinx) -> None:
    """Napoleon reads an attribute's or property's first line ``Blocks of envs: ...`` as
    ``type: description``; fastbatch's docstrings open with prose such as that, so they are
    parsed as a function's docstring is (sections still work: ``Returns:``, ``Raises:``)."""
    from sphinx.ext import napoleon

    app.setup_extension("sphinx.ext.napoleon")
    listeners = app.events.listeners["autodoc-process-docstring"]
    for listener in list(listeners):
        if listener.handler is napoleon._process_docstring:
            app.disconnect(listener.id)

    def process(app, what, name, obj, options, lines):
        as_what = "function" if what in ("attribute", "property", "data") else what
        napoleon._process_docstring(app, as_what, name, obj, options, lines)

    app.connect("autodoc-process-docstring", process)


def setup(app: Sphinx) -> dict:
    _napoleon_as_prose(app)
    app.add_directive("fastbatch-envs", EnvTable)
    app.add_directive("fastbatch-env-ids", EnvIds)
    app.add_directive("fastbatch-params", ParamTable)
    app.add_directive("fastbatch-presets", PresetTable)
    app.add_directive("fastbatch-cli", CliHelp)
    app.add_directive("fastbatch-bench-headlines", BenchHeadlines)
    app.connect("builder-inited", _render_plots)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

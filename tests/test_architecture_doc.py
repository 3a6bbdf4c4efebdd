"""docs/architecture.md, the code map, kept true by reading the code.

Inventories: every file of tests/ and bench/ (a folder counts as one entry, named with a
trailing slash) is named exactly once in the first column of its table; every Python module of
the package is named exactly once in the package table; every C++ source is named in the engine
and fastbatch-atari tables; and every path and link the page names exists.

Claims: the layers and the forbidden contract are pyproject.toml's; the `stats_key` default is
the constructors'; the trainer's env arguments are `train.make_env`'s; each seed formula is an
expression of the trainer's code; the route kinds are `api.KINDS`; the env families' entry
points are those their pyproject.toml files declare; the modules a worker and `import fastbatch`
load are those the page says; and the numbers it states are the code's constants."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import posixpath
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import fastbatch
from fastbatch import api
from fastbatch.agents.native import NativeAgentsVectorEnv
from fastbatch.agents.vector import AgentsVectorEnv, make_agents
from fastbatch.native import NativeVectorEnv
from fastbatch.process import ProcessVectorEnv

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
TEXT = DOC.read_text()
PACKAGE = ROOT / "python" / "fastbatch"
TABLES = {"tests": "## Tests", "bench": "## Benchmarks and measurements"}
# The code tables: where each starts, and the folder its names are relative to.
CODE_TABLES = {
    "engine": ("**Engine**", ROOT),
    "package": ("**Python package**", PACKAGE),
    "atari": ("**fastbatch-atari**", ROOT),
}
SKIP = {"__pycache__", ".pytest_cache"}
# tests/<package>/ mirrors fastbatch/<package>/: the folder and each of its files are named.
MIRRORED = {"process", "native", "agents"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONTRACTS = PYPROJECT["tool"]["importlinter"]["contracts"]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _paragraph(start: str) -> str:
    """The page's paragraph that begins with `start`, on one line."""
    begin = TEXT.index(start)
    end = TEXT.find("\n\n", begin)
    return _flat(TEXT[begin : end if end >= 0 else None])


def _backticked(text: str) -> list[str]:
    return [_flat(s) for s in re.findall(r"`([^`]+)`", text, re.S)]


def _table_rows(marker: str) -> list[list[str]]:
    """The cells of the table that follows `marker` (header and rule left out)."""
    lines = TEXT[TEXT.index(marker) :].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1:-1])
    return rows


def _first_column_names(heading: str) -> list[str]:
    return [n for cells in _table_rows(heading) for n in re.findall(r"`([^`]+)`", cells[0])]


def _expand(name: str) -> list[str]:
    """``worker_pool.{h,cc}`` names two files."""
    found = re.fullmatch(r"(.*)\{([^}]+)\}(.*)", name)
    if not found:
        return [name]
    head, choices, tail = found.groups()
    return [head + choice + tail for choice in choices.split(",")]


def _code_paths(table: str) -> list[str]:
    """The paths a code table names in its first column, relative to its folder: a bare name
    after a path is in that path's folder (``ppo/networks.py``, ``normalize.py``)."""
    paths = []
    for cells in _table_rows(CODE_TABLES[table][0]):
        folder = ""
        for name in re.findall(r"`([^`]+)`", cells[0]):
            if "/" in name.rstrip("/"):
                folder = posixpath.dirname(name.rstrip("/"))
                full = name
            else:
                full = posixpath.join(folder, name)
            paths += _expand(full)
    return paths


def _listed(folder: str) -> list[str]:
    """The files under `folder` (relative to the repository) that git tracks or would track."""
    return subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", folder],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def _entries(folder: str) -> list[str]:
    """The folder's entries that git tracks or would track (outputs it ignores, such as
    bench/results/, are no part of the map)."""
    entries = set()
    for parts in (Path(p).relative_to(folder).parts for p in _listed(folder)):
        if len(parts) == 1:
            entries.add(parts[0])
        elif parts[0] in MIRRORED:  # a package of tests: the folder and each of its files
            entries.add(parts[0] + "/")
            if parts[-1] != "__init__.py":
                entries.add("/".join(parts))
        else:  # any other folder (plugins, a fake package) is one entry
            entries.add(parts[0] + "/")
    return sorted(entries - SKIP)


def _repeated(names: list[str]) -> list[str]:
    return sorted({n for n in names if names.count(n) > 1})


# ---------------------------------------------------------------------- inventories
@pytest.mark.parametrize("folder", list(TABLES))
def test_every_file_is_named_exactly_once(folder):
    prefix = "bench/" if folder == "bench" else ""
    named = [n.removeprefix(prefix) for n in _first_column_names(TABLES[folder])]
    named = [n for n in named if not n.startswith("src/")]  # another folder's row (C++ tests)
    entries = _entries(folder)
    missing = [e for e in entries if e not in named]
    stale = [n for n in named if n not in entries]
    assert not missing, f"{folder}/ entries not in docs/architecture.md's table: {missing}"
    assert not _repeated(named), f"named more than once: {_repeated(named)}"
    assert not stale, f"named in docs/architecture.md but not in {folder}/: {stale}"


@pytest.mark.parametrize("table", list(CODE_TABLES))
def test_every_path_a_code_table_names_exists(table):
    folder = CODE_TABLES[table][1]
    paths = _code_paths(table)
    assert paths
    missing = [p for p in paths if not (folder / p).exists()]
    assert not missing, f"docs/architecture.md's {table} table names no such file: {missing}"


def test_every_module_of_the_package_is_named_exactly_once():
    named = _code_paths("package")
    modules = sorted(
        str(Path(p).relative_to("python/fastbatch"))
        for p in _listed("python/fastbatch")
        if p.endswith((".py", ".pyi"))
    )
    missing = [m for m in modules if m not in named]
    assert not missing, f"modules not in docs/architecture.md's package table: {missing}"
    assert not _repeated(named), f"named more than once: {_repeated(named)}"


def test_every_cpp_source_is_named():
    named = set(_code_paths("engine") + _code_paths("atari"))
    sources = [
        p
        for folder in ("src/cpp", "plugins/atari/src")
        for p in _listed(folder)
        if p.endswith((".h", ".cc")) and not p.startswith("src/cpp/tests/")  # the ctest row
    ]
    missing = [p for p in sources if p not in named]
    assert not missing, f"C++ sources not in docs/architecture.md's tables: {missing}"


def test_the_ctest_row_names_every_ctest():
    (row,) = [cells for cells in _table_rows("**Engine**") if "`src/cpp/tests/`" in cells[0]]
    named = re.findall(r"`(\w+_test)`", row[1])
    cmake = (ROOT / "src/cpp/tests/CMakeLists.txt").read_text()
    declared = re.search(r"foreach\(name ([^)]*)\)", cmake).group(1).split()
    assert sorted(named) == sorted(declared), "src/cpp/tests/CMakeLists.txt builds other tests"


def test_every_link_leads_somewhere():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", TEXT)
    assert targets
    broken = [t for t in targets if "://" not in t and not (DOC.parent / t).exists()]
    assert not broken, f"links in docs/architecture.md to nothing: {broken}"


# ---------------------------------------------------------------------- claims
def test_the_layers_are_pyprojects():
    chain = _backticked(_paragraph("**Layers.**"))[0]
    stated = [sorted(n.strip() for n in layer.split("|")) for layer in chain.split(">")]
    assert stated[-1] == ["_core"]  # the extension, below every layer
    (contract,) = [c for c in CONTRACTS if c["type"] == "layers"]
    layers = [sorted(n.strip() for n in layer.split("|")) for layer in contract["layers"]]
    assert stated[:-1] == layers, "docs/architecture.md's layers are not pyproject.toml's"


def test_the_forbidden_contract_is_the_one_stated():
    text = _paragraph("**Layers.**")
    found = re.search(r"`([\w.]+)` imports none of (.*?) \(", text)
    assert found, "docs/architecture.md no longer states the forbidden contract"
    (contract,) = [c for c in CONTRACTS if c["type"] == "forbidden"]
    assert [found.group(1)] == contract["source_modules"]
    assert sorted(_backticked(found.group(2))) == sorted(contract["forbidden_modules"])


def test_the_stats_key_default_is_the_code_s():
    found = re.search(r"under `stats_key` \(default `([^`]+)`", _flat(TEXT))
    assert found, "docs/architecture.md no longer states the stats_key default"
    stated = ast.literal_eval(found.group(1))
    for made in (NativeVectorEnv, ProcessVectorEnv, AgentsVectorEnv, NativeAgentsVectorEnv):
        assert inspect.signature(made).parameters["stats_key"].default == stated, made
    assert inspect.signature(make_agents).parameters["stats_key"].default == stated
    env = fastbatch.make("CartPole-v1", 2)  # make passes it on: no default of its own
    try:
        assert env.stats_key == stated
    finally:
        env.close()


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def test_the_trainer_s_env_arguments_are_make_env_s():
    snippet = next(s for s in _backticked(_paragraph("**Trainer**")) if s.startswith("api.route("))
    stated = {k.arg: k.value for k in ast.parse(snippet, mode="eval").body.keywords}
    make_env = _function(PACKAGE / "ppo" / "train.py", "make_env")
    (kwargs,) = [
        n
        for n in ast.walk(make_env)
        if isinstance(n, ast.Dict) and any(getattr(k, "value", None) == "seed" for k in n.keys)
    ]
    code = {k.value: v for k, v in zip(kwargs.keys, kwargs.values) if k is not None}
    assert "api.route" in ast.unparse(make_env)
    for key, value in stated.items():
        assert key in code, f"train.make_env passes no {key}"
        if isinstance(value, ast.Constant):
            assert ast.unparse(code[key]) == ast.unparse(value), key


def _whole_expressions(path: Path) -> set[str]:
    """Every expression of a module that is not part of a larger arithmetic expression, and
    every assignment, as ast.unparse writes them."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            out.add(ast.unparse(node))
        elif isinstance(node, ast.expr) and not isinstance(
            parents.get(node), (ast.BinOp, ast.UnaryOp)
        ):
            out.add(ast.unparse(node))
    return out


def test_every_seed_formula_is_the_code_s():
    text = _paragraph("**Seeds**")
    files = [DOC.parent / t for t in re.findall(r"\]\(([^)]+\.py)\)", text)]
    code = set().union(*(_whole_expressions(f) for f in files))
    formulas = []
    for snippet in _backticked(text):
        try:
            tree = ast.parse(snippet)
        except SyntaxError:
            continue
        if any(isinstance(n, (ast.BinOp, ast.Assign)) for n in ast.walk(tree)):
            formulas.append(ast.unparse(tree))
    assert len(formulas) >= 6, formulas  # env, stride, eval, actions, base, shuffle
    stale = [f for f in formulas if f not in code]
    assert not stale, f"seed formulas of docs/architecture.md the code does not compute: {stale}"


def test_the_route_kinds_are_api_s():
    row = next(cells[1] for cells in _table_rows("**Python package**") if "`api.py`" in cells[0])
    found = re.search(r"\(kind: ([^)]*)\)", row)
    assert found, "the api.py row no longer names the route kinds"
    assert tuple(_backticked(found.group(1))) == api.KINDS


@pytest.mark.parametrize("pyproject", ["pyproject.toml", "plugins/atari/pyproject.toml"])
def test_the_env_families_entry_points_are_the_declared_ones(pyproject):
    project = tomllib.loads((ROOT / pyproject).read_text())["project"]
    families = project["entry-points"]["fastbatch.envs"]
    assert families
    stated = _backticked(_paragraph("**Layers.**"))
    for name, module in families.items():
        assert f'{name} = "{module}"' in stated, f"{pyproject} declares {name} = {module!r}"


def _loaded(module: str) -> set[str]:
    script = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out))


def test_what_a_worker_and_the_face_import_is_what_the_page_says():
    text = _paragraph("**Layers.**")
    worker = re.search(r"A worker process .*?imports (.*?) never imports (.*?) \(", text)
    face = re.search(r"`import fastbatch` never imports (.*?) \(", text)
    assert worker and face, "docs/architecture.md no longer says what a worker imports"
    names = lambda part: [n for n in _backticked(part) if re.fullmatch(r"[\w.]+", n)]  # noqa: E731
    loaded = _loaded("fastbatch.process.worker")
    assert names(worker.group(1)), "the page names what a worker imports"
    assert not [n for n in names(worker.group(1)) if n not in loaded]
    assert not [n for n in names(worker.group(2)) if n in loaded]
    assert not [n for n in names(face.group(1)) if n in _loaded("fastbatch")]


def _grep(path: str, pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, (ROOT / path).read_text())
    assert found, f"{pattern!r} no longer in {path}"
    return found.groups()


# What the page says, and where the code says it: a file and a pattern with the same groups.
STATED_NUMBERS = {
    "ABI version": (
        r"C ABI v(\d+)",
        "src/cpp/include/fastbatch/abi.h",
        r"FASTBATCH_ABI_VERSION (\d+)u",
    ),
    "result slots": (
        r"at most (\d+) slots are kept per list",
        "src/cpp/bindings/result_slots.h",
        r"kMaxSlots = (\d+);",
    ),
    "result sets": (
        r"up to (\d+) recycled result sets",
        "python/fastbatch/process/results.py",
        r"MAX_RESULT_SETS = (\d+)",
    ),
    "pool close": (
        r"`close` refuses new calls, waits up to (\d+) s",
        "src/cpp/bindings/py_vector_pool.cc",
        r"steady_clock::now\(\) \+ std::chrono::seconds\((\d+)\)",
    ),
    "idle wait": (
        r"Waiting threads spin (\d+) µs, then yield \(up to (\d+) µs\)",
        "src/cpp/core/worker_pool.cc",
        r"kIdleSpin\{(\d+)\};\nconstexpr microseconds kIdleYield\{(\d+)\}",
    ),
    "workers' close": (
        r"`close\(\)` sends `OP_CLOSE`, waits (\d+) s",
        "python/fastbatch/process/worker_set.py",
        r"deadline = time.monotonic\(\) \+ (\d+)\.0",
    ),
}


@pytest.mark.parametrize("name", list(STATED_NUMBERS))
def test_a_number_the_page_states_is_the_code_s(name):
    pattern, path, code = STATED_NUMBERS[name]
    found = re.search(pattern, _flat(TEXT))
    assert found, f"docs/architecture.md no longer says {pattern!r}"
    assert found.groups() == _grep(path, code), name


def test_the_mujoco_env_count_is_the_family_s():
    stated = [int(n) for n in re.findall(r"the (\d+) (?:gymnasium v5 )?MuJoCo envs", TEXT)]
    assert stated, "docs/architecture.md no longer counts the MuJoCo envs"
    assert set(stated) == {len(importlib.import_module("fastbatch.mujoco").ENV_IDS)}

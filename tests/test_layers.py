"""The package's layering rule, read from pyproject.toml ([tool.importlinter]), checked on every
import in the source: module level and inside functions alike (`lint-imports` in .ci/run checks
the same contract on the module graph)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "fastbatch"
ENTRY_POINTS = {"fastbatch.__main__", "fastbatch.ppo.__main__"}  # `python -m`: the command


CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]


def _contract() -> tuple[list[list[str]], list[str]]:
    (contract,) = [c for c in CONTRACTS if c["type"] == "layers"]
    layers = [[name.strip() for name in line.split("|")] for line in contract["layers"]]
    return layers, contract["containers"]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts).removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, source: str | None = None) -> list[tuple[str, int]]:
    """Every fastbatch module `name` imports, anywhere in its source, with the line."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # `from x import y` imports module x.y where there is one, else a name of x.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in KNOWN else base
                for alias in node.names
            ]
        else:
            continue
        found += [(t, node.lineno) for t in targets if t.split(".")[0] == "fastbatch"]
    return found


LAYERS, CONTAINERS = _contract()
MODULES = _modules()
CORE = "fastbatch._core"  # the extension: below every layer
KNOWN = {*MODULES, CORE}


def _place(module: str) -> tuple[int, str] | None:
    """(layer index, top first; the layer's member) of a module, or None for the face."""
    for index, members in enumerate(LAYERS):
        for member in members:
            full = f"{CONTAINERS[0]}.{member}"
            if module == full or module.startswith(full + "."):
                return index, member
    return None


def test_every_module_is_in_a_layer():
    unplaced = [m for m in MODULES if m != "fastbatch" and m not in ENTRY_POINTS and not _place(m)]
    assert not unplaced, f"modules in no layer of pyproject.toml's contract: {unplaced}"


def test_no_import_anywhere_points_up_a_layer_or_across_independent_ones():
    face_floor = _place("fastbatch.api")[0]  # the face imports api: only layers above may import it
    broken = []
    for module, path in MODULES.items():
        if module == "fastbatch" or module in ENTRY_POINTS:
            continue
        index, member = _place(module)
        for target, line in _imports(module, path):
            if target not in MODULES:
                continue  # the extension, below everything
            if target == "fastbatch":
                if index >= face_floor:
                    broken.append(f"{module}:{line} imports the package face (it imports api)")
                continue
            to_index, to_member = _place(target)
            if to_index < index or (to_index == index and to_member != member):
                broken.append(f"{module}:{line} -> {target}")
    assert not broken, "imports against pyproject.toml's layers:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    "contract", [c for c in CONTRACTS if c["type"] == "forbidden"], ids=lambda c: c["name"]
)
def test_no_import_anywhere_breaks_a_forbidden_contract(contract):
    # e.g. the trainer (fastbatch.ppo) reaches envs through fastbatch.api only.
    def within(module: str, names: list[str]) -> bool:
        return any(module == n or module.startswith(n + ".") for n in names)

    assert contract["source_modules"] and contract["forbidden_modules"]
    broken = [
        f"{module}:{line} -> {target}"
        for module, path in MODULES.items()
        if within(module, contract["source_modules"])
        for target, line in _imports(module, path)
        if within(target, contract["forbidden_modules"])
    ]
    assert not broken, f"imports against {contract['name']!r}:\n" + "\n".join(broken)


def test_no_import_cycle_anywhere():
    graph = {
        m: {t for t, _ in _imports(m, p) if t in MODULES and t != m and not m.startswith(t + ".")}
        for m, p in MODULES.items()
    }
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail("import cycle: " + " -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_the_check_sees_imports_inside_functions():
    # A back edge written inside a function, as the cycles this rule replaced were.
    source = "def f():\n    from fastbatch.api import make\n"
    found = [t for t, _ in _imports("fastbatch.registry", PACKAGE / "registry.py", source)]
    assert "fastbatch.api" in found

"""python/fastbatch/_core.pyi matches the compiled fastbatch._core, so the stub cannot drift:
the same top-level names, the same methods and properties on every stubbed class, and the same
parameter names and defaults as pybind11 reports in each function's signature line."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from fastbatch import _core

STUB = Path(__file__).resolve().parents[1] / "python" / "fastbatch" / "_core.pyi"


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
    return names


def _stub_classes() -> dict[str, ast.ClassDef]:
    return {n: node for n, node in _top_level(_stub()).items() if isinstance(node, ast.ClassDef)}


def _is_property(node: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def _split_top_level(text: str) -> list[str]:
    """Splits at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _real_params(function) -> list[tuple[str, bool]]:
    """(name, has a default) of each parameter, from pybind11's signature line, without self."""
    line = function.__doc__.splitlines()[0]
    inner = line[line.index("(") + 1 : line.rindex(") ->")]
    params = []
    for part in _split_top_level(inner):
        name = part.split(":", 1)[0].split("=", 1)[0].strip()
        if name != "self":
            params.append((name, "=" in part))
    return params


def _stub_params(node: ast.FunctionDef) -> list[tuple[str, bool]]:
    args = node.args.posonlyargs + node.args.args
    first_default = len(args) - len(node.args.defaults)
    params = [(a.arg, i >= first_default) for i, a in enumerate(args)]
    return [p for p in params if p[0] != "self"]


def test_stub_lists_exactly_the_module_names():
    stubbed = set(_top_level(_stub()))
    real = {name for name in dir(_core) if not name.startswith("__")}
    assert stubbed - real == set(), "in _core.pyi but not in _core"
    assert real - stubbed == set(), "in _core but not in _core.pyi"


@pytest.mark.parametrize("name", sorted(_stub_classes()))
def test_stubbed_class_members_match(name):
    node = _stub_classes()[name]
    cls = getattr(_core, name)
    assert isinstance(cls, type)
    stub_bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
    for base in stub_bases:
        assert issubclass(cls, getattr(builtins, base, None) or getattr(_core, base)), base
    if issubclass(cls, BaseException):
        assert cls.__mro__[1].__name__ in stub_bases  # the direct base is the stub's
        return  # an exception's annotated fields are set per instance, not on the class
    stub_members = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            stub_members[item.name] = item
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            stub_members[item.target.id] = item
    # Public and single-underscore members (such as _VectorPool._abandon); not dunders, nor the
    # method pybind11 adds to every class for its own cross-module use.
    real_members = {m for m in vars(cls) if not m.startswith("__") and m != "_pybind11_conduit_v1_"}
    # A bound constructor is a pybind11 function with a signature line; a class without one
    # has only a slot wrapper that raises "No constructor defined".
    init = vars(cls).get("__init__")
    if init is not None and init.__doc__.startswith("__init__("):
        real_members.add("__init__")
    assert set(stub_members) == real_members
    for member, item in stub_members.items():
        attribute = vars(cls)[member]
        if isinstance(item, ast.FunctionDef) and _is_property(item):
            assert isinstance(attribute, property), f"{name}.{member} is not a property"
        elif isinstance(item, ast.FunctionDef):
            assert not isinstance(attribute, property), f"{name}.{member} is a property"
            assert _stub_params(item) == _real_params(attribute), f"{name}.{member}"


def test_stubbed_functions_have_the_module_parameters():
    for name, node in _top_level(_stub()).items():
        if isinstance(node, ast.FunctionDef):
            assert _stub_params(node) == _real_params(getattr(_core, name)), name


def test_stubbed_constants_have_their_types():
    builtin_types = {"int": int, "str": str, "float": float, "bool": bool}
    for name, node in _top_level(_stub()).items():
        if isinstance(node, ast.AnnAssign) and isinstance(node.annotation, ast.Name):
            assert isinstance(getattr(_core, name), builtin_types[node.annotation.id]), name

"""The code blocks of the docs pages (docs/**/*.md and README.md) and what tests/test_docs.py
does with each, read from the comment lines just above its fence:

- ``<!-- docs-test: run -->``: a bash block, run (``bash -e``) in the page's work folder;
- ``<!-- docs-test: skip: REASON -->``: not run, for the reason given (an install, a cluster,
  minutes of training that another test runs shorter: the reason names it);
- ``<!-- docs-test: setup: COMMAND -->``: a bash command run in the work folder first;
- ``<!-- docs-test: file: NAME -->``: the block is written to the work folder as NAME;
- ``<!-- docs-test: excerpt: PATH -->``: every code line of the block is a line of PATH (the
  tutorial shows parts of the example envs, which the tests build);
- ``<!-- docs-test: parse -->``: a JSON or YAML block, parsed;
- ``<!-- tests/test_clients.py: NAME -->``: run by tests/test_clients.py, inside the program
  it is a part of.

Python blocks run unless marked otherwise; a bash, C++ or CMake block must say what is done
with it. Blocks without a language (diagrams) are text. The python and bash blocks of one page
run in order in one process (``python -m tests.docs_pages STEPS_JSON``), so a block may use
what an earlier one made, as a reader typing them in would.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!-- (docs-test|tests/test_clients\.py): ?(.*?) -->")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: its page, first line, language, text and the markers above it."""

    page: Path
    line: int
    language: str
    code: str
    markers: tuple[tuple[str, str], ...]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def marker(self, kind: str) -> str | None:
        """The value of this block's ``docs-test: KIND: value`` marker (``""`` for one with
        no value), or None."""
        for source, text in self.markers:
            if source == "docs-test":
                name, _, value = text.partition(":")
                if name.strip() == kind:
                    return value.strip()
        return None

    @property
    def setups(self) -> list[str]:
        return [
            text.partition(":")[2].strip()
            for source, text in self.markers
            if source == "docs-test" and text.partition(":")[0].strip() == "setup"
        ]

    @property
    def run_by_client_tests(self) -> bool:
        return any(source != "docs-test" for source, _ in self.markers)


def pages() -> list[Path]:
    """Every page whose code is tested: the site's pages and the README."""
    return [*sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts), ROOT / "README.md"]


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of `page` (MyST directives such as ``{toctree}`` are not code)."""
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        language = match.group(1)
        if language.startswith("{"):
            continue
        before = text[: match.start()].splitlines()
        markers = []
        while before and _MARKER.fullmatch(before[-1].strip()):
            source, value = _MARKER.fullmatch(before.pop().strip()).groups()
            markers.insert(0, (source, value))
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, language, match.group(2), tuple(markers)))
    return found


def steps(page: Path) -> list[dict]:
    """What running `page` takes, in order: ``{"bash": command}``, ``{"python": code}``,
    ``{"file": name, "text": text}``; the blocks marked skip, excerpt, parse or run by
    tests/test_clients.py are not steps."""
    out: list[dict] = []
    for block in blocks(page):
        if block.marker("skip") is not None or block.run_by_client_tests:
            continue
        out += [{"bash": command, "where": block.where} for command in block.setups]
        name = block.marker("file")
        if name is not None:
            out.append({"file": name, "text": block.code, "where": block.where})
        elif block.language == "python":
            out.append({"python": block.code, "where": block.where})
        elif block.language == "bash" and block.marker("run") is not None:
            out.append({"bash": block.code, "where": block.where})
    return out


def run_steps(plan: list[dict]) -> None:
    """Runs `plan` (from `steps`) in the current folder: python blocks in one namespace, as
    one script would run them."""
    namespace: dict = {"__name__": "__main__"}
    for step in plan:
        print(f"--- {step['where']}", flush=True)
        if "file" in step:
            Path(step["file"]).write_text(step["text"])
        elif "bash" in step:
            subprocess.run(["bash", "-e", "-c", step["bash"]], check=True)
        else:
            exec(compile(step["python"], step["where"], "exec"), namespace)


if __name__ == "__main__":
    run_steps(json.loads(Path(sys.argv[1]).read_text()))

"""bench/plots.py on the published results (bench/published/): every figure is written, is
SVG, and names the machine and the command that measured it; re-rendering gives the same bytes;
a missing JSON file skips its figure; and the headline table's numbers are the JSON's, checked
against ratios recomputed here."""

import json
import re
import shutil
import statistics
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.bench_scripts import BENCH, load_bench_script

plots = load_bench_script("plots")

PUBLISHED = BENCH / "published"
FIGURES = {
    "throughput.svg": "throughput.json",
    "atari.svg": "atari.json",
    "mujoco.svg": "mujoco_envs.json",
    "learning_curves.svg": "ppo.json",
}


def _data(name: str) -> dict:
    return json.loads((PUBLISHED / name).read_text())


def _svg_text(path: Path) -> str:
    """All the text of an SVG file, one string (parsing it fails on anything but XML)."""
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return " ".join(" ".join(element.itertext()) for element in root.iter())


def _cell(markdown: str, section: str, first_cells: list[str], column: str) -> str:
    """The cell under `column` of the row that begins with `first_cells`, in the table that
    follows the paragraph beginning with `section`."""
    lines = markdown[markdown.index(section) :].splitlines()
    rows = [line.strip("|").split("|") for line in lines if line.startswith("|")]
    header = [c.strip() for c in rows[0]]
    for cells in rows[2:]:
        cells = [c.strip() for c in cells]
        if cells[: len(first_cells)] == first_cells:
            return cells[header.index(column)]
    raise AssertionError(f"no row {first_cells} under {section!r}")


def _number(cell: str) -> float:
    """The first number of a cell: ``2.10x (1.50x to 3.00x)`` -> 2.1."""
    return float(re.match(r"[\d.]+", cell).group())


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("plots")
    paths = plots.render(PUBLISHED, out)
    return {p.name: p for p in paths}


def test_every_figure_is_svg_naming_the_machine_and_the_command(rendered):
    assert sorted(rendered) == sorted(FIGURES)
    for name, source in FIGURES.items():
        meta = _data(source)["meta"]
        text = _svg_text(rendered[name])
        assert meta["cpu"] in text, name
        assert f"{meta['cores']} cores" in text, name
        assert meta["argv"][0] == f"bench/{Path(meta['argv'][0]).name}"  # run from the root
        assert "python " + " ".join(meta["argv"]) in text, name
        assert meta["utc"][:10] in text, name


def test_rendering_again_gives_the_same_bytes(rendered, tmp_path):
    again = plots.render(PUBLISHED, tmp_path)
    for path in again:
        assert path.read_bytes() == rendered[path.name].read_bytes(), path.name


def test_a_missing_json_skips_its_figure(tmp_path, capsys):
    shutil.copy(PUBLISHED / "mujoco_envs.json", tmp_path)
    written = plots.render(tmp_path, tmp_path / "out")
    assert [p.name for p in written] == ["mujoco.svg"]
    printed = capsys.readouterr().out
    for name in ("throughput.svg", "atari.svg", "learning_curves.svg"):
        assert f"skipped {name}" in printed
    table = plots.headlines(tmp_path)
    assert "(no ppo.json: skipped)" in table and "**MuJoCo v5**" in table


def test_headline_ratios_are_the_jsons():
    table = plots.headlines(PUBLISHED)

    # Classic control, 16 envs: the median over the envs of fastbatch over EnvPool.
    rows = [r for r in _data("throughput.json")["results"] if r["num_envs"] == 16]
    expected = statistics.median(r["fastbatch"] / r["envpool"] for r in rows)
    cell = _cell(table, "**Classic control**", ["16"], "/ EnvPool")
    assert _number(cell) == pytest.approx(expected, rel=0.01)
    lowest = min(r["fastbatch"] / r["envpool"] for r in rows)
    assert float(re.search(r"\(([\d.]+)x to", cell).group(1)) == pytest.approx(lowest, rel=0.01)

    # MuJoCo: each env's fb-sync over gymnasium's SyncVectorEnv.
    for row in _data("mujoco_envs.json")["results"]:
        figures = row["median"]
        cell = _cell(table, "**MuJoCo v5**", [row["env"]], "/ gymnasium SyncVectorEnv")
        assert _number(cell) == pytest.approx(figures["fb-sync"] / figures["gym-sync"], rel=0.01)

    # Atari: fastbatch over EnvPool, first game and batch size.
    first = _data("atari.json")["results"][0]
    cell = _cell(table, "**Atari**", [first["env"], str(first["num_envs"])], "/ EnvPool")
    assert _number(cell) == pytest.approx(first["fastbatch"] / first["envpool"], rel=0.01)

    # Time to threshold: SB3's median seconds (its faster thread count) over BatchPPO's.
    for row in _data("ppo.json")["results"]:
        ours = [r["seconds_to_threshold"] for r in row["fastbatch"]]
        theirs = [r["seconds_to_threshold"] for r in row["sb3"][str(row["sb3_best_threads"])]]
        cell = _cell(table, "**Time to threshold**", [row["preset"]], "SB3 / BatchPPO")
        if None in ours or None in theirs:
            continue  # a seed short of the threshold: the cell is over those that reached it
        ratio = statistics.median(theirs) / statistics.median(ours)
        assert _number(cell) == pytest.approx(ratio, rel=0.01)

"""The docs site (docs/): it builds with warnings as errors and every cross-reference resolved,
every public name has a reference entry, the generated tables equal what they are generated
from, every internal link, anchor and image of the built pages resolves (also in a real
browser), and the code blocks of every page (README.md too) run or say why they do not
(tests/docs_pages.py says how a block is marked)."""

from __future__ import annotations

import html.parser
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
import yaml

import fastbatch
from tests import docs_pages

ROOT = docs_pages.ROOT
LANGUAGES = {"python", "bash", "cpp", "cmake", "json", "yaml", ""}


def _tables():
    spec = importlib.util.spec_from_file_location(
        "fastbatch_tables", ROOT / "docs" / "_ext" / "fastbatch_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_FRESH_IDS = """
import importlib.util, json
import fastbatch, fastbatch.mujoco
fastbatch.mujoco.register()
if importlib.util.find_spec("fastbatch_atari"):
    fastbatch.spec("ALE/Pong-v5")
print(json.dumps(fastbatch.list_envs() + fastbatch.list_envs(multi_agent=True)))
"""


@pytest.fixture(scope="module")
def native_ids() -> list[str]:
    """Every native id of a fresh process with the installed families registered (this
    process's registry also holds the test plugins other tests registered)."""
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_IDS], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site built as CI builds it (``-W -n``: warnings and unresolved references fail)."""
    out = tmp_path_factory.mktemp("site")
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "-q", "-b", "html", "docs", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert done.returncode == 0, f"the docs build failed:\n{done.stdout}\n{done.stderr}"
    print(f"docs built in {time.monotonic() - start:.1f} s")
    return out


# ---------------------------------------------------------------------------- code blocks
def test_every_code_block_is_run_or_says_why_not():
    unaccounted = []
    for page in docs_pages.pages():
        for block in docs_pages.blocks(page):
            skip = block.marker("skip")
            if block.language not in LANGUAGES:
                unaccounted.append(f"{block.where}: language {block.language!r}")
            elif skip == "" or (
                skip is None
                and block.language in ("bash", "cpp", "cmake")
                and not any(block.marker(k) is not None for k in ("run", "excerpt", "file"))
            ):
                unaccounted.append(f"{block.where}: a {block.language} block with no marker")
            elif block.language in ("json", "yaml") and block.marker("parse") is None:
                unaccounted.append(f"{block.where}: a {block.language} block not parsed")
    assert not unaccounted, "blocks neither run nor marked skip with a reason:\n" + "\n".join(
        unaccounted
    )


@pytest.mark.parametrize(
    "page",
    [p for p in docs_pages.pages() if docs_pages.steps(p)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_code_of_each_page_runs(page, tmp_path):
    plan = tmp_path / "steps.json"
    plan.write_text(json.dumps(docs_pages.steps(page)))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tests.docs_pages", str(plan)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "FASTBATCH_ROOT": str(ROOT),
            "TF_CPP_MIN_LOG_LEVEL": "3",
        },
    )
    assert done.returncode == 0, f"{page.name}'s code failed:\n{done.stdout}\n{done.stderr}"


def test_tutorial_excerpts_are_the_example_envs_own_lines():
    def code_lines(text: str) -> list[str]:
        """Code without comments, and without the ``;`` or ``{`` that ends a line: the page
        declares (``...;``) what the file defines (``... {``, or with an initialiser list)."""
        lines = (line.split("//")[0].strip().rstrip("{;").strip() for line in text.splitlines())
        return [line for line in lines if line]

    for page in docs_pages.pages():
        for block in docs_pages.blocks(page):
            source = block.marker("excerpt")
            if source is None:
                continue
            whole = code_lines((ROOT / source).read_text())
            missing = [
                line
                for line in code_lines(block.code)
                if not any(full.startswith(line) for full in whole)  # a definition's opening
            ]
            assert not missing, f"{block.where}: lines not in {source}: {missing}"


def test_config_blocks_parse():
    for page in docs_pages.pages():
        for block in docs_pages.blocks(page):
            if block.marker("parse") is not None:
                if block.language == "json":
                    json.loads(block.code)
                else:
                    list(yaml.safe_load_all(block.code))


# ---------------------------------------------------------------------------- generated tables
def test_the_env_tables_hold_every_native_id_with_its_spaces(native_ids):
    tables = _tables()
    listed = {}
    for family in tables.FAMILIES:
        _, rows = tables.env_table(family)
        for row in rows:
            listed[row[0].strip("`")] = row
    assert set(native_ids) <= set(listed), set(native_ids) - set(listed)
    for env_id in ("CartPole-v1", "Pendulum-v1", "HalfCheetah-v5"):
        envs = fastbatch.make(env_id, 1)  # the spaces of an env made, not of the registry
        shape = envs.single_observation_space.shape
        assert f"Box({shape[0]},) {envs.single_observation_space.dtype}" in listed[env_id][1]
        assert str(envs.time_limit) == listed[env_id][3]
        envs.close()
    assert listed["Spread-v0"][1].startswith("Box(14,) float32")  # once given as Box(10,)


def test_the_presets_table_and_the_cli_reference_are_the_codes():
    from fastbatch import cli
    from fastbatch.ppo import PRESETS

    tables = _tables()
    rows = {row[0].strip("`"): row for row in tables.preset_table()[1]}
    assert list(rows) == list(PRESETS)
    assert rows["cartpole_novel"][3].count("policy='gru'") == 1
    assert rows["halfcheetah"][2] == f"{PRESETS['halfcheetah'].total_steps:,}"
    train = tables.cli_help("train")
    for action in cli.subparser(cli.build_parser(), "train")._actions:
        assert all(option in train for option in action.option_strings), action


# ---------------------------------------------------------------------------- the built site
class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])


def _parsed(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    return page


def test_every_public_name_has_a_reference_entry(site):
    import fastbatch.agents
    import fastbatch.ppo
    import fastbatch.sb3
    import fastbatch.tf

    documented = set()
    for page in (site / "api").glob("*.html"):
        documented |= _parsed(page).ids
    wanted = [f"fastbatch.{name}" for name in fastbatch.__all__]
    for module in (fastbatch.ppo, fastbatch.agents, fastbatch.sb3, fastbatch.tf):
        wanted += [f"{module.__name__}.{name}" for name in module.__all__]
    for cls in (fastbatch.NativeVectorEnv, fastbatch.ProcessVectorEnv):
        wanted += [
            f"fastbatch.{cls.__name__}.{m}" for m in ("reset", "step", "send", "recv", "close")
        ]
    missing = [name for name in wanted if name not in documented]
    assert not missing, f"public names without a reference entry: {missing}"


def test_every_internal_link_anchor_and_image_of_the_site_resolves(site):
    pages = {path: _parsed(path) for path in site.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = (
                (path.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else path
            )
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)}: {link} (no file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parsed(target).ids
                if urllib.parse.unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {link} (no anchor)")
        for image in page.images:
            target = (path.parent / urllib.parse.unquote(image)).resolve()
            if not (target.exists() and target.stat().st_size > 0):
                broken.append(f"{path.relative_to(site)}: image {image}")
    assert not broken, "\n".join(broken)


def test_the_generated_tables_are_on_the_built_pages(site, native_ids):
    envs = (site / "envs.html").read_text()
    missing = [env_id for env_id in native_ids if f">{env_id}<" not in envs]
    assert not missing, f"ids not on the envs page: {missing}"
    training = (site / "training.html").read_text()
    from fastbatch.ppo import PRESETS

    assert all(f">{name}<" in training for name in PRESETS)
    assert "--resume" in training and "--video-episodes" in training
    assert (site / "_images" / "throughput.svg").exists()


BROWSER_PAGES = ["index.html", "envs.html", "api/fastbatch.html", "benchmarks.html"]


def test_the_pages_load_in_a_browser_with_their_images(site):
    """Debian's chromium, headless, loads the landing page, a guide, the API page of
    `fastbatch.make` and the benchmark page through a local HTTP server; a script in the page
    reports images that did not load and the anchor `fastbatch.make`."""
    from tests.docs_browser import check_pages

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("FASTBATCH_REQUIRE_BROWSER"):
            pytest.fail("FASTBATCH_REQUIRE_BROWSER is set and no chromium is installed")
        pytest.skip("no chromium here (apt-get install chromium); CI installs it")
    report = check_pages(
        browser, site, BROWSER_PAGES, anchors={"api/fastbatch.html": "fastbatch.make"}
    )
    assert report["pages"] == BROWSER_PAGES, report
    assert not report["problems"], report["problems"]
    assert report["images"] >= 4, report  # the benchmark page's four plots at least

"""Sphinx configuration of fastbatch's documentation site.

Build it with ``python -m sphinx -W -n -b html docs docs/_build/html`` (``pip install
'.[docs]'`` first): warnings are errors and every cross-reference must resolve (nitpicky).
The API reference is read from the installed package's docstrings; the env, preset and CLI
tables and the benchmark plots are generated at build time (``docs/_ext/``), so they cannot
drift from the registry, ``fastbatch.ppo.PRESETS``, the argument parser or the committed
results in ``bench/published/``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
# TensorFlow's start-up chatter (CUDA probing on a CPU machine) stays out of the build log.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

project = "fastbatch"
author = "the fastbatch developers"
copyright = "2026, the fastbatch developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "fastbatch_sphinx",  # loads sphinx.ext.napoleon itself (see there)
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated/*.md", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# `name` in a docstring is code, not a cross-reference (which nitpicky mode would check).
default_role = "literal"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

nitpicky = True
# Types of other projects: the site links no other project's inventory (CI builds offline), so
# references to their classes are left as text rather than reported as missing.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|gymnasium|gym|tensorflow|tf|torch|stable_baselines3|pettingzoo)\b.*"),
    (r"py:.*", r"(collections\.abc|typing|types|pathlib|os|enum|dataclasses|argparse)\..*"),
    (r"py:class", r"(Any|Callable|Iterable|Iterator|Mapping|Sequence|Path|PathLike|Self)"),
    # fastbatch's private modules: a public class's base there (the shared vector-env
    # contract, `fastbatch._base.BatchVectorEnv`) is documented through the public classes.
    (r"py:class", r"fastbatch\.(\w+\.)*_\w+.*"),
    # Annotations that Sphinx leaves unqualified (gymnasium's AutoresetMode and PettingZoo's
    # ParallelEnv; fastbatch's RegisteredEnv, the shared base and an agent batch named bare).
    (r"py:class", r"(AutoresetMode|ParallelEnv|RegisteredEnv|BatchVectorEnv|AgentsVectorEnv)"),
    (r"py:class", r"(int|float|str|bool|bytes|object|dict|list|tuple|type|None)"),
    (r"py:class", r"(ValueError|TypeError|RuntimeError|ImportError|Exception|OSError)"),
]

# Quotes stay straight: a value such as policy='gru' must copy as Python.
smartquotes = False

html_theme = "furo"
html_title = "fastbatch"

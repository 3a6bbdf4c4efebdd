"""Skip the package's tests where fastbatch-atari is not installed (``pip install
./plugins/atari``, or its wheel), unless FASTBATCH_REQUIRE_ATARI=1 asks for them."""

from __future__ import annotations

import importlib.util
import os

import pytest

INSTALLED = importlib.util.find_spec("fastbatch_atari") is not None


def pytest_collection_modifyitems(config, items):
    if INSTALLED:
        return
    if os.environ.get("FASTBATCH_REQUIRE_ATARI") == "1":
        raise pytest.UsageError(
            "FASTBATCH_REQUIRE_ATARI=1 but fastbatch_atari is not installed: "
            "pip install ./plugins/atari"
        )
    skip = pytest.mark.skip(reason="fastbatch-atari is not installed (plugins/atari)")
    for item in items:
        if "native_atari" in str(item.fspath):
            item.add_marker(skip)

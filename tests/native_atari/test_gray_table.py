"""fastbatch-atari's grayscale table (plugins/atari/src/gray_table.h): every path (the byte
loop, AVX-512 VBMI where this CPU has it) gives the table's gray level of every colour index,
whole 64-pixel groups and tails alike. The lockstep tests check the default path against
gymnasium's frames; this checks the path the CPU did not pick too."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from tests.native_builds import compile_plugin

SOURCE = Path(__file__).with_name("gray_table_shim.cc")
HEADERS = Path(__file__).parents[2] / "plugins" / "atari" / "src"
SCALAR, VBMI = 1, 2


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    out = tmp_path_factory.mktemp("gray") / "libgray_table_shim.so"
    done = compile_plugin(SOURCE, out, include=str(HEADERS))
    assert done.returncode == 0, done.stderr
    library = ctypes.CDLL(str(out))
    library.gray_apply.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_int]
    return library


def apply(shim, levels: np.ndarray, src: np.ndarray, path: int) -> np.ndarray:
    dst = np.full(src.size, 7, np.uint8)
    shim.gray_apply(levels.ctypes.data, src.ctypes.data, dst.ctypes.data, src.size, path)
    return dst


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 200, 210 * 160])
def test_every_path_reads_the_table(shim, size):
    rng = np.random.default_rng(size)
    levels = rng.integers(0, 256, 256, dtype=np.uint8)
    src = rng.integers(0, 256, size, dtype=np.uint8)
    src[: min(size, 256)] = np.arange(min(size, 256))  # every index, where the size allows
    paths = [SCALAR] + ([VBMI] if shim.gray_has_vbmi() else [])
    for path in paths:
        np.testing.assert_array_equal(apply(shim, levels, src, path), levels[src], f"path {path}")

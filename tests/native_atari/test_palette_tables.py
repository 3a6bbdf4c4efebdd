"""fastbatch-atari's palette tables (plugins/atari/src/palette_tables.h): every path (the byte
loop, AVX-512 VBMI where this CPU has it) gives the tables' gray level or colour of every colour
index, whole 64-pixel groups and tails alike. The lockstep tests check the default path against
gymnasium's frames; this checks the path the CPU did not pick too."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

import fastbatch
from tests.native_builds import compile_plugin

SOURCE = Path(__file__).with_name("palette_tables_shim.cc")
HEADERS = Path(__file__).parents[2] / "plugins" / "atari" / "src"
SCALAR, VBMI = 1, 2


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    out = tmp_path_factory.mktemp("palette") / "libpalette_tables_shim.so"
    # The plugin's own headers, and fastbatch's (fastbatch/cpu_features.h).
    done = compile_plugin(SOURCE, out, f"-I{fastbatch.get_include()}", include=str(HEADERS))
    assert done.returncode == 0, done.stderr
    library = ctypes.CDLL(str(out))
    library.palette_apply.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_size_t] + [ctypes.c_int] * 2
    return library


def paths(shim) -> list[int]:
    return [SCALAR] + ([VBMI] if shim.palette_has_vbmi() else [])


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 200, 210 * 160])
def test_every_path_reads_the_tables(shim, channels, size):
    rng = np.random.default_rng(size)
    gray = rng.integers(0, 256, 256, dtype=np.uint8)
    rgb = rng.integers(0, 256, (256, 3), dtype=np.uint8)
    src = rng.integers(0, 256, size, dtype=np.uint8)
    src[: min(size, 256)] = np.arange(min(size, 256))  # every index, where the size allows
    # Index 255's gray level is 254's (palette_tables.h: ALE's conversion cannot read it).
    expected = np.append(gray[:255], gray[254])[src] if channels == 1 else rgb[src].reshape(-1)
    for path in paths(shim):
        dst = np.full(expected.size, 7, np.uint8)
        shim.palette_apply(
            gray.ctypes.data,
            rgb.ctypes.data,
            src.ctypes.data,
            dst.ctypes.data,
            size,
            channels,
            path,
        )
        np.testing.assert_array_equal(dst, expected, f"path {path}")


def test_the_default_path_is_the_byte_loop_when_vbmi_is_switched_off(shim, tmp_path):
    """FASTBATCH_DISABLE_CPU_FEATURES=avx512vbmi (or all) forces the portable path: on an
    AVX-512 VBMI machine the default then is what an AVX2-only CPU runs."""
    import os
    import subprocess
    import sys

    code = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).palette_has_vbmi())"
    library = shim._name
    for off, expected in [("avx512vbmi", "0"), ("all", "0"), ("avx512_bf16", None)]:
        env = {**os.environ, "FASTBATCH_DISABLE_CPU_FEATURES": off}
        out = subprocess.run(
            [sys.executable, "-c", code, library], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        # Another feature switched off leaves VBMI to the CPU.
        assert out.stdout.strip() == (expected or str(shim.palette_has_vbmi()))

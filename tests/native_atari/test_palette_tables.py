"""fastbatch-atari's palette tables (plugins/atari/src/palette_tables.h): every path (the byte
loop, AVX-512 VBMI and AVX2 where this CPU has them) gives the tables' gray level or colour of every colour
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
SCALAR, VBMI, AVX2 = 1, 2, 3


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
    return (
        [SCALAR]
        + ([VBMI] if shim.palette_has_vbmi() else [])
        + ([AVX2] if shim.palette_has_avx2() else [])  # gray only; colours take the byte loop
    )


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


def test_the_fast_paths_are_switched_off_by_name(shim):
    """FASTBATCH_DISABLE_CPU_FEATURES=avx512vbmi leaves an AVX-512 machine on the path an
    AVX2-only CPU runs (AVX2 gray levels); avx2 too, or all, leaves the byte loop; another
    feature's name changes nothing."""
    import os
    import subprocess
    import sys

    code = (
        "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
        "print(lib.palette_has_vbmi(), lib.palette_has_avx2())"
    )

    def paths_with(off: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "FASTBATCH_DISABLE_CPU_FEATURES"}
        if off is not None:
            env["FASTBATCH_DISABLE_CPU_FEATURES"] = off
        out = subprocess.run(
            [sys.executable, "-c", code, shim._name], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    cpu = paths_with(None)  # what this CPU has, whatever the suite runs under
    has_avx2 = cpu.split()[1]
    assert paths_with("avx512vbmi") == f"0 {has_avx2}"
    assert paths_with("avx512vbmi,avx2") == "0 0"
    assert paths_with("all") == "0 0"
    assert paths_with("avx512_bf16") == cpu

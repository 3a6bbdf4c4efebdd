"""tests/native_builds.py: a kept test plugin is compiled again when its source or a header it
includes changes (the README's promise), and a failed compile keeps its message."""

from __future__ import annotations

import ctypes

from tests.native_builds import compile_plugin


def test_a_changed_header_compiles_the_plugin_again(tmp_path):
    (tmp_path / "value.h").write_text("#define VALUE 1\n")
    source = tmp_path / "value.cc"
    source.write_text('#include "value.h"\nextern "C" int value() { return VALUE; }\n')

    def built_value(name: str) -> int:
        done = compile_plugin(source, tmp_path / name, f"-I{tmp_path}")
        assert done.returncode == 0, done.stderr
        return ctypes.CDLL(str(tmp_path / name)).value()

    assert built_value("libfirst.so") == 1
    assert built_value("libagain.so") == 1  # kept: the same preprocessed text
    (tmp_path / "value.h").write_text("#define VALUE 2\n")
    assert built_value("libchanged.so") == 2


def test_a_failed_compile_keeps_its_message(tmp_path):
    source = tmp_path / "broken.cc"
    source.write_text('static_assert(false && sizeof(int), "the mistake the test wants");\n')
    for name in ("libbroken.so", "libbroken_again.so"):
        done = compile_plugin(source, tmp_path / name)
        assert done.returncode != 0
        assert "the mistake the test wants" in done.stderr
        assert not (tmp_path / name).exists()

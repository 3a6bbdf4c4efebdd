"""fastbatch.cpu: the CPU's flags and model as /proc/cpuinfo gives them, and
FASTBATCH_DISABLE_CPU_FEATURES, the switch that forces every fast path's fallback (its C++ twin,
fastbatch/cpu_features.h, is tested through the Atari palette tables in tests/native_atari)."""

from __future__ import annotations

from fastbatch import cpu

CPUINFO = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512bw avx512vbmi avx512_bf16\n\n"
    "processor\t: 1\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2\n"
)


def test_flags_and_model_come_from_the_first_processor(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert cpu.model(str(path)) == "AMD EPYC 9B14"
    assert {"avx2", "avx512vbmi", "avx512_bf16"} <= cpu.flags(str(path))
    assert cpu.flags(str(tmp_path / "missing")) == frozenset()


def test_a_feature_switched_off_is_absent_and_the_rest_stay(tmp_path, monkeypatch):
    path = str(tmp_path / "cpuinfo")
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    monkeypatch.delenv(cpu.DISABLE_VARIABLE, raising=False)
    assert cpu.has("avx512vbmi", path) and cpu.has("avx512_bf16", path)
    assert not cpu.has("amx_bf16", path)  # not on this CPU at all
    monkeypatch.setenv(cpu.DISABLE_VARIABLE, "avx512vbmi, avx512f")
    assert cpu.disabled() == {"avx512vbmi", "avx512f"}
    assert not cpu.has("avx512vbmi", path) and cpu.has("avx512_bf16", path)
    monkeypatch.setenv(cpu.DISABLE_VARIABLE, "all")
    assert not any(cpu.has(feature, path) for feature in cpu.DISPATCHED)

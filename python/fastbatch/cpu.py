"""This CPU's features as fastbatch's dispatching code sees them.

``FASTBATCH_DISABLE_CPU_FEATURES`` names features (as ``/proc/cpuinfo`` spells them:
``avx512vbmi``, ``avx512_bf16``, ...) that fastbatch must treat as absent even where the CPU has
them, separated by commas, or ``all``: every fast path then takes its portable one. The C++ side
(``fastbatch/cpu_features.h``, used by the Atari plugin's palette tables) reads the same variable
by the same rule. ``python -m fastbatch --info`` prints what is used.
"""

from __future__ import annotations

import os
import platform

__all__ = ["DISABLE_VARIABLE", "DISPATCHED", "disabled", "flags", "has", "model"]

DISABLE_VARIABLE = "FASTBATCH_DISABLE_CPU_FEATURES"
# The features some fastbatch path dispatches on, and where (for --info and the docs).
DISPATCHED = {
    "avx512vbmi": "fastbatch-atari's palette tables (64 pixels a permute)",
    "avx2": "fastbatch-atari's gray palette table without VBMI (32 pixels a shuffle row)",
    "avx512_bf16": "PPOConfig.cnn_dtype='auto' computes the CNN torso in bfloat16",
    "amx_bf16": "PPOConfig.cnn_dtype='auto' computes the CNN torso in bfloat16",
}


def _cpuinfo_field(field: str, cpuinfo: str) -> str:
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith(field):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return ""


def flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's feature flags (Linux's names; empty where /proc/cpuinfo cannot be read)."""
    return frozenset(_cpuinfo_field("flags", cpuinfo).split())


def model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name (e.g. "AMD EPYC 9B14"), for figures and bug reports."""
    return _cpuinfo_field("model name", cpuinfo) or platform.processor() or "unknown CPU"


def disabled() -> frozenset[str]:
    """The features FASTBATCH_DISABLE_CPU_FEATURES switches off ({"all"} for all)."""
    value = os.environ.get(DISABLE_VARIABLE, "")
    return frozenset(item for item in value.replace(" ", ",").split(",") if item)


def has(feature: str, cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether fastbatch may use `feature`: the CPU has it and it is not switched off."""
    off = disabled()
    return feature in flags(cpuinfo) and "all" not in off and feature not in off

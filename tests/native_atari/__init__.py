"""Tests of fastbatch-atari (plugins/atari/), the native ALE envs: skipped where that package is
not installed, failed instead when FASTBATCH_REQUIRE_ATARI=1 (as .ci/run sets it)."""

"""The worker pool's resource contract: idle workers sleep, steady stepping does not grow memory."""

from __future__ import annotations

import time

import numpy as np
import pytest

import fastbatch

pytestmark = [pytest.mark.engine, pytest.mark.threads]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.no_tsan
@pytest.mark.parametrize("batch_size", [256, 128], ids=["sync", "async"])
def test_an_idle_pool_uses_almost_no_cpu(batch_size):
    env = fastbatch.make("CartPole-v1", num_envs=256, num_workers=2, batch_size=batch_size, seed=0)
    env.reset()
    actions = np.zeros(256, dtype=np.int64)
    env.step(actions)  # async: the first step sends every env, later ones the last batch
    for _ in range(200):
        env.step(actions[:batch_size])
    time.sleep(0.05)  # past the workers' spinning (20 us) and yielding (200 us)
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    used = (time.process_time() - cpu) / (time.perf_counter() - wall)
    assert used < 0.05, f"idle pool used {used:.1%} of a core"


@pytest.mark.no_sanitizer
def test_steady_stepping_does_not_grow_memory():
    env = fastbatch.make("CartPole-v1", num_envs=64, num_workers=2, seed=0)
    env.reset()
    actions = np.ones(64, dtype=np.int64)
    for _ in range(20_000):  # warm up: slots, info arrays, allocator pools
        env.step(actions)
    before = rss_bytes()
    for _ in range(200_000):  # 12.8 M env steps
        env.step(actions)
    growth = rss_bytes() - before
    assert growth < 1 << 20, f"RSS grew by {growth / 2**20:.2f} MiB"

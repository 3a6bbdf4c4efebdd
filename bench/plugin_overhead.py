"""A plugin env against the same env built in: CartPole-v1 both ways, side by side.

    python bench/plugin_overhead.py [--quick]

Builds bench/plugin_cartpole (the built-in CartPole source, compiled out of tree with the
installed CMake package, as a user would), then times both in alternation: the C++ loop with
no Python (1 thread) and fastbatch.make(...).step at 256 and 4096 envs. Prints medians and the
plugin/built-in ratio; the target is a ratio of at least 0.9.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import fastbatch
from fastbatch import _core

HERE = Path(__file__).resolve().parent


def build_plugin(folder: Path) -> Path:
    cmake_dir = fastbatch.get_cmake_dir()
    subprocess.run(
        [
            "cmake",
            "-S",
            str(HERE / "plugin_cartpole"),
            "-B",
            str(folder),
            f"-Dfastbatch_DIR={cmake_dir}",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(folder)], check=True, capture_output=True)
    return next(folder.glob("libcartpole_plugin.*"))


def python_rate(env_id: str, num_envs: int, budget: float) -> float:
    env = fastbatch.make(env_id, num_envs=num_envs, seed=0)
    env.reset()
    actions = [np.random.default_rng(i).integers(2, size=num_envs) for i in range(16)]
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        for a in actions:
            env.step(a)
        n += len(actions)
    rate = n * num_envs / (time.perf_counter() - start)
    env.close()
    return rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    repeats, budget = (5, 0.2) if args.quick else (11, 0.5)
    with tempfile.TemporaryDirectory() as tmp:
        library = build_plugin(Path(tmp))
        fastbatch.register_native_env("PluginCartPole-v1", library, replace=True)
        (plugin_type,) = _core._load_plugin(str(library))
    builtin_type = _core._builtin_env_types()["CartPole-v1"]

    print(f"{'measure':<34}{'built-in':>12}{'plugin':>12}{'ratio':>8}")
    for num_envs in (256, 4096):
        steps = 4_000_000 // num_envs
        loop = {"built-in": [], "plugin": []}
        py = {"built-in": [], "plugin": []}
        for _ in range(repeats):  # alternate, so drift in machine load hits both alike
            for name, env_type, env_id in (
                ("built-in", builtin_type, "CartPole-v1"),
                ("plugin", plugin_type, "PluginCartPole-v1"),
            ):
                loop[name].append(
                    num_envs * steps / _core._native_loop_seconds(env_type, num_envs, steps)
                )
                py[name].append(python_rate(env_id, num_envs, budget))
        for label, data in (
            (f"C++ loop, 1 thread, {num_envs} envs", loop),
            (f"fastbatch.make, {num_envs} envs", py),
        ):
            b, p = statistics.median(data["built-in"]), statistics.median(data["plugin"])
            print(f"{label:<34}{b / 1e6:>11.2f}M{p / 1e6:>11.2f}M{p / b:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

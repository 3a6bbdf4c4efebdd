"""A plugin env against the same env built in: CartPole-v1 both ways, side by side.

    python bench/plugin_overhead.py [--quick]

Builds bench/plugin_cartpole (the built-in CartPole source, compiled out of tree with the
installed CMake package, as a user would), then times both in alternation: the C++ loop with
no Python (1 thread; a fresh pool each run) and fastbatch.make(...).step at 256 and 4096 envs,
each timed run under bench/_harness.py's rules (a warm-up of one run's length, then at least
the budget and 32 batch steps). Prints medians and the plugin/built-in ratio; the target is a
ratio of at least 0.9.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import _harness as harness

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


def python_loop(env, budget: harness.Budget) -> harness.Loop:
    """`env.step` over a table of random actions, timed by the harness."""
    env.reset()
    actions = harness.action_table(env.single_action_space, env.num_envs)
    return harness.Loop(env.step, actions, env.num_envs, budget)


def native_loop(env_type, num_envs: int, budget: harness.Budget) -> harness.NativeLoop:
    """The C++ loop (1 thread) over `num_envs` envs of `env_type`, timed by the harness."""
    return harness.NativeLoop(
        lambda steps: _core._native_loop_seconds(env_type, num_envs, steps), num_envs, budget
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    repeats, seconds = (5, 0.2) if args.quick else (11, 0.5)
    budget = harness.Budget(seconds)
    run = harness.RunInfo(repeats=repeats, budget_s=seconds, quick=args.quick)
    print(run.header())
    with tempfile.TemporaryDirectory() as tmp:
        library = build_plugin(Path(tmp))
        fastbatch.register_native_env("PluginCartPole-v1", library, replace=True)
        (plugin_type,) = _core._load_plugin(str(library))
    builtin_type = _core._builtin_env_types()["CartPole-v1"]

    table = harness.Table(("measure", -34), ("built-in", 12), ("plugin", 12), ("ratio", 8))
    print(table.header())
    for num_envs in (256, 4096):
        envs = {
            "built-in": fastbatch.make("CartPole-v1", num_envs=num_envs, seed=0),
            "plugin": fastbatch.make("PluginCartPole-v1", num_envs=num_envs, seed=0),
        }
        types = {"built-in": builtin_type, "plugin": plugin_type}
        contenders: dict[str, harness.Timed] = {}
        for name in envs:  # alternate, so drift in machine load hits both alike
            contenders[f"loop {name}"] = native_loop(types[name], num_envs, budget)
            contenders[f"py {name}"] = python_loop(envs[name], budget)
        try:
            rates = harness.medians(harness.interleaved(contenders, repeats))
        finally:
            for env in envs.values():
                env.close()
        for label, kind in (
            (f"C++ loop, 1 thread, {num_envs} envs", "loop"),
            (f"fastbatch.make, {num_envs} envs", "py"),
        ):
            b, p = rates[f"{kind} built-in"], rates[f"{kind} plugin"]
            print(table.row(label, harness.format_rate(b), harness.format_rate(p), f"{p / b:.3f}"))
    print(run.footer())
    return 0


if __name__ == "__main__":
    sys.exit(main())

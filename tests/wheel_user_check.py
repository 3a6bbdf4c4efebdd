"""What a user without a compiler does first, run inside a fresh venv that holds only the release
wheels and what they depend on (tests/test_wheels.py makes the venv and runs this file in it, with
no compiler on PATH, CC and CXX set to `false` and an empty cache folder).

    python wheel_user_check.py CHECK...   (classic, mujoco, atari, agents, train)

Prints one line a check; a failed check raises, so the exit status says whether all passed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def no_compiler() -> None:
    found = [name for name in ("cc", "c++", "g++", "gcc", "clang") if shutil.which(name)]
    assert not found, f"a compiler is reachable: {found}"
    assert os.environ.get("CXX") == "false" and os.environ.get("CC") == "false"


def step_some(env, steps: int = 20) -> None:
    env.reset(seed=0)
    for _ in range(steps):
        env.step(env.action_space.sample())
    env.close()


def classic() -> str:
    import fastbatch

    step_some(fastbatch.make("CartPole-v1", 8, seed=0))
    step_some(fastbatch.make("Pendulum-v1", 8, seed=0))
    return "CartPole-v1 and Pendulum-v1 stepped"


def mujoco() -> str:
    from importlib import metadata

    import fastbatch
    from fastbatch import mujoco as fb_mujoco

    env = fastbatch.make("HalfCheetah-v5", 8, seed=0)
    assert isinstance(env, fastbatch.NativeVectorEnv)
    step_some(env)
    found = fb_mujoco.installed()
    meta = [d for d in ("mujoco",) if _installed(metadata, d)]
    if not _installed(metadata, "glfw"):  # mujoco-core alone: the envs draw their own frames
        drawn = fastbatch.make("HalfCheetah-v5", 1, render_mode="rgb_array", width=32, height=24)
        drawn.reset(seed=0)
        frame = drawn.render()[0]
        assert frame.shape == (24, 32, 3) and frame.std() > 0, frame.shape
        drawn.close()
    return f"HalfCheetah-v5 stepped on {found.distribution} {found.version} (meta package: {meta})"


def _installed(metadata, name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def atari() -> str:
    import fastbatch

    env = fastbatch.make("ALE/Pong-v5", 2, seed=0)
    assert isinstance(env, fastbatch.NativeVectorEnv), type(env)
    step_some(env)
    return "ALE/Pong-v5 stepped natively"


def agents() -> str:
    import fastbatch

    env = fastbatch.make_agents("Spread-v0", 4, agents=3, seed=0)
    obs, _ = env.reset(seed=0)
    for _ in range(10):
        env.step(np.stack([env.single_action_space.sample() for _ in range(env.num_envs)]))
    env.close()
    return f"Spread-v0 stepped ({obs.shape[0]} agent rows)"


def train() -> str:
    """A short `fastbatch train` run that must use the prebuilt rollout op: no fallback warning."""
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as logdir:
        done = subprocess.run(
            [
                os.path.join(os.path.dirname(sys.executable), "fastbatch"),
                "train",
                "CartPole-v1",
                "--steps",
                "4096",
                "--quiet",
                "--logdir",
                logdir,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "stepping envs through tf.numpy_function" not in output, output[
        -4000:
    ]  # tf_op's warning
    from fastbatch.ppo import tf_op

    assert tf_op.load() is not None
    return f"fastbatch train CartPole-v1 ran on the rollout op under TensorFlow {tf.__version__}"


CHECKS = {"classic": classic, "mujoco": mujoco, "atari": atari, "agents": agents, "train": train}


def main(names: list[str]) -> int:
    no_compiler()
    # fastbatch's own cache: where a compile on first use would have put its library (other
    # packages, matplotlib's font list for one, may cache beside it).
    cache = os.path.join(os.environ["XDG_CACHE_HOME"], "fastbatch")
    for name in names:
        print(f"{name}: {CHECKS[name]()}", flush=True)
    assert not os.path.exists(cache), f"fastbatch compiled on first use: {os.listdir(cache)}"
    print("no compiler used, nothing compiled into the cache", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

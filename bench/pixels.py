"""DMC from pixels: frames per second against batch size, fastbatch's pool drawing frames against
gymnasium over shimmy (dm_control's own renderer) and EnvPool's pixel envs, one run; or the same
for a MuJoCo v5 env against gymnasium's own renderer.

    python bench/pixels.py                                   # cheetah-run, 1/8/32 envs, 2 threads
    python bench/pixels.py --num-envs 8 --threads 1 --methods fb-fast   # frames/s on one core
    python bench/pixels.py --env HalfCheetah-v5              # fb-* against gym-*

Contenders (columns), all drawing 84x84 RGB frames from camera 0 with MUJOCO_GL=egl (Mesa's
llvmpipe on a CPU), one frame per env step, stepping the same pre-drawn table of uniform random
actions:
  fb-fast      fastbatch.make(id, N, pixels=True, visuals="fast", num_workers=T): the pool's T
               threads step and draw, without shadows, reflections, skybox and multisampling
  fb-match     the same with visuals="match" (dm_control's default visuals, pixel for pixel)
  shimmy-fast  gymnasium's SyncVectorEnv over shimmy's env (render_mode="rgb_array",
               render_kwargs with the size and camera): every env stepped, then every env's
               render(), with the same lean visuals as fb-fast (render_flag_overrides turns off
               shadows, reflections and skybox; the model's offsamples set to 0)
  shimmy-match the same with dm_control's default visuals
  envpool      EnvPool's pixel env of the task (``from_pixels=True``), if the installed EnvPool
               has them and they start here; its failure is reported instead
For a MuJoCo v5 id (frames from its "track" camera), the peers are gymnasium's own envs:
  gym-fast     SyncVectorEnv over gymnasium.make(id, render_mode="rgb_array", width, height,
               camera_name="track"): every env stepped, then every env's render() (its GL context
               made current first), with the lean visuals of fb-fast (the viewer's scene flags,
               the model's offsamples set to 0)
  gym-match    the same with gymnasium's default visuals

Every renderer in the run has the same llvmpipe threads: fastbatch's default LP_NUM_THREADS=0
(fastbatch._gl sets it before any display is made; a frame is drawn on the thread that asks for
it), the fastest setting for both fast contenders here (shimmy-fast drew 1.6-2x more frames/s
with it than with Mesa's default of a rasterizer thread per core). The match contenders draw
faster with Mesa's threads: ``LP_NUM_THREADS=2 python bench/pixels.py`` measures them so.

Figures are frames per second (env steps x N per second), the median over `--repeats` rounds;
each round times every contender once in turn for `--budget` seconds (bench/_harness.py).
Printed ratios: fb-fast over shimmy-fast, and fb-match over shimmy-match. The JSON keeps every
run.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from fastbatch import mujoco as fb_mujoco

# Before `import mujoco` (below) can load Mesa's EGL: fastbatch loads it first (fastbatch._gl),
# and sets MUJOCO_GL=egl on a machine without a display.
fb_mujoco.isolate_gl()

import _harness as harness  # noqa: E402
import dm_control_envs  # noqa: E402
import gymnasium  # noqa: E402
import mujoco_envs  # noqa: E402  (its clock rule and measuring loop)
import numpy as np  # noqa: E402

import fastbatch  # noqa: E402
from fastbatch import dm_control as fb_dmc  # noqa: E402

METHODS = ["fb-fast", "fb-match", "shimmy-fast", "shimmy-match", "envpool"]
METHODS_V5 = ["fb-fast", "fb-match", "gym-fast", "gym-match"]
SIZE = 84
LEAN = {"shadow": False, "reflection": False, "skybox": False}


class _Shimmy:
    """shimmy's envs stepped by SyncVectorEnv, then each env's frame drawn."""

    def __init__(self, env_id: str, num_envs: int, lean: bool) -> None:
        import shimmy  # noqa: F401  (registers the dm_control/ ids)

        render_kwargs = {"height": SIZE, "width": SIZE, "camera_id": 0}
        if lean:
            render_kwargs["render_flag_overrides"] = LEAN

        def factory():
            env = gymnasium.make(env_id, render_mode="rgb_array", render_kwargs=render_kwargs)
            if lean:  # before the first frame makes the render context
                env.unwrapped._env.physics.model.vis.quality.offsamples = 0
            return env

        self.env = gymnasium.vector.SyncVectorEnv([factory] * num_envs)
        self.env.reset(seed=0)
        self.close = self.env.close

    def step(self, actions: np.ndarray) -> None:
        self.env.step(actions)
        self.env.call("render")


class _Gym:
    """gymnasium's own MuJoCo v5 envs stepped by SyncVectorEnv, then each env's frame drawn."""

    def __init__(self, env_id: str, num_envs: int, lean: bool) -> None:
        import mujoco

        def factory():
            env = gymnasium.make(
                env_id, render_mode="rgb_array", width=SIZE, height=SIZE, camera_name="track"
            )
            if lean:  # before the first frame makes the render context
                env.unwrapped.model.vis.quality.offsamples = 0
            return env

        self.env = gymnasium.vector.SyncVectorEnv([factory] * num_envs)
        self.env.reset(seed=0)
        self.viewers = [e.unwrapped.mujoco_renderer._get_viewer("rgb_array") for e in self.env.envs]
        if lean:
            for viewer in self.viewers:
                for flag in ("mjRND_SHADOW", "mjRND_REFLECTION", "mjRND_SKYBOX"):
                    viewer.scn.flags[getattr(mujoco.mjtRndFlag, flag)] = 0
        self.close = self.env.close

    def step(self, actions: np.ndarray) -> None:
        self.env.step(actions)
        for env, viewer in zip(self.env.envs, self.viewers, strict=True):
            viewer.make_context_current()  # gymnasium draws in whatever context is current
            env.render()


def contender(method: str, env_id: str, table: np.ndarray, threads: int, budget):
    num_envs = table.shape[1]
    if method in ("fb-fast", "fb-match"):
        camera = {"camera": 0} if env_id.startswith("dm_control/") else {"camera_name": "track"}
        env = fastbatch.make(
            env_id,
            num_envs,
            seed=0,
            num_workers=threads,
            pixels=True,
            height=SIZE,
            width=SIZE,
            visuals=method.removeprefix("fb-"),
            **camera,
        )
        env.reset()
        step, close = env.step, env.close
    elif method == "envpool":
        import envpool

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = envpool.make(
                dm_control_envs.envpool_id(env_id),
                env_type="gymnasium",
                num_envs=num_envs,
                batch_size=num_envs,
                num_threads=threads,
                seed=0,
                from_pixels=True,
                img_height=SIZE,
                img_width=SIZE,
            )
        env.reset()
        step, close = env.step, env.close
    elif method in ("shimmy-fast", "shimmy-match"):
        env = _Shimmy(env_id, num_envs, lean=method == "shimmy-fast")
        step, close = env.step, env.close
    elif method in ("gym-fast", "gym-match"):
        env = _Gym(env_id, num_envs, lean=method == "gym-fast")
        step, close = env.step, env.close
    else:
        raise ValueError(method)
    loop = harness.Loop(step, table, num_envs, budget)
    return mujoco_envs.Clocked(loop, clocked=method.startswith(("shimmy", "gym")), close=close)


def envpool_starts(env_id: str) -> str | None:
    """None when EnvPool's pixel env of `env_id` steps in a fresh process, else why not (it
    may crash the process that tries, so a child tries)."""
    import subprocess

    import envpool

    keys = envpool.make_spec(dm_control_envs.envpool_id(env_id))._config_keys
    if "from_pixels" not in keys:
        version = harness.package_version("envpool")
        return f"EnvPool {version}'s {dm_control_envs.envpool_id(env_id)} has no pixel options"
    code = (
        "import envpool, numpy as np\n"
        f"e = envpool.make({dm_control_envs.envpool_id(env_id)!r}, env_type='gymnasium', "
        f"num_envs=1, from_pixels=True, img_height={SIZE}, img_width={SIZE})\n"
        "e.reset(); e.step(np.zeros((1,) + e.action_space.shape))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    if done.returncode == 0:
        return None
    lines = (done.stderr or "").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="dm_control/cheetah-run-v0")
    parser.add_argument("--methods", help="default: by the env's family (see above)")
    parser.add_argument("--num-envs", default="1,8,32", help="comma-separated batch sizes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per timed run")
    parser.add_argument("--json", default="bench/results/pixels.json")
    args = parser.parse_args(argv)
    fb_dmc.register()
    dmc = args.env.startswith("dm_control/")
    peer = "shimmy" if dmc else "gym"
    methods = [
        m for m in (args.methods or ",".join(METHODS if dmc else METHODS_V5)).split(",") if m
    ]
    skipped = {}
    if "envpool" in methods:
        why = None if dmc else "measured here for dm_control ids only"
        why = why or ("not installed" if not dm_control_envs.available("envpool") else None)
        why = why or envpool_starts(args.env)
        if why is not None:
            skipped["envpool"] = why
    if "shimmy-fast" in methods or "shimmy-match" in methods:
        if not dm_control_envs.available("shimmy-sync"):
            skipped.update({m: "shimmy is not installed" for m in methods if "shimmy" in m})
    sizes = [int(n) for n in args.num_envs.split(",") if n]
    budget = harness.Budget(args.budget)
    run = harness.RunInfo(
        packages=("mujoco", "envpool", "dm-control", "shimmy"),
        num_envs=sizes,
        threads=args.threads,
        repeats=args.repeats,
        budget_s=args.budget,
        stat="median",
    )
    names = (f"fast/{peer}", f"match/{peer}")
    table = harness.Table(("N", 4), *((m, 13) for m in methods), *((n, 13) for n in names))
    print(run.header())
    print(
        f"fastbatch {fastbatch.__version__}, mujoco {harness.package_version('mujoco')}, "
        f"{args.env}, {SIZE}x{SIZE}, {args.threads} threads, median of {args.repeats} x "
        f"{args.budget}s (frames/s)"
    )
    for method, why in skipped.items():
        print(f"{method}: not run ({why})")
    print(table.header())
    print(table.rule())
    results = []
    for num_envs in sizes:
        rates = mujoco_envs.measure(
            args.env,
            methods,
            num_envs,
            args.threads,
            budget,
            args.repeats,
            contender,
            lambda m: m not in skipped,
        )
        row = {m: harness.median(r) for m, r in rates.items()}
        ratios = [
            harness.format_ratio(row.get("fb-fast"), row.get(f"{peer}-fast")),
            harness.format_ratio(row.get("fb-match"), row.get(f"{peer}-match")),
        ]
        cells = [harness.format_rate(row.get(m)) for m in methods]
        print(table.row(str(num_envs), *cells, *ratios), flush=True)
        results.append({"env": args.env, "num_envs": num_envs, "runs": rates, "median": row})
    harness.write_json(args.json, {**run.meta, "not_run": skipped}, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The `fastbatch` command: train and evaluate policies, and locate the plugin build files.

fastbatch train <preset-or-env-id> [--steps N] [--seed S] [--logdir DIR] [--set key=value ...]
                [--plugin LIB ...] [--import MODULE[:FUNCTION] ...]
fastbatch train --resume DIR [--steps N]       (loads the run's own plugins and imports)
fastbatch train ... --workers N                (data-parallel: N worker processes on this host)
fastbatch train ... --cluster FILE [--task I]  (one worker of a cluster; or set TF_CONFIG)
fastbatch eval <saved-policy-dir> --env ID [--episodes K] [--video FILE] [--plugin LIB ...]
               [--import MODULE[:FUNCTION] ...]
fastbatch --includedir | --cmakedir | --version | --info

TensorFlow's C++ start-up log (CUDA probing, CPU features) is hidden unless you set
TF_CPP_MIN_LOG_LEVEL yourself (0 shows everything).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from fastbatch._tf_log import quiet_import


def _train(args) -> int:
    quiet_import("fastbatch.ppo")
    from fastbatch.ppo import PRESETS, resolve

    config = None
    if args.resume and (args.plugin or args.imports):
        raise SystemExit(
            "fastbatch train: --resume loads the plugins and imports in the run's config.json; "
            "--plugin and --import go with a new run"
        )
    if not args.resume:
        if args.target is None:  # the env may come as --set env_id=... (the defaults for it)
            given = [s.split("=", 1) for s in args.set or [] if "=" in s]
            args.target = next((v.strip() for k, v in given if k.strip() == "env_id"), None)
        if args.target is None:
            raise SystemExit(
                f"fastbatch train: give a preset ({', '.join(PRESETS)}), an env id, or "
                "--set env_id=ID"
            )
        changes = {}
        if args.steps is not None:
            changes["total_steps"] = args.steps
        if args.seed is not None:
            changes["seed"] = args.seed
        try:
            config = resolve(args.target, args.set or [], **changes)
            # Absolute paths, so that --resume and eval find the libraries from anywhere.
            plugins = _plugin_paths([*config.plugins, *(args.plugin or [])], "train")
            imports = tuple(dict.fromkeys([*config.imports, *(args.imports or [])]))
            config = config.replace(plugins=plugins, imports=imports)
        except ValueError as exc:
            raise SystemExit(f"fastbatch train: {exc}") from None
    logdir = args.resume or args.logdir
    if logdir is None:
        logdir = f"runs/{config.env_id.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    kwargs = {
        "resume": bool(args.resume),
        "total_steps": args.steps if args.resume else None,
        "progress": not args.quiet,
    }
    try:  # train() loads the config's plugins and imports (a PluginError is a ValueError)
        result = _run(args, config, logdir, kwargs)
    except (ValueError, ImportError) as exc:
        raise SystemExit(f"fastbatch train: {exc}") from None
    if result is None:  # a worker other than the chief: the chief reports
        return 0
    if not args.resume:
        print(f"run directory: {logdir}")
    print(json.dumps(result, indent=2, allow_nan=False))
    return 0


def _plugin_paths(paths: list[str], command: str) -> tuple[str, ...]:
    """Each plugin library's absolute path, once; a missing file is refused, named."""
    full = tuple(dict.fromkeys(os.path.abspath(os.path.expanduser(p)) for p in paths))
    for path in full:
        if not os.path.isfile(path):
            raise SystemExit(f"fastbatch {command}: --plugin {path}: no such file")
    return full


def _load_env_sources(plugins, imports, command: str) -> None:
    """Registers the envs of the plugin libraries and runs the imports (fastbatch.api) in this
    process; a failure is a one-line error naming the library or the import."""
    from fastbatch.api import load_env_sources
    from fastbatch.errors import PluginError

    try:
        load_env_sources(plugins, imports)
    except (PluginError, ImportError) as exc:
        raise SystemExit(f"fastbatch {command}: {exc}") from None


def _run_config(args):
    """The config of the run that wrote the policy (its config.json, beside the policy
    folder) when that run trained on --env, else None."""
    from fastbatch.ppo import PPOConfig

    config_file = Path(args.policy).parent / "config.json"
    if not config_file.is_file():
        return None
    config = PPOConfig.from_json(config_file.read_text())
    return config if config.env_id == args.env else None


def _eval_env_kwargs(args, run_config) -> dict:
    """--env-kwargs, else the env_kwargs of the run that wrote the policy when that run trained
    on the same env, else none."""
    if args.env_kwargs is not None:
        try:
            kwargs = json.loads(args.env_kwargs)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"fastbatch eval: --env-kwargs takes a JSON object ({exc})") from None
        if not isinstance(kwargs, dict):
            raise SystemExit(f"fastbatch eval: --env-kwargs takes a JSON object, got {kwargs!r}")
        return kwargs
    return dict(run_config.env_kwargs) if run_config is not None else {}


def _run(args, config, logdir, kwargs):
    """One process, a launched set of workers (--workers) or one worker of a cluster
    (--cluster or TF_CONFIG); returns the results, or None on a worker other than the chief."""
    from fastbatch.ppo import train
    from fastbatch.ppo.distribute import Cluster
    from fastbatch.ppo.launch import WorkerFailedError, launch, run_worker

    if args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    cluster_text = None
    if args.cluster:
        with open(args.cluster) as f:
            cluster_text = f.read()
    elif "TF_CONFIG" in os.environ and args.workers is None:
        cluster_text = os.environ["TF_CONFIG"]
    if args.task is not None and cluster_text is None:
        raise ValueError("--task names this worker's place in a cluster: give --cluster FILE")
    if args.workers is not None:
        if cluster_text is not None:
            raise ValueError("--workers starts its own workers: it takes no --cluster")
        try:
            return launch(config, logdir, workers=args.workers, timeout=args.timeout, **kwargs)
        except WorkerFailedError as exc:
            raise SystemExit(f"fastbatch train: {exc}") from None
        except KeyboardInterrupt:
            raise SystemExit("fastbatch train: interrupted; every worker stopped") from None
    if cluster_text is not None:
        cluster = Cluster.from_tf_config(cluster_text, args.task, args.timeout)
        result = run_worker(config, logdir, cluster, **kwargs)
        return result if cluster.rank == 0 else None
    return train(config, logdir, **kwargs)


def _eval(args) -> int:
    if args.episodes < 1:
        raise SystemExit("fastbatch eval: --episodes must be at least 1")
    if args.video_episodes < 1:
        raise SystemExit("fastbatch eval: --video-episodes must be at least 1")
    quiet_import("fastbatch.ppo")
    from fastbatch.ppo import evaluate_saved
    from fastbatch.ppo.export import load_policy
    from fastbatch.ppo.video import check_recordable, record_video

    # The envs the policy's run loaded (when it trained on --env): its imports and those given
    # here; the plugins given here, else its own (a moved library is named anew).
    run_config = _run_config(args)
    run_plugins = run_config.plugins if run_config else ()
    plugins = _plugin_paths(args.plugin or list(run_plugins), "eval")
    imports = [*(run_config.imports if run_config else ()), *(args.imports or [])]
    _load_env_sources(plugins, tuple(dict.fromkeys(imports)), "eval")
    pettingzoo = args.pettingzoo or bool(run_config and run_config.pettingzoo)
    if args.video and pettingzoo:
        raise SystemExit("fastbatch eval: --video records gymnasium envs, not PettingZoo envs yet")
    backend = run_config.backend if run_config else None
    if args.video:
        try:
            check_recordable(args.env, backend)
        except ValueError as exc:
            raise SystemExit(f"fastbatch eval: {exc}") from None
    env_kwargs = _eval_env_kwargs(args, run_config)
    returns = evaluate_saved(
        args.policy, args.env, args.episodes, seed=args.seed, pettingzoo=pettingzoo, **env_kwargs
    )
    result = {
        "env_id": args.env,
        "episodes": len(returns),
        "mean_return": sum(returns) / len(returns),
        "returns": returns,
    }
    if args.video:
        try:
            video_returns = record_video(
                load_policy(args.policy),
                args.env,
                args.video,
                args.video_episodes,
                args.seed,
                env_kwargs,
                backend,
            )
        except (ValueError, RuntimeError) as exc:
            raise SystemExit(f"fastbatch eval: {exc}") from None
        result["video"] = {"file": args.video, "returns": video_returns}
    print(json.dumps(result, indent=2, allow_nan=False))
    return 0


def _add_env_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="LIB",
        help="a native env plugin library: every env it exports is registered (repeatable; "
        "train keeps its absolute path in config.json; eval loads these instead of the run's)",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        metavar="MODULE[:FUNCTION]",
        help="a module that registers gymnasium ids, imported (and FUNCTION called) before the "
        "env is made, e.g. minatar.gym:register_envs (repeatable). ALE/, MinAtar/, MiniGrid- "
        "and BabyAI- ids import their package without it",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``fastbatch`` command's argument parser (the docs site's CLI reference prints its
    help)."""
    parser = argparse.ArgumentParser(
        prog="fastbatch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--includedir", action="store_true", help="print the public header folder")
    parser.add_argument("--cmakedir", action="store_true", help="print the CMake package folder")
    parser.add_argument("--version", action="store_true", help="print the fastbatch version")
    parser.add_argument(
        "--info",
        action="store_true",
        help="print versions, CPU features used, the build and the native libraries loaded "
        "(paste it into bug reports)",
    )
    sub = parser.add_subparsers(dest="command")
    t = sub.add_parser("train", help="train a policy with BatchPPO")
    t.add_argument("target", nargs="?", help="a preset name or an env id")
    t.add_argument(
        "--steps",
        type=int,
        help="total env steps (overrides the preset; with --resume: the new total, to extend a run)",
    )
    t.add_argument("--seed", type=int, help="seed (overrides the preset)")
    t.add_argument("--logdir", help="run directory (default: runs/<env>-<time>)")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field")
    t.add_argument(
        "--resume", metavar="DIR", help="continue the run in DIR from its latest checkpoint"
    )
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_env_source_arguments(t)
    t.add_argument(
        "--workers", type=int, help="data-parallel training with N worker processes on this host"
    )
    t.add_argument(
        "--cluster",
        metavar="FILE",
        help="run as one worker of a cluster: FILE holds TF_CONFIG JSON (default: $TF_CONFIG)",
    )
    t.add_argument("--task", type=int, help="this worker's index in the cluster (else TF_CONFIG's)")
    t.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds a worker waits for its peers before it stops with an error (300)",
    )
    e = sub.add_parser("eval", help="play episodes with an exported policy")
    e.add_argument("policy", help="a SavedModel folder written by `fastbatch train` (run/policy)")
    e.add_argument("--env", required=True, help="env id")
    e.add_argument("--episodes", type=int, default=10)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument(
        "--env-kwargs",
        metavar="JSON",
        help="the env's own parameters, a JSON object (default: the env_kwargs in the config.json "
        "of the run that wrote POLICY, if it trained on --env)",
    )
    e.add_argument(
        "--video",
        metavar="FILE",
        help="also record episodes to FILE (.gif, or .mp4 with imageio[ffmpeg]), played on one "
        "native env of that id if it draws itself (fastbatch-atari's), else on gymnasium's own",
    )
    e.add_argument("--video-episodes", type=int, default=1, help="episodes to record (1)")
    e.add_argument(
        "--pettingzoo",
        action="store_true",
        help="--env is a PettingZoo env (a module such as mpe2.simple_spread_v3): play every "
        "agent with the policy and count each agent's episodes (default: as the run that wrote "
        "POLICY, if it trained on --env)",
    )
    _add_env_source_arguments(e)
    return parser


def subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of `parser`'s subcommand `command` (``train``, ``eval``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    import fastbatch

    if args.includedir:
        print(fastbatch.get_include())
    elif args.cmakedir:
        print(fastbatch.get_cmake_dir())
    elif args.version:
        print(fastbatch.__version__)
    elif args.info:
        from fastbatch.info import report

        print(report())
    elif args.command == "train":
        return _train(args)
    elif args.command == "eval":
        return _eval(args)
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

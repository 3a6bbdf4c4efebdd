"""The `fastbatch` command: train and evaluate policies, and locate the plugin build files.

fastbatch train <preset-or-env-id> [--steps N] [--seed S] [--logdir DIR] [--set key=value ...]
fastbatch train --resume DIR
fastbatch eval <saved-policy-dir> --env ID [--episodes K]
fastbatch --includedir | --cmakedir | --version
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _train(args) -> int:
    from fastbatch.ppo import PRESETS, resolve, train

    if args.resume:
        result = train(None, args.resume, resume=True, progress=not args.quiet)
    else:
        if args.target is None:
            raise SystemExit(f"fastbatch train: give a preset ({', '.join(PRESETS)}) or an env id")
        changes = {}
        if args.steps is not None:
            changes["total_steps"] = args.steps
        if args.seed is not None:
            changes["seed"] = args.seed
        try:
            config = resolve(args.target, args.set or [], **changes)
        except ValueError as exc:
            raise SystemExit(f"fastbatch train: {exc}") from None
        logdir = (
            args.logdir
            or f"runs/{config.env_id.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
        )
        result = train(config, logdir, progress=not args.quiet)
        print(f"run directory: {logdir}")
    print(json.dumps(result, indent=2))
    return 0


def _eval(args) -> int:
    from fastbatch.ppo import evaluate_saved

    if args.episodes < 1:
        raise SystemExit("fastbatch eval: --episodes must be at least 1")

    returns = evaluate_saved(args.policy, args.env, args.episodes, seed=args.seed)
    print(
        json.dumps(
            {
                "env_id": args.env,
                "episodes": len(returns),
                "mean_return": sum(returns) / len(returns),
                "returns": returns,
            },
            indent=2,
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="fastbatch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--includedir", action="store_true", help="print the public header folder")
    parser.add_argument("--cmakedir", action="store_true", help="print the CMake package folder")
    parser.add_argument("--version", action="store_true", help="print the fastbatch version")
    sub = parser.add_subparsers(dest="command")
    t = sub.add_parser("train", help="train a policy with BatchPPO")
    t.add_argument("target", nargs="?", help="a preset name or an env id")
    t.add_argument("--steps", type=int, help="total env steps (overrides the preset)")
    t.add_argument("--seed", type=int, help="seed (overrides the preset)")
    t.add_argument("--logdir", help="run directory (default: runs/<env>-<time>)")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field")
    t.add_argument(
        "--resume", metavar="DIR", help="continue the run in DIR from its latest checkpoint"
    )
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    e = sub.add_parser("eval", help="play episodes with an exported policy")
    e.add_argument("policy", help="a SavedModel folder written by `fastbatch train` (run/policy)")
    e.add_argument("--env", required=True, help="env id")
    e.add_argument("--episodes", type=int, default=10)
    e.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import fastbatch

    if args.includedir:
        print(fastbatch.get_include())
    elif args.cmakedir:
        print(fastbatch.get_cmake_dir())
    elif args.version:
        print(fastbatch.__version__)
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

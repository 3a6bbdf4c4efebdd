"""What the gradient all-reduce costs a data-parallel BatchPPO update, measured on this host.

    python bench/allreduce.py [--workers 2] [--rounds 15] [--nets 64,64 256,256]
                              [--shape pendulum|halfcheetah] [--json FILE]
    python bench/allreduce.py --model FILE [FILE ...] [--step-us US]

For each network (the policy's and the value's hidden layers), starts `--workers` local worker
processes (the trainer's own collectives, distribute.py, over gRPC on localhost) and in each:

- ``allreduce``: one all-reduce (mean) of a float32 vector the size of the network's
  gradients, as the update issues it once a minibatch (the median over rounds of 50
  all-reduces in one graph call, divided by 50); for 2 workers that is the mean of a gather
  (distribute.py), and ``ring`` is TensorFlow's ring all-reduce of the same vector;
- ``update``: one whole update (every epoch and minibatch) of a distributed agent, and of a
  one-process agent on the same rollout, in alternating rounds (every worker runs both, so the
  load is the same), medians over `--rounds`.

The share is (all-reduces a update x one all-reduce) / distributed update. ``--shape`` takes the
preset's batch and minibatches: ``pendulum`` (16 envs x 128 steps, 10 epochs x 8
minibatches of 256) or ``halfcheetah`` (8 x 64, 20 x 8 of 64: the preset with 256x256 ReLU
nets), both on Pendulum-v1 (obs 3, action 1; halfcheetah's obs 17 and action 6 would add
~3% parameters). Results go to bench/results/allreduce.json (rank 0 prints the table).

`--model` prints the scaling model of docs/distributed.md from measured rows (the files that
runs above wrote): a ring all-reduce of S bytes over N workers takes 2(N-1) steps, each a
fixed cost a plus S/N bytes at the bandwidth B, 1/B = 1/B_link + 1/B_sw. a and B_sw (what
TensorFlow's gRPC path costs on a host) come from the two network sizes measured locally with
2 workers (2 steps of S/2: t = 2a + S/B_sw); a gains the link's one-way latency. Per update:
epochs x minibatches such all-reduces, against the update's compute measured here (one
process), which does not change with N: each worker keeps its own batch. Two workers take the
mean of a gather instead (distribute.py): one step of S bytes. ``--step-us`` replaces
the measured a with an assumed one (a what-if, e.g. for hosts whose cores are not all busy).

Its loops are its own (rounds of graph calls in each worker); medians, the run's metadata
(printed first, and kept in the JSON beside the rows) are bench/_harness.py's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import _harness as harness

SHAPES = {
    "pendulum": ["num_envs=16", "rollout_steps=128", "epochs=10", "minibatches=8"],
    "halfcheetah": [
        "num_envs=8",
        "rollout_steps=64",
        "epochs=20",
        "minibatches=8",
        "activation=relu",
    ],
}
_REPEATS = 50
# Links: usable TCP payload rate (bytes/s, ~94% of the line rate) and one-way latency (s).
LINKS = {"10GbE": (1.17e9, 15e-6), "25GbE": (2.94e9, 10e-6)}
# Presets' networks: (obs size, action size (Box: + log-std), hidden layers, GRU units,
# all-reduces per update); every preset's policy and value nets have the same hidden layers.
PRESET_NETS = {
    "cartpole": (4, 2, (64, 64), 0, 15, True),
    "pendulum": (3, 1, (64, 64), 0, 80, False),
    "pendulum_novel": (2, 1, (64,), 64, 40, False),
    "hopper": (11, 3, (64, 64), 0, 320, False),
    "ant": (105, 8, (64, 64), 0, 320, False),
    "humanoid": (348, 17, (64, 64), 0, 320, False),
    "halfcheetah": (17, 6, (256, 256), 0, 160, False),
}


def preset_params(obs: int, act: int, layers, gru: int, discrete: bool) -> int:
    """Trainable parameters of a preset's core, policy and value nets."""
    features = gru or obs
    core = 3 * gru * (obs + gru + 2) if gru else 0

    def mlp(sizes):
        return sum(a * b + b for a, b in itertools.pairwise(sizes))

    policy = mlp([features, *layers, act]) + (0 if discrete else act)
    return core + policy + mlp([features, *layers, 1])


def measured_rows(path: str) -> list[dict]:
    """The rows a run wrote to `path`: ``{"meta", "results"}``, or a bare list (older files)."""
    data = json.loads(Path(path).read_text())
    return data["results"] if isinstance(data, dict) else data


def model(files: list[str], step_us: float | None = None) -> None:
    rows = [row for f in files for row in measured_rows(f)]
    base = sorted((r for r in rows if r["shape"] == "pendulum"), key=lambda r: r["bytes"])
    small, large = base[0], base[-1]
    ring = "ring_allreduce_ms" if "ring_allreduce_ms" in small else "allreduce_ms"  # older files
    seconds_per_byte = (large[ring] - small[ring]) / 1e3 / (large["bytes"] - small["bytes"])
    step = max(0.0, (small[ring] / 1e3 - small["bytes"] * seconds_per_byte) / 2)
    print(
        f"anchors (2 local workers): a = {step * 1e6:.0f} us a step, B_sw = "
        f"{1 / seconds_per_byte / 1e9:.2f} GB/s (from {small['layers']} and {large['layers']})"
    )
    if step_us is not None:
        step = step_us * 1e-6
        print(f"what-if: a = {step_us:g} us a step")
    compute = {("pendulum", "64,64"): "pendulum", ("halfcheetah", "256,256"): "halfcheetah"}
    measured = {compute[k]: r for r in rows if (k := (r["shape"], r["layers"])) in compute}
    sizes = (2, 4, 8, 16, 32, 64)
    print(
        f"{'preset':<13}{'params':>7}{'KiB':>5}{'AR/upd':>7} link  "
        + "".join(f"{'N=' + str(n):>14}" for n in sizes)
        + "  update (1 proc)"
    )
    for name, (obs, act, layers, gru, per_update, discrete) in PRESET_NETS.items():
        params = preset_params(obs, act, layers, gru, discrete)
        size = 4 * params
        update = measured.get(name, {}).get("update_local_ms")
        for link, (bandwidth, latency) in LINKS.items():
            per_byte = 1 / bandwidth + seconds_per_byte
            cells = []
            for n in sizes:
                if n == 2:  # the mean of a gather: one step of all the bytes
                    one = step + latency + size * per_byte
                else:  # a ring all-reduce
                    one = 2 * (n - 1) * (step + latency) + 2 * (n - 1) / n * size * per_byte
                total = per_update * one * 1e3
                share = f" {total / (total + update):.0%}" if update else ""
                cells.append(f"{total:.0f}ms{share}")
            first = link == "10GbE"
            head = f"{name:<13}{params:>7}{size / 1024:>5.0f}{per_update:>7}" if first else " " * 32
            tail = f"  {update:.0f} ms" if update and first else ""
            print(f"{head} {link:<6}" + "".join(f"{c:>14}" for c in cells) + tail)


def worker(spec: dict) -> None:
    import tensorflow as tf

    from fastbatch.ppo import resolve
    from fastbatch.ppo.agent import Agent
    from fastbatch.ppo.distribute import Cluster, LocalSync, connect
    from fastbatch.ppo.train import make_env

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    sync = connect(Cluster(tuple(spec["workers"]), spec["rank"], 120.0))
    layers = spec["layers"]
    config = resolve("pendulum", [*spec["overrides"], f"policy_layers={layers}"])
    config = config.replace(value_layers=config.policy_layers)
    agents = {"local": Agent(config, make_env(config), sync=LocalSync())}
    agents["distributed"] = Agent(config, make_env(config), sync=sync)
    params = sum(int(v.shape.num_elements()) for v in agents["local"].optimizer.variables_)
    inputs = {}
    for name, agent in agents.items():
        agent.start(config.seed + spec["rank"])
        actions = agent.collect()
        t = agent.rollout.tensors
        state0, starts0 = agent._rollout_start()
        inputs[name] = (actions, t["obs"], t["reward"], t["terminated"], t["truncated"])
        inputs[name] += (t["final_obs"], state0, starts0)
    grads = tf.Variable(tf.random.normal([params]))

    def ring(x, key):  # TensorFlow's ring all-reduce, whatever `sync.mean` chooses
        return sync._collective(
            tf.raw_ops.CollectiveReduceV2, input=x, instance_key=key, merge_op="Add", final_op="Div"
        )

    def repeated(reduce):
        @tf.function(autograph=False)
        def run():
            def body(i, acc):
                return i + 1, reduce(grads + acc[:1])

            return tf.while_loop(lambda i, _: i < _REPEATS, body, (0, tf.zeros([params])))[1]

        return run

    reductions = {  # instance keys of their own
        "allreduce": repeated(lambda x: sync.mean([x], 50)[0]),
        "ring": repeated(lambda x: ring(x, 51)),
    }
    times: dict[str, list[float]] = {"allreduce": [], "ring": [], "local": [], "distributed": []}
    for round_ in range(spec["rounds"] + 1):  # round 0 traces
        sync.beat()  # the watchdog's clock: a round is this script's update
        for name, reduce_many in reductions.items():
            start = time.perf_counter()
            reduce_many().numpy()
            if round_:
                times[name].append(1000 * (time.perf_counter() - start) / _REPEATS)
        for name, agent in agents.items():
            start = time.perf_counter()
            float(agent._update_call(*inputs[name])["kl"])
            if round_:
                times[name].append(1000 * (time.perf_counter() - start))
    if spec["rank"] == 0:
        medians = harness.medians(times)
        per_update = config.epochs * config.minibatches
        row = {
            "layers": layers,
            "shape": spec["shape"],
            "workers": len(spec["workers"]),
            "params": params,
            "bytes": 4 * params,
            "allreduce_ms": medians["allreduce"],
            "ring_allreduce_ms": medians["ring"],
            "allreduces_per_update": per_update,
            "update_local_ms": medians["local"],
            "update_distributed_ms": medians["distributed"],
            "allreduce_share": per_update * medians["allreduce"] / medians["distributed"],
        }
        Path(spec["out"]).write_text(json.dumps(row))
    for agent in agents.values():
        agent.rollout.env.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--nets", nargs="+", default=["64,64", "256,256"])
    parser.add_argument("--shape", choices=list(SHAPES), default="pendulum")
    parser.add_argument("--json", default="bench/results/allreduce.json")
    parser.add_argument("--model", nargs="+", metavar="FILE", help="print the scaling model")
    parser.add_argument("--step-us", type=float, help="--model: assume this cost a ring step")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.model:
        model(args.model, args.step_us)
        return 0
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    from fastbatch.ppo.launch import free_ports

    run = harness.RunInfo(
        packages=("tensorflow",),
        workers=args.workers,
        rounds=args.rounds,
        nets=args.nets,
        shape=args.shape,
    )
    print(run.header())
    rows = []
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    for layers in args.nets:
        addresses = [f"localhost:{p}" for p in free_ports(args.workers)]
        spec = {
            "workers": addresses,
            "layers": layers,
            "shape": args.shape,
            "overrides": SHAPES[args.shape],
            "rounds": args.rounds,
            "out": str(out.with_suffix(".part")),
        }
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", json.dumps({**spec, "rank": rank})]
            )
            for rank in range(args.workers)
        ]
        if any(p.wait(timeout=600) for p in procs):
            raise SystemExit(f"a worker failed for layers {layers}")
        row = json.loads(out.with_suffix(".part").read_text())
        rows.append(row)
        print(
            f"{args.shape:<11} layers {layers:<8} params {row['params']:>7} "
            f"({row['bytes'] / 1024:6.1f} KiB), {row['workers']} workers: all-reduce "
            f"{row['allreduce_ms']:.3f} ms x {row['allreduces_per_update']} = "
            f"{row['allreduce_share']:.1%} of an update "
            f"({row['update_distributed_ms']:.1f} ms; one process: "
            f"{row['update_local_ms']:.1f} ms; TF's ring all-reduce: "
            f"{row['ring_allreduce_ms']:.3f} ms)",
            flush=True,
        )
    out.with_suffix(".part").unlink(missing_ok=True)
    print(run.footer())
    harness.write_json(out, run.meta, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

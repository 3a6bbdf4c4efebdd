"""The training run: env, agent, logging, checkpoints, evaluation, plot and export.

Layout of a run directory:
    config.json     the resolved config          events.*      TensorBoard summaries
    checkpoints/    tf.train checkpoints         curve.png     learning curve
    progress.csv    a row per update (below)     policy/       SavedModel (export.py: raw obs, state -> action, state)
    result.json     final figures (strict JSON: null where a figure is missing or NaN)

progress.csv starts with the header row ``env_steps,seconds,mean_return,episodes``: env steps
so far, wall-clock seconds since the run began (summed over resumes), the mean training return
of the last ``return_window`` episodes (``nan`` until an episode ends), and how many episodes
that mean covers (fewer than ``return_window`` until that many have ended, so a reader can hold
a curve to "the last 20 episodes" as SB3's Monitor does). Older files (no header, or one without
``episodes``) are read with ``nan`` episodes, and a resume rewrites such a file in this form.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

import fastbatch
from fastbatch import api

from .agent import Agent
from .config import PPOConfig
from .distribute import WORKER_SEED_STRIDE, Cluster, LocalSync, connect
from .export import Player, export_policy, run_episodes

PROGRESS_COLUMNS = ("env_steps", "seconds", "mean_return", "episodes")


def make_env(config: PPOConfig, num_envs: int | None = None, seed: int | None = None):
    """The config's batch of envs, routed once by `fastbatch.api.route`: a batch of (env,
    agent) rows for a PettingZoo or native multi-agent env (`fastbatch.make_agents`), else
    `fastbatch.make`'s, in SAME_STEP mode with episode statistics under ``"episode"``."""
    kwargs: dict[str, Any] = {
        **dict(config.env_kwargs),
        "autoreset_mode": "same_step",
        "seed": config.seed if seed is None else seed,
        "stats_key": "episode",
    }
    if config.num_workers is not None:
        kwargs["num_workers"] = config.num_workers
    agents = True if config.pettingzoo else None  # None: as the id is (native agents or not)
    found = api.route(config.env_id, backend=config.backend, multi_agent=agents, **kwargs)
    if found.kind == "native" and config.num_workers is None:
        # The batches of a PPO run are small next to the network's work: one env thread keeps
        # the cores for TensorFlow (threads that outnumber cores slow both down).
        found = found.with_options(num_workers=1)
    count = config.num_envs if num_envs is None else num_envs
    return (fastbatch.make_agents if found.multi_agent else fastbatch.make)(found, count)


def check_compatible(config: PPOConfig, env) -> None:
    """Refuses configs that cannot apply to the env's spaces, with the reason; warns when the
    envs restart (at every checkpoint) before an episode could reach its time limit."""
    space = env.single_action_space
    if config.init_log_std != PPOConfig().init_log_std and hasattr(space, "n"):
        raise ValueError(f"init_log_std applies to Box actions, but {config.env_id} has {space}")
    limit = env.time_limit  # the one the env applies (None: none known)
    block = config.rollout_steps * config.checkpoint_every
    if limit is not None and block < limit:
        logging.getLogger("fastbatch").warning(
            f"the envs restart every rollout_steps x checkpoint_every = {block} steps (at each "
            f"checkpoint, so that a resumed run continues exactly), before {config.env_id}'s "
            f"time limit of {limit} steps: episodes that would run to the limit never end, "
            "and the logged return leaves them out; set checkpoint_every to at least "
            f"{math.ceil(limit / config.rollout_steps)}"
        )


class _Progress:
    """A tqdm bar when available and wanted, else nothing."""

    def __init__(self, total: int, initial: int, enabled: bool):
        self.bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(
                    total=total, initial=initial, unit="step", unit_scale=True, dynamic_ncols=True
                )
            except ImportError:
                pass

    def update(self, n: int, **fields) -> None:
        if self.bar is not None:
            self.bar.set_postfix(fields, refresh=False)
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def train(
    config: PPOConfig,
    logdir: str | Path,
    *,
    resume: bool = False,
    total_steps: int | None = None,
    progress: bool = True,
    max_updates: int | None = None,
    cluster: Cluster | None = None,
) -> dict[str, Any]:
    """Trains a policy as `config` says, writing everything to `logdir`.

    The envs restart from a seed derived from the update count at every checkpoint boundary, so
    a resumed run follows the same trajectory as an uninterrupted one. When the run is complete
    the chief evaluates the policy, exports it to ``<logdir>/policy`` (`fastbatch.ppo.export`)
    and plots ``curve.png``.

    Args:
        config: The run's config (with ``resume=True`` the one in ``logdir`` is used instead).
        logdir: The run directory (made if missing): config.json, checkpoints, progress.csv,
            TensorBoard summaries, result.json, the exported policy.
        resume: Restore the latest checkpoint in ``logdir`` (weights, optimiser, normalisers,
            KL penalty, counters) and continue the run.
        total_steps: Resume only: a new target, for example to extend a finished run.
        progress: Show a tqdm progress bar (when tqdm is installed).
        max_updates: Stop after this many updates in all (for tests).
        cluster: This process is one worker of a data-parallel run (distribute.py): it steps
            its own envs and exchanges gradients and statistics with the others;
            ``total_steps`` and the logged steps count every worker's env steps. Only the chief
            (rank 0) writes `logdir`; every worker returns the results.

    Returns:
        The results, also written to result.json (NaN and missing figures are None there):
        ``env_id``, ``updates``, ``env_steps``, ``seconds``, ``train_return`` (the mean of the
        last ``return_window`` episodes), ``workers``, ``global_batch_size`` and, once the run
        is complete, ``eval_return``.

    Raises:
        FileNotFoundError: ``resume=True`` with no config.json or no checkpoint in ``logdir``.
        ValueError: ``total_steps`` without ``resume``, or below the env steps already done;
            a config that does not fit the env's spaces.
        PluginError: A library of ``config.plugins`` does not load.
        ImportError: A module of ``config.imports`` does not import.
        UnknownEnvError: No backend knows ``config.env_id``.
        RuntimeError: With a cluster: a worker could not join, or a peer was lost
            (``PeerLostError``).
    """
    start = time.perf_counter()  # the run's clock includes building the envs and the agent
    logdir = Path(logdir)
    chief = cluster is None or cluster.rank == 0
    if chief:
        logdir.mkdir(parents=True, exist_ok=True)
    config_file = logdir / "config.json"
    if resume:
        if not config_file.exists():
            raise FileNotFoundError(f"nothing to resume in {logdir}: no config.json")
        config = PPOConfig.from_json(config_file.read_text())
        if total_steps is not None:
            config = config.replace(total_steps=total_steps)  # checked once restored
    elif total_steps is not None:
        raise ValueError("total_steps applies to resume=True; set config.total_steps instead")
    elif chief:
        config_file.write_text(config.to_json())
    # The config's plugin libraries and imports, which register its env (once a process).
    api.load_env_sources(config.plugins, config.imports)
    tf.random.set_seed(config.seed)
    for threads, setter in (
        (config.tf_inter_op_threads, tf.config.threading.set_inter_op_parallelism_threads),
        (config.tf_intra_op_threads, tf.config.threading.set_intra_op_parallelism_threads),
    ):
        if threads:
            try:
                setter(threads)
            except RuntimeError:  # TensorFlow already started in this process: keep its setting
                pass
    sync = connect(cluster) if cluster is not None else LocalSync()  # before any other TF op
    try:  # a failure before the loop must stop the watchdog too (it ends the process)
        return _run(config, logdir, sync, resume, total_steps, progress, max_updates, start)
    finally:
        sync.close()


def _run(config, logdir, sync, resume, total_steps, progress, max_updates, start) -> dict:
    """`train` from the envs on, once connected (`sync`)."""
    chief = sync.is_chief
    config_file = logdir / "config.json"
    env = make_env(config)
    check_compatible(config, env)
    agent = Agent(config, env, sync=sync)
    checkpoint = tf.train.Checkpoint(agent=agent)
    manager = tf.train.CheckpointManager(checkpoint, logdir / "checkpoints", max_to_keep=3)
    if resume and chief:
        if manager.latest_checkpoint is None:
            raise FileNotFoundError(f"nothing to resume in {logdir}: no checkpoint")
        checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
        done_steps = int(agent.env_steps.numpy())
        if total_steps is not None:
            if total_steps < done_steps:
                env.close()
                raise ValueError(
                    f"the run in {logdir} has done {done_steps} env steps: a new total of "
                    f"{total_steps} would shorten it; give at least {done_steps}"
                )
            config_file.write_text(config.to_json())  # the new target, for later resumes
    # Every worker starts from the chief's values (its initial or restored ones); the envs'
    # own state (running returns, recurrent states) stays each worker's.
    own = {id(v) for v in (agent.running_return, *_recurrent_state(agent))}
    sync.broadcast([v for v in agent.variables if id(v) not in own])
    if not chief:
        logdir = Path(tempfile.mkdtemp(prefix=f"fastbatch-worker{sync.rank}-"))
    summaries = _SummaryWriter(logdir)
    steps_per_update = agent.batch_size * sync.world_size  # batch rows: a batch of agents' too
    done_updates = int(agent.updates.numpy())
    # The updates left to reach total_steps at this run's batch (a resume may change the
    # number of workers, so the updates done may have had another size).
    left = math.ceil(max(0, config.total_steps - int(agent.env_steps.numpy())) / steps_per_update)
    total_updates = done_updates + left
    curve_file = logdir / "progress.csv"
    if not resume and curve_file.exists():
        curve_file.unlink()
    _upgrade_progress(curve_file)  # a resume appends rows of today's columns
    bar = _Progress(total_updates * steps_per_update, done_updates * steps_per_update, progress)
    elapsed_before = _elapsed(logdir) if resume else 0.0
    metrics: dict[str, float] = {}
    curve_out = curve_file.open("a", newline="", buffering=1)  # line-buffered: a row per update
    curve = csv.writer(curve_out)
    if curve_out.tell() == 0:
        curve.writerow(PROGRESS_COLUMNS)
    started = False  # the envs restart at each checkpoint boundary, and where this call begins
    try:
        while done_updates < total_updates and (max_updates is None or done_updates < max_updates):
            # A resume from the final checkpoint of a run whose length was not a multiple of
            # checkpoint_every begins off a boundary: its envs restart there.
            if done_updates % config.checkpoint_every == 0 or not started:
                started = True
                block = done_updates // config.checkpoint_every
                agent.start(config.seed + 1_000_003 * block + WORKER_SEED_STRIDE * sync.rank)
            t0 = time.perf_counter()
            actions = agent.collect()
            t1 = time.perf_counter()
            metrics = {k: float(v) for k, v in agent.update(actions).items()}
            t2 = time.perf_counter()
            sync.beat()
            done_updates = int(agent.updates.numpy())
            env_steps = int(agent.env_steps.numpy())
            window, lengths = sync.gather_episodes(
                agent.rollout.episode_returns, agent.rollout.episode_lengths, config.return_window
            )
            mean_return = float(np.mean(window)) if window else float("nan")
            seconds = elapsed_before + time.perf_counter() - start
            metrics.update(
                {
                    "sps": steps_per_update / (t2 - t0),
                    "sps/collect": steps_per_update / (t1 - t0),
                    "episode/return": mean_return,
                    "episode/length": float(np.mean(lengths)) if window else float("nan"),
                }
            )
            for name, value in agent.rollout.agent_returns(config.return_window).items():
                metrics[f"episode/return/{name}"] = value  # this worker's episodes
            summaries(env_steps, metrics)
            curve.writerow(_progress_row(env_steps, seconds, mean_return, len(window)))
            bar.update(steps_per_update, ret=f"{mean_return:.1f}", sps=f"{metrics['sps']:.0f}")
            if config.anneal_lr:
                agent.optimizer.lr.assign(
                    config.learning_rate * (1.0 - done_updates / total_updates)
                )
            if chief and (
                done_updates % config.checkpoint_every == 0 or done_updates == total_updates
            ):
                manager.save(checkpoint_number=done_updates)
    finally:
        sync.close()
        bar.close()
        summaries.close()
        curve_out.close()
    rows = read_progress(curve_file)  # a resume with nothing left to do still has a return
    result = {
        "env_id": config.env_id,
        "updates": done_updates,
        "env_steps": int(agent.env_steps.numpy()),
        "seconds": elapsed_before + time.perf_counter() - start,
        "train_return": _finite(metrics.get("episode/return", rows[-1, 2] if len(rows) else None)),
        "workers": sync.world_size,
        "global_batch_size": steps_per_update,
    }
    if not chief:
        env.close()
        shutil.rmtree(logdir, ignore_errors=True)
        return result
    if done_updates >= total_updates:
        eval_return = evaluate_agent(agent, config) if config.eval_episodes else None
        result["eval_return"] = _finite(eval_return)
        export_policy(agent, logdir / "policy")
        plot_curve(curve_file, logdir / "curve.png", config)
    (logdir / "result.json").write_text(json.dumps(result, indent=2, allow_nan=False))
    env.close()
    return result


def _recurrent_state(agent: Agent) -> tuple:
    return (agent.rollout_state, agent.rollout_starts) if agent.recurrent else ()


def _finite(value: Any) -> float | None:
    """JSON has no NaN or infinity: such a figure, or a missing one, is None (null)."""
    return float(value) if value is not None and math.isfinite(value) else None


class _SummaryWriter:
    """TensorBoard scalars through TensorBoard's own event-file writer: one Event record per
    update, built in Python (~50 us), where TensorFlow's summary ops cost 0.7-1.2 ms per update
    even from one graph call (a tenth of a CartPole update). NaN values (the return before the
    first episode ends) are skipped."""

    def __init__(self, logdir: Path):
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        self._writer = EventFileWriter(str(logdir))

    def __call__(self, step: int, metrics: dict[str, float]) -> None:
        values = [
            self._summary.Value(tag=k, simple_value=v)
            for k, v in metrics.items()
            if not math.isnan(v)
        ]
        self._writer.add_event(
            self._event(summary=self._summary(value=values), step=step, wall_time=time.time())
        )

    def close(self) -> None:
        self._writer.close()


def read_progress(csv_file: Path) -> np.ndarray:
    """The rows of a progress.csv as floats ``[rows, 4]`` (see PROGRESS_COLUMNS); a file written
    before a column existed (no header, or a header without ``episodes``) reads ``nan`` there.
    No file gives no rows."""
    lines = csv_file.read_text().split() if csv_file.exists() else []
    if lines and not lines[0][:1].isdigit():
        lines = lines[1:]  # the header row, of any version
    rows = [[float(x) for x in line.split(",")] for line in lines]
    rows = [row + [math.nan] * (len(PROGRESS_COLUMNS) - len(row)) for row in rows]
    return np.array(rows, dtype=np.float64).reshape(-1, len(PROGRESS_COLUMNS))


def _upgrade_progress(csv_file: Path) -> None:
    """Rewrites a progress.csv of an older form (see read_progress) with PROGRESS_COLUMNS, so
    that the rows a resume appends match its header."""
    if not csv_file.exists():
        return
    with csv_file.open(newline="") as existing:
        if existing.readline().rstrip("\r\n") == ",".join(PROGRESS_COLUMNS):
            return
    rows = read_progress(csv_file)
    with csv_file.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(PROGRESS_COLUMNS)
        writer.writerows(_progress_row(*row) for row in rows)


def _progress_row(env_steps, seconds, mean_return, episodes) -> list:
    """One progress.csv row (PROGRESS_COLUMNS) as written; `episodes` nan where not known."""
    count = "nan" if math.isnan(episodes) else int(episodes)
    return [int(env_steps), f"{seconds:.3f}", f"{mean_return:.4f}", count]


def _elapsed(logdir: Path) -> float:
    rows = read_progress(logdir / "progress.csv")
    return float(rows[-1, 1]) if len(rows) else 0.0


def evaluate_agent(agent: Agent, config: PPOConfig, episodes: int | None = None) -> float:
    """Mean return of deterministic actions over `episodes` episodes on fresh envs."""
    episodes = episodes or config.eval_episodes
    env = make_env(config, num_envs=min(episodes, 16), seed=config.seed + 10_000)
    act = tf.function(agent.act, autograph=False)

    def step(obs, state):
        action, state = act(tf.constant(obs), tf.constant(state), tf.zeros([len(obs)], tf.bool))
        return action.numpy(), state.numpy()

    initial = lambda batch: agent.initial_state(batch).numpy()  # noqa: E731
    player = Player(step, initial, env.single_observation_space.dtype)
    returns = run_episodes(env, player, episodes)
    env.close()
    return float(np.mean(returns))


def plot_curve(csv_file: Path, png: Path, config: PPOConfig) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = read_progress(csv_file)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(data[:, 0], data[:, 2], label="mean training return")
    ax.set_xlabel("env steps")
    ax.set_ylabel(f"return (last {config.return_window} episodes)")
    ax.set_title(f"BatchPPO on {config.env_id}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)

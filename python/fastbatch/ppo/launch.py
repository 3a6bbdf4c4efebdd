"""Worker processes of a data-parallel run: starting them on this host, and their end.

`launch` (``fastbatch train --workers N``) picks N free localhost ports, starts N workers
(`_WORKER_MAIN` with a JSON spec: each a whole trainer with its cluster and rank) and
watches them until they end:

- a worker that exits non-zero or is killed ends the run: the launcher stops the others
  (SIGTERM, then SIGKILL after ``_GRACE`` s) and raises `WorkerFailedError` naming it (rank,
  pid, exit status or signal) with the end of its log. A worker that stopped because it lost
  a peer exits with `PEER_LOST_EXIT`; it is named only when no worker failed on its own;
- Ctrl-C, or any error in the launcher, stops every worker the same way;
- workers die with the launcher: each asks the kernel for SIGKILL when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``, Linux) and also polls its parent's pid (other systems).

The chief (rank 0) writes to the launcher's terminal; worker r > 0 to
``<logdir>/workers/worker-<r>.log``. `run_worker` is one worker's side, also what
``fastbatch train --cluster FILE`` runs on hosts that the user starts.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fastbatch._tf_log import TF_STARTUP_NOTICE

from .config import PPOConfig
from .distribute import PEER_LOST_EXIT, Cluster

__all__ = ["WorkerFailedError", "launch", "run_worker"]

_GRACE = 3.0  # seconds between SIGTERM and SIGKILL when stopping workers
_POLL = 0.05  # seconds between looks at the workers
# A worker's entry: TensorFlow imported as the CLI imports it (its start-up notices filtered).
_WORKER_MAIN = (
    "import sys; from fastbatch._tf_log import quiet_import; quiet_import('fastbatch.ppo'); "
    "from fastbatch.ppo.launch import _main; sys.exit(_main(sys.argv[1:]))"
)


class WorkerFailedError(RuntimeError):
    """A worker of a launched run exited non-zero or was killed; the message names it."""


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on localhost now (held open together while chosen)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def launch(
    config: PPOConfig | None,
    logdir: str | Path,
    *,
    workers: int,
    resume: bool = False,
    total_steps: int | None = None,
    timeout: float = 300.0,
    progress: bool = True,
) -> dict[str, Any]:
    """Trains with `workers` worker processes on this host (see the module docstring); returns
    the chief's results. `config`, `resume` and `total_steps` as `train` takes them."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    logdir = Path(logdir)
    log_folder = logdir / "workers"
    log_folder.mkdir(parents=True, exist_ok=True)
    addresses = [f"localhost:{port}" for port in free_ports(workers)]
    procs: list[subprocess.Popen] = []
    logs: list[Path | None] = []
    try:
        for rank in range(workers):
            spec = {
                "config": None if config is None else config.to_json(),
                "logdir": str(logdir),
                "resume": resume,
                "total_steps": total_steps,
                "workers": addresses,
                "rank": rank,
                "timeout": timeout,
                "progress": progress and rank == 0,
                "parent": os.getpid(),
            }
            log = None if rank == 0 else log_folder / f"worker-{rank}.log"
            out = None if log is None else log.open("w")
            env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
            try:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _WORKER_MAIN, json.dumps(spec)],
                        stdout=out,
                        stderr=None if out is None else subprocess.STDOUT,
                        env=env,
                    )
                )
            finally:
                if out is not None:
                    out.close()
            logs.append(log)
        _watch(procs, logs)
    finally:
        _stop(procs)
    return json.loads((logdir / "result.json").read_text())


def _watch(procs: list[subprocess.Popen], logs: list[Path | None]) -> None:
    """Returns when every worker has exited 0; raises WorkerFailedError at the first failure."""
    while True:
        codes = [p.poll() for p in procs]
        failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            # A worker that lost a peer is a witness; one that failed on its own is the cause.
            causes = [r for r in failed if codes[r] != PEER_LOST_EXIT] or failed
            lines = [_describe(r, procs[r], logs[r]) for r in causes]
            if all(codes[r] == PEER_LOST_EXIT for r in causes):
                alive = [r for r, c in enumerate(codes) if c is None]
                lines += [
                    f"worker {r} (pid {procs[r].pid}) was still running (stalled?)" for r in alive
                ]
            raise WorkerFailedError("; ".join(lines))
        if all(c == 0 for c in codes):
            return
        time.sleep(_POLL)


def _describe(rank: int, proc: subprocess.Popen, log: Path | None) -> str:
    code = proc.returncode
    if code < 0:
        how = f"was killed by {signal.Signals(-code).name}"
    elif code == PEER_LOST_EXIT:
        how = "stopped: it lost contact with a peer"
    else:
        how = f"exited with status {code}"
    text = f"worker {rank} (pid {proc.pid}) {how}"
    if log is not None and log.exists():
        lines = log.read_text(errors="replace").strip().splitlines()
        tail = [line for line in lines if not TF_STARTUP_NOTICE.fullmatch(line)][-5:]
        text += f" (log {log}" + (": ..." + " | ".join(tail) if tail else "") + ")"
    return text


def _stop(procs: list[subprocess.Popen]) -> None:
    """Ends every worker still running: SIGTERM, then SIGKILL after _GRACE seconds."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        p.terminate()
    deadline = time.monotonic() + _GRACE
    for p in running:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def die_with_parent(parent: int) -> None:
    """Ends this process when `parent` ends: the kernel's parent-death signal where there is
    one (Linux), and a thread that polls the parent pid in any case."""
    if sys.platform.startswith("linux"):
        try:
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="fastbatch-parent-watch").start()


def run_worker(config: PPOConfig | None, logdir, cluster: Cluster, **train_kwargs) -> dict:
    """Runs one worker of `cluster`; a lost peer ends the process with a one-line reason on
    stderr and status PEER_LOST_EXIT."""
    import tensorflow as tf

    from .distribute import PeerLostError, describe_failure
    from .train import train

    lost = (
        tf.errors.UnavailableError,
        tf.errors.DeadlineExceededError,
        tf.errors.AbortedError,
        tf.errors.CancelledError,
        PeerLostError,
    )
    try:
        return train(config, logdir, cluster=cluster, **train_kwargs)
    except lost as exc:
        print(f"fastbatch train: {describe_failure(exc, cluster)}", file=sys.stderr, flush=True)
        sys.stderr.flush()
        os._exit(PEER_LOST_EXIT)  # no interpreter teardown: TensorFlow's may wait for peers


def _main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    die_with_parent(spec["parent"])
    config = None if spec["config"] is None else PPOConfig.from_json(spec["config"])
    cluster = Cluster(tuple(spec["workers"]), spec["rank"], spec["timeout"])
    run_worker(
        config,
        spec["logdir"],
        cluster,
        resume=spec["resume"],
        total_steps=spec["total_steps"],
        progress=spec["progress"],
    )
    return 0

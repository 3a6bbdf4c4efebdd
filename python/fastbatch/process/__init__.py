"""The process backend: Python envs (any gymnasium env) stepped in worker processes that write
into shared-memory buffers laid out like the native batch buffers.

`vector` is the facade (`ProcessVectorEnv`); `worker_set` starts, drives and restarts the
workers; `spawn` starts one and runs its handshake; `block` is one worker's block of envs;
`spaces` decides which spaces travel through shared memory; `results` reads results out of it;
`gym_registry` carries the caller's gymnasium registry to the workers; `shm` is the shared layout
and the pipe messages; `worker` is the worker program (``python -m fastbatch.process.worker``).
"""

from fastbatch.process.factories import env_factories
from fastbatch.process.vector import ProcessVectorEnv

__all__ = ["ProcessVectorEnv", "env_factories"]

"""Multi-agent envs as batches, every (env, agent) pair one row of the batch (docs/multi-agent.md):
PettingZoo ``ParallelEnv`` envs stepped by the process backend (`AgentsVectorEnv`) and native
multi-agent envs stepped by the C++ pool (`NativeAgentsVectorEnv`), both on the vector contract
of `fastbatch.make`'s envs; `fastbatch.make_agents` builds either from `fastbatch.api`'s route.

`spec` reads a ParallelEnv's agents and spaces (`AgentSpec`); `adapter` is one ParallelEnv as a
gymnasium env of fixed-shape arrays (`AgentsEnv`), what the worker processes step; `vector` is
the process batch (`AgentsVectorEnv`, `make_agents`); `native` the C++ one; `facade` is the
PettingZoo parallel API over a batch of one env (`ParallelFacade`, `parallel_env`; it imports
pettingzoo, so it is loaded on first use).
"""

from __future__ import annotations

from typing import Any

from fastbatch.agents.native import NativeAgentsVectorEnv
from fastbatch.agents.spec import AgentSpec
from fastbatch.agents.vector import AgentsVectorEnv, make_agents

__all__ = [
    "AgentSpec",
    "AgentsVectorEnv",
    "NativeAgentsVectorEnv",
    "ParallelFacade",
    "make_agents",
    "parallel_env",
]


def __getattr__(name: str) -> Any:
    if name in ("ParallelFacade", "parallel_env"):
        from fastbatch.agents import facade

        return getattr(facade, name)
    raise AttributeError(f"module 'fastbatch.agents' has no attribute {name!r}")

"""Fixtures shared by the test modules (helper envs and backends live in tests/envs.py)."""

from __future__ import annotations

import pytest

from fastbatch import _gl
from tests.envs import BACKENDS, Backend

# Tests draw MuJoCo frames and run TensorFlow in this one process, in whatever order they run:
# Mesa is loaded as fastbatch loads it before any of them can (fastbatch._gl).
_gl.isolate()
from tests.native_builds import build_example


def _closing(name: str):
    made: list = []
    yield BACKENDS[name].recording(made)
    for env in made:
        env.close()


def _params(names):
    # Worker processes are not run under ThreadSanitizer (.ci/run): the process backend's
    # cases leave that pass by their marker.
    return [pytest.param(n, marks=pytest.mark.no_tsan) if n == "process" else n for n in names]


@pytest.fixture(params=_params(BACKENDS))
def backend(request) -> Backend:
    """Each backend in turn, as gymnasium's own tests parametrize over vectorisers: "native"
    (C++ threads), "native-async" (the native async pool stepped in whole batches) and
    "process" (the Python twin in worker processes). Envs it made are closed afterwards."""
    yield from _closing(request.param)


@pytest.fixture(params=_params(["native-async", "process"]))
def async_backend(request) -> Backend:
    """Each backend with an async mode; `make_async(num_envs, batch_size, ...)` builds it
    (process: one env per worker, so any batch_size is whole blocks), `make` its sync twin."""
    yield from _closing("native" if request.param == "native-async" else "process")


@pytest.fixture
def all_backends() -> dict[str, Backend]:
    """Every backend at once, for tests that compare backends with each other."""
    made: list = []
    yield {name: backend.recording(made) for name, backend in BACKENDS.items()}
    for env in made:
        env.close()


@pytest.fixture(scope="session")
def readme_example(tmp_path_factory) -> dict:
    """examples/native_env_plugin built from an empty folder as README.md says, once a session:
    each library by its target name ("point_reacher", "grid_chase", "goal_cells") and the
    build's verbose output under "log"."""
    return build_example(tmp_path_factory.mktemp("readme_example"))

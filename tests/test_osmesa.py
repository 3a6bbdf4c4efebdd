"""OSMesa, the rendering backend where EGL is missing (fastbatch/mujoco_render.h,
src/cpp/gl/osmesa_proc.cc, fastbatch._gl): frames equal EGL's (both Mesa's llvmpipe), the
fallback when MUJOCO_GL is unset and there is no EGL, and a CNN PPO update beside pixel envs with
TensorFlow imported first.

Needs libOSMesa.so.8 (Debian/Ubuntu: libosmesa6; .ci/run installs it and sets
FASTBATCH_REQUIRE_OSMESA=1, so these fail rather than skip there). Left out of the sanitizer
passes, as the other pixel tests.
"""

from __future__ import annotations

import ctypes.util
import json
import os

import numpy as np
import pytest

from tests.egl import has_egl
from tests.test_pixels import _TRAIN_WITH_PIXELS, _run


def _has_osmesa() -> bool:
    return ctypes.util.find_library("OSMesa") is not None


pytestmark = [
    pytest.mark.no_sanitizer,
    pytest.mark.skipif(
        not _has_osmesa() and os.environ.get("FASTBATCH_REQUIRE_OSMESA") != "1",
        reason="no OSMesa on this machine (libOSMesa.so.8)",
    ),
]

# Frames of a v5 env and a dm_control task, match and fast visuals, written to an .npy; then the
# backend used, as fastbatch._gl left MUJOCO_GL.
_FRAMES = """
    import os, sys
    import numpy as np
    {prelude}
    import fastbatch
    frames = []
    for env_id, camera in [("HalfCheetah-v5", {{"camera_id": -1}}),
                           ("dm_control/cheetah-run-v0", {{"camera": 0}})]:
        for visuals in ("match", "fast"):
            env = fastbatch.make(env_id, 2, pixels=True, width=48, height=40, visuals=visuals,
                                 seed=3, **camera)
            obs, _ = env.reset(seed=3)
            drawn = [obs]
            space = env.single_action_space
            for _ in range(3):
                obs, *_ = env.step(np.full((2, *space.shape), 0.3, space.dtype))
                drawn.append(obs)
            frames.append(np.stack(drawn))
            env.close()
    np.save(sys.argv[1], np.stack(frames))
    print(os.environ.get("MUJOCO_GL"))
"""


def _frames(tmp_path, name, prelude="", **env_vars):
    out = tmp_path / f"{name}.npy"
    code = _FRAMES.format(prelude=prelude).replace("sys.argv[1]", repr(str(out)))
    done = _run(code, **env_vars)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(out), done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not has_egl(), reason="no EGL to compare with")
def test_osmesa_frames_equal_egl_frames(tmp_path):
    egl, _ = _frames(tmp_path, "egl", MUJOCO_GL="egl")
    osmesa, backend = _frames(tmp_path, "osmesa", MUJOCO_GL="osmesa")
    assert backend == "osmesa"
    np.testing.assert_array_equal(osmesa, egl)
    assert osmesa.std() > 0


def test_without_egl_fastbatch_draws_with_osmesa(tmp_path):
    """MUJOCO_GL unset on a machine without EGL (here: EGL hidden from fastbatch._gl's lookup):
    fastbatch sets MUJOCO_GL=osmesa and draws."""
    hide_egl = (
        "import ctypes.util; _find = ctypes.util.find_library; "
        "ctypes.util.find_library = lambda name: None if name == 'EGL' else _find(name)"
    )
    frames, backend = _frames(tmp_path, "fallback", prelude=hide_egl, MUJOCO_GL=None)
    assert backend == "osmesa" and frames.std() > 0


def test_pixel_ppo_update_beside_tensorflow_with_osmesa():
    """TensorFlow imported first, then pixel envs drawn with OSMesa and a CNN PPO update. (The
    other order is not supported with OSMesa: `import mujoco` loads libOSMesa RTLD_GLOBAL through
    PyOpenGL, which puts Mesa's LLVM in the global scope before TensorFlow's library binds.)"""
    pytest.importorskip("tensorflow")
    done = _run(_TRAIN_WITH_PIXELS.replace("sys.argv[1]", repr("tensorflow")), MUJOCO_GL="osmesa")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["steps"] == 64 and out["before"] > 0 and out["after"] > 0

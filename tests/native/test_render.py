"""Native envs that draw themselves (ABI version 7: an env class with ``Render`` and a frame in its
spec): ``render_mode="rgb_array"``, ``render()``, ``call("render")``, the single-env API and the
mistakes a plugin author can make, on tests/plugins/render_envs.cc's Painter-v0."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest

import fastbatch
from tests.native_builds import mistake_builder

pytestmark = pytest.mark.engine

SOURCE = Path(__file__).parents[1] / "plugins" / "render_envs.cc"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """library(mistake=0) -> the path of render_envs.cc built with -DMISTAKE=mistake."""
    return mistake_builder(tmp_path_factory, SOURCE)


@pytest.fixture
def painter(library):
    fastbatch.register_native_env("Painter-v0", library(), replace=True)
    return "Painter-v0"


def expected_frame(count: int, mark: int, height: int = 4, width: int = 6) -> np.ndarray:
    rows = np.arange(height)[:, None] + count
    cols = np.arange(width)[None, :] + count
    frame = np.empty((height, width, 3), np.uint8)
    frame[..., 0] = rows.astype(np.uint8)
    frame[..., 1] = cols.astype(np.uint8)
    frame[..., 2] = mark
    return frame


def test_every_env_draws_its_own_frame(painter):
    env = fastbatch.make(painter, 3, render_mode="rgb_array", seed=5)
    assert env.metadata["render_modes"] == ["rgb_array"] and env.metadata["render_fps"] == 12.5
    env.reset(seed=5)
    marks = [int(frame[0, 0, 2]) for frame in env.render()]
    # The mark is the env's first draw after seeding: numpy's integers(256) for seed 5 + i.
    assert marks == [int(np.random.default_rng(5 + i).integers(256)) for i in range(3)]
    env.step(np.array([1, 0, 1]))
    env.step(np.array([1, 0, 0]))
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    for frame, count, mark in zip(frames, [2, 0, 1], marks):
        assert frame.dtype == np.uint8 and frame.flags.c_contiguous
        np.testing.assert_array_equal(frame, expected_frame(count, mark))
    # call("render") and the frames are fresh arrays (a later step changes no earlier frame).
    called = env.call("render")
    env.step(np.array([1, 1, 1]))
    for frame, again, count, mark in zip(frames, called, [2, 0, 1], marks):
        np.testing.assert_array_equal(again, frame)
        np.testing.assert_array_equal(frame, expected_frame(count, mark))
    env.close()


def test_the_frame_size_may_come_from_the_params(painter):
    env = fastbatch.make(painter, 2, render_mode="rgb_array", height=2, width=9)
    env.reset(seed=0)
    assert [frame.shape for frame in env.render()] == [(2, 9, 3)] * 2
    env.close()
    with pytest.raises(ValueError, match=r"Render\(height, width, fps\) needs 1 to 16384 pixels"):
        fastbatch.make(painter, 1, height=0)


def test_without_a_render_mode_render_gives_none(painter):
    env = fastbatch.make(painter, 2)
    env.reset(seed=0)
    assert env.render() is None
    env.close()


def test_a_failing_render_raises_env_error_naming_the_env(painter):
    env = fastbatch.make(painter, 2, render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.array([0, 2]))
    with pytest.raises(fastbatch.EnvError, match="env 1: render failed: the painter was asked"):
        env.render()
    env.step(np.array([0, 0]))  # the pool steps on
    assert len(env.render()) == 2
    env.close()


def test_an_env_in_flight_is_not_drawn_until_received(painter):
    env = fastbatch.make(painter, 4, batch_size=2, num_workers=1, render_mode="rgb_array")
    env.reset(seed=0)
    env.send(np.ones(4, np.int64))
    _, _, _, _, info = env.recv()
    in_flight = int(np.setdiff1d(np.arange(4), info["env_id"])[0])
    with pytest.raises(fastbatch.AsyncStateError, match=f"env {in_flight} is in flight"):
        env.render()
    env.send(np.ones(2, np.int64), env_ids=info["env_id"])
    env.recv(), env.recv()  # nothing in flight
    assert [frame.shape for frame in env.render()] == [(4, 6, 3)] * 4
    env.close()


def test_the_single_env_api_renders(painter):
    env = gymnasium.make(f"fastbatch/{painter}", render_mode="rgb_array")
    env.reset(seed=1)
    env.step(1)
    frame = env.render()
    mark = int(np.random.default_rng(1).integers(256))
    np.testing.assert_array_equal(frame, expected_frame(1, mark))
    env.close()


def test_a_self_drawing_env_takes_no_renderer(library):
    with pytest.raises(ValueError, match="draws itself .*takes no renderer="):
        fastbatch.register_native_env("Painter-v0", library(), replace=True, renderer="CartPole-v1")


def test_an_env_that_does_not_render_refuses_a_render_mode():
    with pytest.raises(ValueError, match="_TestCounter-v0 does not render .*has Render"):
        fastbatch.make("_TestCounter-v0", 1, render_mode="rgb_array")


@pytest.mark.parametrize(
    "mistake, match",
    [
        (1, r"has `Render\(uint8_t\* rgb\)` but the spec declares no frame"),
        (2, r"declares a frame \(Render\(height, width\)\) but the env has no `void Render"),
        (3, r"Render\(height, width, fps\) needs 1 to 16384 pixels a side .*got 0 x 5"),
    ],
)
def test_mistakes_are_refused_at_registration(library, mistake, match):
    with pytest.raises(fastbatch.PluginError, match=match):
        fastbatch.register_native_env("Painter-v0", library(mistake), replace=True)

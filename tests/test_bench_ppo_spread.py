"""bench/ppo_spread.py without training: its scripted controller, the bar every PPO run of the
native Spread-v0 is measured against, reads the env right (it beats random by far, and it is
what it claims: each agent heads for its own landmark of the best assignment)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np

_BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# bench/ is not a package: its scripts import `_harness` by that name, from their own folder.
if "_harness" not in sys.modules:
    _load("_harness", _BENCH / "_harness.py")
spread = _load("bench_ppo_spread", _BENCH / "ppo_spread.py")


def test_the_scripted_controller_beats_random_by_far():
    random_return = spread.play("random", 300)
    scripted_return = spread.play("scripted", 300)
    assert -30 < random_return < -20  # 25 steps of ~-1: agents wander off the landmarks
    assert scripted_return > random_return + 15, (random_return, scripted_return)


def test_each_agent_moves_towards_its_landmark_of_the_best_assignment():
    # One env, agents at rest: agent 0 at (0, 0) with landmarks at (+0.5, 0) and (0, -0.5); agent
    # 1 at (0.5, 0.1). The best assignment gives agent 1 the landmark at (0.5, 0) (0.1 away) and
    # agent 0 the one below it: agent 0 pushes down (3), agent 1 too (its landmark is below).
    def row(position, marks, other):
        p = np.array(position)
        rel = [np.subtract(m, p) for m in marks]
        return np.concatenate([[0.0, 0.0], p, *rel, np.subtract(other, p)]).astype(np.float32)

    marks = [(0.5, 0.0), (0.0, -0.5)]
    obs = np.stack([row((0.0, 0.0), marks, (0.5, 0.1)), row((0.5, 0.1), marks, (0.0, 0.0))])
    np.testing.assert_array_equal(spread.scripted_actions(obs, 2), [3, 3])

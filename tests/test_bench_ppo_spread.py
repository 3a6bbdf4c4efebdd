"""bench/ppo_spread.py without training: its scripted controller, the bar every PPO run of the
native Spread-v0 is measured against, reads the env right (it beats random by far, and it is
what it claims: each agent heads for its own landmark of the best assignment)."""

import numpy as np

from tests.bench_scripts import load_bench_script

spread = load_bench_script("ppo_spread")


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

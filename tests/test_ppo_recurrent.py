"""Recurrent BatchPPO (policy='gru'): the core's state rules, what the agent keeps between
rollouts, sequence minibatches, the exported stateful signature and evaluation with it.

Learning runs are in bench/ppo.py; these stay fast (tiny nets, a few updates)."""

from __future__ import annotations

import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")  # installed by the test extra

from fastbatch.ppo import resolve, train
from fastbatch.ppo.agent import Agent
from fastbatch.ppo.core import GRU
from fastbatch.ppo.export import Player, evaluate_saved, load_policy, run_episodes
from fastbatch.ppo.train import make_env

TINY_GRU = {
    "policy": "gru",
    "gru_size": 8,
    "num_envs": 4,
    "rollout_steps": 16,
    "minibatches": 2,
    "epochs": 2,
    "checkpoint_every": 2,
    "eval_episodes": 2,
    "policy_layers": (16,),
    "value_layers": (16,),
}


def test_gru_resets_its_state_where_an_episode_starts_and_replays_sequences_stepwise():
    core = GRU(obs_size=3, size=5, seed=0)
    rng = np.random.default_rng(0)
    obs = tf.constant(rng.normal(size=(6, 2, 3)), tf.float32)
    state = tf.constant(rng.normal(size=(2, 5)), tf.float32)
    starts = tf.constant([[False, True]] + [[False, False]] * 2 + [[True, False]] * 3)
    features, states = core.sequence(obs, state, starts)
    np.testing.assert_array_equal(features.numpy(), states.numpy())  # a GRU's output: its state
    h = state
    for t in range(6):
        _, h = core(obs[t], h, starts[t])
        np.testing.assert_allclose(states[t].numpy(), h.numpy(), rtol=1e-5, atol=1e-6)
    # A starting env forgets its state: as if it came from the initial (zero) state.
    _, fresh = core(obs[0], core.initial_state(2), tf.constant([False, False]))
    _, reset = core(obs[0], state, tf.constant([True, True]))
    np.testing.assert_array_equal(reset.numpy(), fresh.numpy())
    _, kept = core(obs[0], state, tf.constant([False, False]))
    assert not np.allclose(kept.numpy(), fresh.numpy())


def _agent(env_id="CartPoleNoVel-v1", **changes):
    config = resolve(env_id, **{**TINY_GRU, **changes})
    env = make_env(config)
    agent = Agent(config, env)
    agent.start(0)
    return agent, env


def test_each_rollout_starts_from_the_state_where_the_last_one_ended():
    agent, env = _agent(normalize_obs=False, rollout_steps=64)
    T = agent.config.rollout_steps
    for _ in range(2):
        state0 = agent.rollout_state.numpy()
        starts0 = agent.rollout_starts.numpy()
        actions = agent.collect()
        obs = agent.rollout.arrays["obs"].copy()
        done = agent.rollout.arrays["terminated"] | agent.rollout.arrays["truncated"]
        assert done.any(), "no episode ended: the reset rule is not exercised"
        starts = np.concatenate([starts0[None], done[:-1]])
        # Replaying the rollout with the collection's weights gives the state it ended with.
        _, states = agent.core.sequence(tf.constant(obs[:T]), tf.constant(state0), starts)
        agent.update(actions)
        np.testing.assert_allclose(agent.rollout_state.numpy(), states[-1].numpy(), atol=1e-5)
        np.testing.assert_array_equal(agent.rollout_starts.numpy(), done[-1])
    agent.start(1)  # a reset of every env: every episode starts afresh
    assert agent.rollout_starts.numpy().all() and not agent.rollout_state.numpy().any()
    env.close()


def test_minibatches_are_whole_env_sequences_covering_every_env_once_per_epoch():
    agent, env = _agent(normalize_obs=False, num_envs=8, minibatches=4, epochs=2)
    seen = []
    original = agent._minibatch

    def spy(state0, batch, *rest):
        record = tf.numpy_function(
            lambda o: (seen.append(o.copy()), np.float32(0))[1], [batch["obs"]], tf.float32
        )
        record = tf.ensure_shape(record, [])
        metrics, ratio_dev = original(state0, batch, *rest)
        return {**metrics, "loss": metrics["loss"] + 0.0 * record}, ratio_dev

    agent._minibatch = spy
    agent.update(agent.collect())
    obs = agent.rollout.arrays["obs"]  # carried over: slot 0 changed, slots 1..T-1 did not
    T, N = agent.config.rollout_steps, agent.config.num_envs
    assert len(seen) == 2 * 4
    for epoch in range(2):
        envs = []
        for mb in seen[4 * epoch : 4 * (epoch + 1)]:
            assert mb.shape == (T, N // 4, obs.shape[-1])
            for column in np.moveaxis(mb, 1, 0):
                matches = [i for i in range(N) if np.array_equal(column[1:], obs[1:T, i])]
                assert len(matches) == 1
                envs += matches
        assert sorted(envs) == list(range(N))
    env.close()


def test_truncation_bootstraps_from_the_state_carried_to_the_final_observation():
    import fastbatch

    config = resolve("PendulumNoVel-v1", **TINY_GRU)
    T, N = config.rollout_steps, config.num_envs
    # Episodes of 5 steps: every env truncates three times in one rollout of 16 steps.
    env = fastbatch.make(
        config.env_id,
        N,
        autoreset_mode="same_step",
        seed=0,
        stats_key="episode",
        max_episode_steps=5,
    )
    agent = Agent(config, env)
    agent.start(0)
    agent.rollout_state.assign(tf.random.stateless_normal([N, config.gru_size], [1, 2]))
    agent.rollout_starts.assign(tf.zeros([N], tf.bool))  # the first episodes carry that state
    state0 = agent.rollout_state.numpy()
    agent.collect()
    a = {k: v.copy() for k, v in agent.rollout.arrays.items()}
    assert a["truncated"].sum() == 3 * N and not a["terminated"].any()
    done = a["truncated"]
    starts = np.concatenate([np.zeros([1, N], bool), done[:-1]])
    _, states = agent.core.sequence(agent.normalize(a["obs"][:T]), tf.constant(state0), starts)
    last, final = agent.bootstrap_values(a["obs"][T], a["final_obs"], states, done)
    # The reference steps each env's core one observation at a time.
    no = tf.constant([False])
    for i in range(N):
        h = tf.constant(state0[i : i + 1])
        for t in range(T):
            _, h = agent.core(agent.normalize(a["obs"][t, i : i + 1]), h, starts[t, i : i + 1])
            if done[t, i]:
                features, _ = agent.core(agent.normalize(a["final_obs"][t, i : i + 1]), h, no)
                np.testing.assert_allclose(final[t, i], agent.value(features)[0], atol=1e-5)
                zero = agent.core.initial_state(1)
                fresh, _ = agent.core(agent.normalize(a["final_obs"][t, i : i + 1]), zero, no)
                assert abs(float(agent.value(fresh)[0]) - float(final[t, i])) > 1e-4
        features, _ = agent.core(agent.normalize(a["obs"][T, i : i + 1]), h, done[-1, i : i + 1])
        np.testing.assert_allclose(last[i], agent.value(features)[0], atol=1e-5)
    env.close()


@pytest.mark.parametrize("env_id", ["CartPoleNoVel-v1", "PendulumNoVel-v1"])
def test_first_recurrent_minibatch_ratio_is_one(env_id):
    agent, env = _agent(env_id)
    for _ in range(3):
        metrics = agent.update(agent.collect())
        assert float(metrics["first_ratio_max_dev"]) < 1e-5
    env.close()


def test_the_rollout_op_and_numpy_function_collect_the_same_recurrent_rollouts():
    config = resolve("CartPoleNoVel-v1", **TINY_GRU)
    agents = []
    for use_op in (True, False):
        agent = Agent(config, make_env(config), rollout_op=use_op)
        agent.start(0)
        agents.append(agent)
    assert agents[0].rollout.uses_op and not agents[1].rollout.uses_op
    for _ in range(3):
        a, b = (agent.collect().numpy() for agent in agents)
        np.testing.assert_array_equal(a, b)
        for agent in agents:
            agent.update(tf.constant(a))
        np.testing.assert_array_equal(
            agents[0].rollout_state.numpy(), agents[1].rollout_state.numpy()
        )
    for agent in agents:
        agent.rollout.env.close()


@pytest.fixture(scope="module")
def gru_run(tmp_path_factory):
    """A finished two-update GRU run on CartPoleNoVel-v1: (config, run directory)."""
    logdir = tmp_path_factory.mktemp("gru_run")
    config = resolve("CartPoleNoVel-v1", total_steps=2 * 64, **TINY_GRU)
    train(config, logdir, progress=False)
    return config, logdir


def _restored_agent(config, logdir):
    env = make_env(config)
    agent = Agent(config, env)
    tf.train.Checkpoint(agent=agent).restore(
        tf.train.latest_checkpoint(str(logdir / "checkpoints"))
    )
    return agent, env


def test_export_has_the_stateful_signature_and_replays_the_agent(gru_run):
    config, logdir = gru_run
    model = tf.saved_model.load(str(logdir / "policy"))
    assert {"serving_default", "step", "initial_state"} <= set(model.signatures)
    initial = model.signatures["initial_state"](batch_size=tf.constant(3))["state"]
    assert initial.shape == (3, config.gru_size) and not initial.numpy().any()
    agent, env = _restored_agent(config, logdir)
    rng = np.random.default_rng(0)
    state = agent_state = initial
    for _ in range(5):
        obs = tf.constant(rng.normal(size=(3, 2)), tf.float32)
        out = model.signatures["step"](obs=obs, state=state)
        action, agent_state = agent.act(obs, agent_state, tf.zeros([3], tf.bool))
        np.testing.assert_array_equal(out["action"].numpy(), action.numpy())
        np.testing.assert_allclose(out["state"].numpy(), agent_state.numpy(), atol=1e-6)
        state = out["state"]
    assert state.numpy().any()  # the state moved: the signature carries memory
    env.close()


def test_saved_policy_plays_episodes_as_the_agent_does(gru_run):
    config, logdir = gru_run
    agent, env = _restored_agent(config, logdir)

    def step(obs, state):
        action, state = agent.act(tf.constant(obs), tf.constant(state), tf.zeros([len(obs)], bool))
        return action.numpy(), state.numpy()

    player = Player(step, lambda batch: agent.initial_state(batch).numpy())
    env.close()
    env = make_env(config, num_envs=3, seed=7)
    ours = run_episodes(env, player, 5)
    env.close()
    env = make_env(config, num_envs=3, seed=7)
    theirs = run_episodes(env, load_policy(logdir / "policy"), 5)
    env.close()
    assert ours == theirs
    assert len(evaluate_saved(logdir / "policy", config.env_id, 5, seed=7)) == 5


def test_fastbatch_eval_runs_a_recurrent_policy(gru_run, capsys):
    from fastbatch.cli import main

    _, logdir = gru_run
    args = ["eval", str(logdir / "policy"), "--env", "CartPoleNoVel-v1", "--episodes", "3"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["episodes"] == 3 and all(r >= 1 for r in result["returns"])


def test_resume_continues_a_recurrent_run_exactly(tmp_path):
    tf.config.experimental.enable_op_determinism()
    config = resolve("PendulumNoVel-v1", total_steps=4 * 64, **TINY_GRU)
    whole = train(config, tmp_path / "whole", progress=False)
    train(config, tmp_path / "split", progress=False, max_updates=2)
    resumed = train(None, tmp_path / "split", resume=True, progress=False)
    assert resumed["updates"] == whole["updates"] == 4
    readers = [
        tf.train.load_checkpoint(str(tmp_path / r / "checkpoints")) for r in ("whole", "split")
    ]
    names = [k for k in readers[0].get_variable_to_shape_map() if "agent" in k]
    assert any("rollout_state" in k for k in names) and any("core" in k for k in names)
    for key in names:
        np.testing.assert_allclose(
            readers[0].get_tensor(key),
            readers[1].get_tensor(key),
            rtol=1e-5,
            atol=1e-6,
            err_msg=key,
        )

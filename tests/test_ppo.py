"""BatchPPO: the algorithm's parts against numpy references, checkpoints, export, the CLI, and a
short learning run that a broken learner cannot pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")  # installed by the test extra

import fastbatch
from fastbatch.ppo import PPOConfig, resolve, train
from fastbatch.ppo.agent import Agent, adapt_kl_penalty
from fastbatch.ppo.gae import gae
from fastbatch.ppo.normalize import RunningMeanStd
from fastbatch.ppo.train import check_compatible, make_env

TINY = {
    "num_envs": 4,
    "rollout_steps": 16,
    "minibatches": 2,
    "epochs": 2,
    "checkpoint_every": 2,
    "eval_episodes": 2,
    "policy_layers": (16,),
    "value_layers": (16,),
}


def gae_reference(values, rewards, terminated, truncated, final_values, last_values, gamma, lam):
    T, N = values.shape
    adv = np.zeros((T, N))
    running = np.zeros(N)
    for t in reversed(range(T)):
        next_v = last_values if t == T - 1 else values[t + 1]
        next_v = np.where(truncated[t], final_values[t], next_v)
        next_v = np.where(terminated[t], 0.0, next_v)
        delta = rewards[t] + gamma * next_v - values[t]
        running = delta + gamma * lam * (1.0 - (terminated[t] | truncated[t])) * running
        adv[t] = running
    return adv, adv + values


def _onednn_enabled(first_import: str, switch: str | None) -> bool:
    """TensorFlow's IsMklEnabled() in a fresh process that imports `first_import` first."""
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if switch is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = switch
    code = (
        f"import {first_import}\n"
        "from tensorflow.python.util import _pywrap_util_port\n"
        "print(_pywrap_util_port.IsMklEnabled())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.split()[-1] == "True"


@pytest.mark.parametrize("switch", [None, "0", "1"])
def test_the_trainer_leaves_tensorflows_onednn_switch_to_the_user(switch):
    """README, Limitations: fastbatch never sets TF_ENABLE_ONEDNN_OPTS. Its default is
    TensorFlow's, which depends on the CPU (on where it has AVX-512 VNNI/BF16 or AMX, off on an
    AVX2-only one), so the rule asserted is "as plain TensorFlow decides", on any machine; a
    user's setting still applies when fastbatch.ppo is imported first."""
    assert _onednn_enabled("fastbatch.ppo", switch) == _onednn_enabled("tensorflow", switch)
    if switch == "0":
        assert not _onednn_enabled("fastbatch.ppo", switch)


def test_gae_handles_termination_and_truncation_like_the_numpy_reference():
    config = resolve("CartPole-v1", **TINY)
    rng = np.random.default_rng(0)
    T, N = config.rollout_steps, config.num_envs
    values, rewards = rng.normal(size=(T, N)), rng.normal(size=(T, N))
    terminated, truncated = rng.random((T, N)) < 0.1, rng.random((T, N)) < 0.1
    final_values, last_values = rng.normal(size=(T, N)), rng.normal(size=N)

    def f32(x):
        return tf.constant(x, tf.float32)

    adv, ret = gae(
        f32(values),
        f32(rewards),
        tf.constant(terminated),
        tf.constant(truncated),
        f32(final_values),
        f32(last_values),
        config.gamma,
        config.gae_lambda,
    )
    ref_adv, ref_ret = gae_reference(
        values,
        rewards,
        terminated,
        truncated,
        final_values,
        last_values,
        config.gamma,
        config.gae_lambda,
    )
    np.testing.assert_allclose(adv.numpy(), ref_adv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ret.numpy(), ref_ret, rtol=1e-4, atol=1e-4)


def test_kl_penalty_adaptation_rule():
    target = 0.01
    assert float(adapt_kl_penalty(2.0, 0.02, target)) == pytest.approx(3.0)
    assert float(adapt_kl_penalty(3.0, 0.001, target)) == pytest.approx(2.0)
    assert float(adapt_kl_penalty(2.0, 0.01, target)) == pytest.approx(2.0)


def test_running_statistics_match_numpy():
    rms = RunningMeanStd([3])
    rng = np.random.default_rng(1)
    batches = [rng.normal(loc=2.0, scale=3.0, size=(n, 3)) for n in (5, 50, 7, 200)]
    for b in batches:
        rms.update(tf.constant(b))
    data = np.concatenate(batches)
    np.testing.assert_allclose(rms.mean.numpy(), data.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(rms.var.numpy(), data.var(axis=0), rtol=1e-4)
    normalized = rms.normalize(tf.constant(data[:4]), clip=10.0).numpy()
    np.testing.assert_allclose(
        normalized, (data[:4] - data.mean(0)) / np.sqrt(data.var(0) + 1e-8), rtol=1e-4
    )


@pytest.mark.parametrize("env_id, region", [("CartPole-v1", "clip"), ("Pendulum-v1", "kl")])
def test_first_minibatch_ratio_is_exactly_one(env_id, region):
    config = resolve(env_id, trust_region=region, **TINY)
    env = make_env(config)
    agent = Agent(config, env)
    agent.start(0)
    for _ in range(3):  # the normaliser has moved between rollouts, never within one
        metrics = agent.update(agent.collect())
        assert float(metrics["first_ratio_max_dev"]) < 1e-6
    if region == "kl":
        assert float(metrics["beta"]) != config.kl_init_penalty
    env.close()


def test_resume_continues_the_run_exactly(tmp_path):
    tf.config.experimental.enable_op_determinism()
    config = resolve("Pendulum-v1", total_steps=4 * 64, **TINY)
    whole = train(config, tmp_path / "whole", progress=False)
    train(config, tmp_path / "split", progress=False, max_updates=2)
    resumed = train(None, tmp_path / "split", resume=True, progress=False)
    assert resumed["updates"] == whole["updates"] == 4
    assert resumed["env_steps"] == whole["env_steps"]
    weights = []
    for run in ("whole", "split"):
        reader = tf.train.load_checkpoint(str(tmp_path / run / "checkpoints"))
        weights.append(
            {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if "agent" in k}
        )
    assert weights[0].keys() == weights[1].keys() and len(weights[0]) > 10
    for key in weights[0]:
        np.testing.assert_allclose(
            weights[0][key], weights[1][key], rtol=1e-5, atol=1e-6, err_msg=key
        )


def test_a_run_that_ended_off_a_checkpoint_boundary_can_be_extended(tmp_path):
    """3 updates with checkpoint_every=2 end between boundaries: extending the run restarts its
    envs where the resume begins (the process backend, unlike native pools, refuses a step
    before the first reset)."""
    config = resolve("CartPole-v1", total_steps=3 * 64, backend="process", num_workers=1, **TINY)
    assert train(config, tmp_path, progress=False)["updates"] == 3
    extended = train(None, tmp_path, resume=True, total_steps=5 * 64, progress=False)
    assert extended["updates"] == 5 and extended["env_steps"] == 5 * 64


def test_saved_model_reproduces_the_deterministic_policy(tmp_path):
    config = resolve("Pendulum-v1", total_steps=2 * 64, **TINY)
    train(config, tmp_path, progress=False)
    model = tf.saved_model.load(str(tmp_path / "policy"))
    env = make_env(config)
    agent = Agent(config, env)
    tf.train.Checkpoint(agent=agent).restore(
        tf.train.latest_checkpoint(str(tmp_path / "checkpoints"))
    )
    obs = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32) * 3
    served = next(iter(model.signatures["serving_default"](obs=tf.constant(obs)).values())).numpy()
    acted, _ = agent.act(tf.constant(obs), agent.initial_state(32), tf.ones([32], tf.bool))
    np.testing.assert_allclose(served, acted.numpy(), rtol=1e-6, atol=1e-6)
    assert np.all(np.abs(served) <= 2.0)  # clipped to the action space
    env.close()


def test_cli_trains_end_to_end_and_evaluates(tmp_path):
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "fastbatch",
        "train",
        "cartpole",
        "--steps",
        "1024",
        "--logdir",
        str(run),
        "--quiet",
        "--set",
        "eval_episodes=2",
        "--set",
        "num_envs=4",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    for name in (
        "config.json",
        "progress.csv",
        "curve.png",
        "result.json",
        "policy/saved_model.pb",
    ):
        assert (run / name).exists(), name
    assert list(run.glob("events.out.tfevents.*")) and list((run / "checkpoints").glob("ckpt-*"))
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run))
    events.Reload()
    scalars = set(events.Tags()["scalars"])
    for tag in (
        "loss/policy",
        "loss/value",
        "loss/entropy",
        "kl",
        "beta",
        "clip_fraction",
        "explained_variance",
        "sps",
        "episode/return",
        "episode/length",
    ):
        assert tag in scalars, tag
    updates = 1024 // (4 * resolve("cartpole").rollout_steps)
    assert [e.step for e in events.Scalars("kl")] == [
        4 * resolve("cartpole").rollout_steps * (u + 1) for u in range(updates)
    ]
    assert json.loads((run / "config.json").read_text())["num_envs"] == 4
    result = json.loads((run / "result.json").read_text())
    assert result["env_steps"] >= 1024 and result["eval_return"] is not None
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fastbatch",
            "eval",
            str(run / "policy"),
            "--env",
            "CartPole-v1",
            "--episodes",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["episodes"] == 3


def test_ppo_learns_cartpole_within_a_small_budget(tmp_path):
    result = train(
        resolve("cartpole", total_steps=81_920, eval_episodes=5), tmp_path, progress=False
    )
    # Random play scores about 22; this budget reaches 500 (seeds 0-5, with and without oneDNN,
    # measured, ~3.5 s).
    assert result["train_return"] > 300 and result["eval_return"] > 300, result


@pytest.mark.parametrize(
    "name, overrides, changes, match",
    [
        ("cartpole", ["no_such_key=1"], {}, "unknown config key 'no_such_key'"),
        ("cartpole", ["num_envs"], {}, "key=value"),
        ("cartpole", ["epochs=many"], {}, "bad value for epochs"),
        ("cartpole", [], {"total_steps": -5}, "total_steps must be a positive integer"),
        ("cartpole", ["trust_region=trpo"], {}, "trust_region"),
        ("cartpole", ["minibatches=3"], {}, "divisible"),
        ("cartpole", ["policy=lstm"], {}, "policy must be 'mlp' or 'gru'"),
        ("cartpole_novel", ["minibatches=16"], {}, "whole env sequences"),
        ("cartpole_novel", ["gru_size=0"], {}, "gru_size must be a positive integer"),
        ("pendulum", ["env_kwargs=g=9.8"], {}, "env_kwargs takes a JSON object"),
        ("pendulum", ["env_kwargs=[1]"], {}, "env_kwargs takes a JSON object"),
        ("pendulum", [], {"env_kwargs": {"seed": 1}}, "env_kwargs may not set 'seed'"),
        ("pendulum", [], {"env_kwargs": 3}, "env_kwargs must be a mapping"),
    ],
)
def test_bad_configs_are_refused(name, overrides, changes, match):
    with pytest.raises(ValueError, match=match):
        resolve(name, overrides, **changes)


def test_a_preset_for_the_wrong_action_space_is_refused(tmp_path):
    config = resolve("pendulum", ["env_id=CartPole-v1"], **TINY)
    with pytest.raises(ValueError, match="init_log_std applies to Box actions"):
        train(config, tmp_path, progress=False)


@pytest.mark.parametrize("preset", ["halfcheetah", "ant"])  # ant: env_kwargs
def test_config_round_trips_through_json(preset):
    config = resolve(preset)
    assert PPOConfig.from_json(config.to_json()) == config
    assert fastbatch.__version__


def test_env_kwargs_reach_the_env_and_round_trip_through_json(tmp_path):
    overrides = ['env_kwargs={"max_episode_steps": 5, "g": 9.81}']
    config = resolve("Pendulum-v1", overrides, **TINY)
    assert config.env_kwargs == (("g", 9.81), ("max_episode_steps", 5))
    assert json.loads(config.to_json())["env_kwargs"] == {"g": 9.81, "max_episode_steps": 5}
    assert PPOConfig.from_json(config.to_json()) == config
    assert hash(config) == hash(resolve("Pendulum-v1", **TINY, env_kwargs=dict(config.env_kwargs)))
    env = make_env(config)
    env.reset()
    for _ in range(5):
        *_, truncated, _ = env.step(np.zeros((config.num_envs, 1), np.float32))
    assert truncated.all()  # the 5-step limit, not Pendulum's 200
    env.close()
    result = train(config.replace(total_steps=64), tmp_path, progress=False)
    saved = PPOConfig.from_json((tmp_path / "config.json").read_text())
    assert saved.env_kwargs == config.env_kwargs and result["eval_return"] is not None


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "hopper"])  # hopper: float64 obs
def test_the_rollout_op_and_the_numpy_function_path_collect_the_same_rollouts(env_id):
    from fastbatch.ppo import tf_op

    assert tf_op.load() is not None, "the prebuilt op must load"
    config = resolve(env_id, **TINY)
    agents = []
    for use_op in (True, False):
        env = make_env(config)
        agent = Agent(config, env, rollout_op=use_op)  # False: tf.numpy_function
        agent.start(0)
        agents.append(agent)
    for _ in range(3):
        a, b = (agent.collect().numpy() for agent in agents)
        np.testing.assert_array_equal(a, b)
        for key in ("obs", "reward", "terminated", "truncated"):
            np.testing.assert_array_equal(
                agents[0].rollout.arrays[key], agents[1].rollout.arrays[key], err_msg=key
            )
        for agent in agents:
            agent.rollout.carry_over()
    assert agents[0].rollout.uses_op and not agents[1].rollout.uses_op
    assert agents[0].rollout.episode_returns == agents[1].rollout.episode_returns


@pytest.mark.parametrize("env_id, policy", [("Pendulum-v1", "mlp"), ("PendulumNoVel-v1", "gru")])
def test_the_xla_compiled_update_trains_as_the_graph_update_does(env_id, policy):
    config = resolve(env_id, policy=policy, gru_size=8, **TINY)
    agents = []
    for jit in (False, True):
        agent = Agent(config.replace(jit_compile=jit), make_env(config))
        agent.start(0)
        agents.append(agent)
    for _ in range(3):
        metrics = [agent.update(agent.collect()) for agent in agents]
        for key in ("loss/policy", "loss/value", "kl"):
            np.testing.assert_allclose(
                float(metrics[0][key]), float(metrics[1][key]), rtol=1e-3, atol=1e-6, err_msg=key
            )
    variables = [agent.optimizer.variables_ for agent in agents]
    assert len(variables[0]) == len(variables[1]) > 0
    for a, b in zip(*variables, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5, err_msg=a.name)
    for agent in agents:
        agent.rollout.env.close()


def test_checkpoints_that_restart_the_envs_before_their_time_limit_are_flagged(caplog):
    """train() restarts the envs at every checkpoint (so that a resumed run continues exactly):
    a block shorter than the time limit is named, with the checkpoint_every that fits."""
    env = fastbatch.make("Pendulum-v1", 2)  # time limit 200
    try:
        check_compatible(resolve("pendulum", rollout_steps=16, checkpoint_every=2), env)
        assert "set checkpoint_every to at least 13" in caplog.text
        assert "time limit of 200 steps" in caplog.text
        caplog.clear()
        check_compatible(resolve("pendulum"), env)  # 128 x 20 steps
        limited = {"max_episode_steps": 20}
        short = resolve("pendulum", rollout_steps=16, checkpoint_every=2, env_kwargs=limited)
        short_env = make_env(short)  # the limit its pool applies is the one checked
        try:
            check_compatible(short, short_env)
        finally:
            short_env.close()
        assert caplog.text == ""
    finally:
        env.close()

"""bench/ppo_update_torch.py, the PyTorch rendition of the CNN update timed on a GPU: its shapes
table mirrors fastbatch's presets, its networks have the torsos' parameter counts, and it runs."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason='needs pip install "fastbatch[sb3]"')

from tests.bench_scripts import load_bench_script

reference = load_bench_script("ppo_update_torch")


@pytest.mark.parametrize("name", sorted(reference.PRESETS))
def test_the_shapes_table_is_the_presets_schedule(name):
    from fastbatch.ppo import resolve

    shapes, config = reference.PRESETS[name], resolve(name)
    for field in (
        "num_envs",
        "rollout_steps",
        "epochs",
        "minibatches",
        "learning_rate",
        "clip_ratio",
        "value_clip",
        "entropy_coef",
        "value_coef",
        "max_grad_norm",
        "gamma",
        "gae_lambda",
        "cnn",
    ):
        assert getattr(shapes, field) == getattr(config, field), field
    assert config.policy_layers == () and config.value_layers == ()  # linear heads, as built


@pytest.mark.parametrize("name", sorted(reference.PRESETS))
def test_the_networks_have_fastbatchs_parameter_counts(name):
    from fastbatch.ppo.torsos import make_torso

    shapes = reference.PRESETS[name]
    torso = make_torso(shapes.cnn, shapes.obs_shape, "auto", 0)
    features = torso.feature_size
    heads = features * shapes.actions + shapes.actions + features + 1
    expected = sum(int(np.prod(v.shape)) for v in torso.trainable_variables) + heads
    modules = reference.build(shapes, torch, torch.nn)
    assert sum(p.numel() for m in modules for p in m.parameters()) == expected


def test_the_update_runs_and_prints_its_times(capsys):
    argv = ["--preset", "minatar_asterix", "--envs", "2", "--rounds", "2", "--warmup", "1"]
    assert reference.main([*argv, "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 envs x 128 steps, 4 epochs x 8 minibatches" in out
    assert "eager: median" in out and "ms/update" in out

"""The `fastbatch` command around a run: quiet TensorFlow start-up, progress.csv's header (and
old files without it), strict JSON in result.json, `--resume DIR --steps N` extending a run (and
refusing to shorten it), `fastbatch eval --video` recording a GIF headless, and envs from
outside fastbatch (`--plugin`, `--import`) kept in config.json for `--resume` and eval."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")  # installed by the test extra

from fastbatch.ppo import resolve, train
from fastbatch.ppo.train import PROGRESS_COLUMNS, _elapsed, plot_curve, read_progress

HEADER = ",".join(PROGRESS_COLUMNS)
# Lines TensorFlow's C++ side prints while starting on a CPU machine (the report).
NOISE = ("cuInit", "oneDNN", "cuda drivers", "absl::InitializeLog", "cpu_feature_guard")


def tiny_pendulum(overrides=(), **fields):
    """A Pendulum config small enough for a test: 4 envs x 16 steps, 8-unit networks."""
    sizes = dict(num_envs=4, rollout_steps=16, minibatches=2, epochs=1)
    sizes.update(policy_layers=(8,), value_layers=(8,))
    return resolve("Pendulum-v1", list(overrides), **(sizes | fields))


ROOT = Path(__file__).resolve().parents[1]


def fastbatch_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    """The command in a fresh process, started in `cwd` (the repository: `tests` imports)."""
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "fastbatch", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=environ,
        cwd=cwd,
    )


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, which are not JSON."""

    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A finished 512-step CartPole run made by `fastbatch train`."""
    logdir = tmp_path_factory.mktemp("cli") / "run"
    done = fastbatch_cli(
        "train",
        "cartpole",
        "--steps",
        "512",
        "--logdir",
        str(logdir),
        "--quiet",
        "--set",
        "num_envs=4",
        "--set",
        "eval_episodes=2",
    )
    assert done.returncode == 0, done.stderr
    return logdir, done


def test_train_prints_no_tensorflow_startup_noise(run):
    _, done = run
    output = done.stdout + done.stderr
    assert not [word for word in NOISE if word in output], output
    assert not re.search(r"^[IWEF]\d{4} ", output, re.MULTILINE), output  # absl/TF log lines


def test_an_explicit_tf_log_level_wins():
    probe = "from fastbatch._tf_log import quiet_import; quiet_import('fastbatch.ppo'); import os; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"
    ours = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"},
    )
    assert ours.stdout.strip() == "0"


def test_progress_csv_starts_with_its_header_and_result_json_is_strict(run):
    logdir, done = run
    lines = (logdir / "progress.csv").read_text().splitlines()
    assert lines[0] == HEADER == "env_steps,seconds,mean_return,episodes"
    rows = read_progress(logdir / "progress.csv")
    assert rows[:, 0].tolist() == [128, 256, 384, 512] and np.all(np.diff(rows[:, 1]) >= 0)
    # How many episodes each row's mean covers: none (and a nan mean) until one ends, then
    # growing to the window (20) and never past it.
    episodes, means = rows[:, 3], rows[:, 2]
    assert np.all(np.diff(episodes) >= 0) and 0 < episodes[-1] <= 20 and episodes.min() >= 0
    assert np.array_equal(np.isnan(means), episodes == 0)
    result = strict_json((logdir / "result.json").read_text())
    assert result["env_steps"] == 512 and result["eval_return"] is not None
    assert strict_json(done.stdout[done.stdout.index("{") :]) == result


def test_resume_with_steps_extends_a_finished_run_and_refuses_to_shorten_it(run, tmp_path):
    logdir = tmp_path / "run"
    shutil.copytree(run[0], logdir)
    done = fastbatch_cli("train", "--resume", str(logdir), "--steps", "1024", "--quiet")
    assert done.returncode == 0, done.stderr
    result = strict_json((logdir / "result.json").read_text())
    assert result["env_steps"] == 1024 and result["updates"] == 8
    assert json.loads((logdir / "config.json").read_text())["total_steps"] == 1024
    lines = (logdir / "progress.csv").read_text().splitlines()
    assert lines.count(HEADER) == 1
    assert read_progress(logdir / "progress.csv")[:, 0].tolist() == [128 * k for k in range(1, 9)]
    refused = fastbatch_cli("train", "--resume", str(logdir), "--steps", "256", "--quiet")
    assert refused.returncode != 0
    assert "has done 1024 env steps" in refused.stderr and "at least 1024" in refused.stderr
    assert json.loads((logdir / "config.json").read_text())["total_steps"] == 1024


def test_eval_records_episodes_as_a_gif(run, tmp_path):
    from PIL import Image

    gif = tmp_path / "episode.gif"
    done = fastbatch_cli(
        "eval",
        str(run[0] / "policy"),
        "--env",
        "CartPole-v1",
        "--episodes",
        "2",
        "--video",
        str(gif),
    )
    assert done.returncode == 0, done.stderr
    assert "XDG_RUNTIME_DIR" not in done.stderr, done.stderr  # SDL without a display
    out = strict_json(done.stdout)
    assert out["episodes"] == 2 and len(out["video"]["returns"]) == 1
    with Image.open(gif) as image:
        assert image.size == (600, 400) and image.n_frames > 5  # identical frames merge


def test_eval_refuses_a_video_of_an_env_that_cannot_render(run, tmp_path):
    done = fastbatch_cli(
        "eval",
        str(run[0] / "policy"),
        "--env",
        "_TestCounter-v0",
        "--video",
        str(tmp_path / "x.gif"),
    )
    assert done.returncode != 0
    assert "cannot record _TestCounter-v0: it does not draw itself" in done.stderr


def test_a_video_format_without_its_writer_names_what_to_install(tmp_path):
    pytest.importorskip("PIL")
    try:
        import imageio  # noqa: F401

        pytest.skip("imageio is installed: .mp4 files can be written")
    except ImportError:
        pass
    from fastbatch.ppo.video import record_video

    with pytest.raises(RuntimeError, match=r"imageio\[ffmpeg\]"):
        record_video(
            lambda obs, starts: np.zeros(len(obs), np.int64), "CartPole-v1", tmp_path / "x.mp4"
        )


def test_progress_files_of_every_form_still_read_and_plot(tmp_path):
    forms = {
        "no_header": "",  # written before the header row existed
        "no_episodes": "env_steps,seconds,mean_return\n",  # before the episodes column
    }
    for name, header in forms.items():
        logdir = tmp_path / name
        logdir.mkdir()
        (logdir / "progress.csv").write_text(f"{header}128,0.500,nan\n256,0.900,21.5000\n")
    new = tmp_path / "new"
    new.mkdir()
    (new / "progress.csv").write_text(f"{HEADER}\n128,0.500,nan,0\n256,0.900,21.5000,3\n")
    for logdir in (*(tmp_path / name for name in forms), new):
        rows = read_progress(logdir / "progress.csv")
        assert rows.shape == (2, 4) and rows[1, :3].tolist() == [256, 0.9, 21.5]
        assert rows[1, 3] == 3 if logdir == new else np.isnan(rows[1, 3])
        assert _elapsed(logdir) == 0.9
        plot_curve(logdir / "progress.csv", logdir / "curve.png", resolve("cartpole"))
        assert (logdir / "curve.png").stat().st_size > 0
    (new / "progress.csv").write_text(f"{HEADER}\n")  # a run stopped before its first update
    assert read_progress(new / "progress.csv").shape == (0, 4) and _elapsed(new) == 0.0


def test_a_resume_rewrites_an_older_progress_file_in_todays_columns(run, tmp_path):
    logdir = tmp_path / "run"
    shutil.copytree(run[0], logdir)
    before = read_progress(logdir / "progress.csv")
    older = "".join(f"{int(s)},{t:.3f},{r:.4f}\n" for s, t, r, _ in before)
    (logdir / "progress.csv").write_text(f"env_steps,seconds,mean_return\n{older}")
    done = fastbatch_cli("train", "--resume", str(logdir), "--steps", "640", "--quiet")
    assert done.returncode == 0, done.stderr
    lines = (logdir / "progress.csv").read_text().splitlines()
    assert lines[0] == HEADER and lines.count(HEADER) == 1 and len(lines) == 1 + 5
    rows = read_progress(logdir / "progress.csv")
    np.testing.assert_allclose(rows[:4, :3], before[:, :3], atol=1e-3)
    assert np.isnan(rows[:4, 3]).all() and rows[4, 0] == 640 and 0 < rows[4, 3] <= 20


def test_result_json_has_null_where_no_episode_ended(tmp_path):
    # Pendulum's episodes last 200 steps; 2 updates of 4 envs x 16 steps end none of them.
    config = tiny_pendulum(total_steps=2 * 64, eval_episodes=0)
    result = train(config, tmp_path, progress=False)
    written = strict_json((tmp_path / "result.json").read_text())
    assert written["train_return"] is None and result["train_return"] is None
    assert written["eval_return"] is None  # eval_episodes=0: not evaluated
    assert written["env_steps"] == 128


def test_eval_plays_the_env_as_the_run_that_wrote_the_policy_configured_it(tmp_path, capsys):
    from fastbatch import cli

    config = tiny_pendulum(['env_kwargs={"max_episode_steps": 5}'], total_steps=64, eval_episodes=1)
    train(config, tmp_path, progress=False)

    def returns(*extra: str) -> list[float]:
        policy = str(tmp_path / "policy")
        assert cli.main(["eval", policy, "--env", "Pendulum-v1", "--episodes", "2", *extra]) == 0
        return strict_json(capsys.readouterr().out)["returns"]

    # A Pendulum step costs at most 16.3: five steps at most 81.5, 200 untrained steps far more.
    assert all(r > -81.5 for r in returns())  # the run's 5-step limit, from its config.json
    assert all(r < -81.5 for r in returns("--env-kwargs", "{}"))  # explicitly none: 200 steps
    with pytest.raises(SystemExit, match="--env-kwargs takes a JSON object"):
        cli.main(["eval", str(tmp_path / "policy"), "--env", "Pendulum-v1", "--env-kwargs", "[]"])


# A tiny run of an env from outside fastbatch: 2 updates of 4 envs x 32 steps, 1 eval episode.
TINY = ("--steps", "256", "--quiet", "--set", "num_envs=4", "--set", "rollout_steps=32")
TINY += ("--set", "eval_episodes=1")


def register_cli_env() -> None:
    """What `--import tests.test_cli:register_cli_env` calls: CartPole under an id of its own."""
    gymnasium.register(
        id="CliTest/CartPole-v0",
        entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv",
        max_episode_steps=50,
    )


@pytest.fixture
def point_reacher(readme_example) -> Path:
    """examples/native_env_plugin's PointReacher library, built out of tree as README.md says."""
    return readme_example["point_reacher"]


def test_train_imports_the_module_that_registers_its_env_and_eval_imports_it_again(
    tmp_path, capsys
):
    from fastbatch import cli

    logdir = tmp_path / "run"
    target = "tests.test_cli:register_cli_env"
    assert (
        cli.main(
            ["train", "CliTest/CartPole-v0", "--import", target, "--logdir", str(logdir), *TINY]
        )
        == 0
    )
    assert strict_json((logdir / "result.json").read_text())["env_steps"] == 256
    assert json.loads((logdir / "config.json").read_text())["imports"] == [target]
    capsys.readouterr()
    # A fresh process knows no CliTest id until it imports the run's own imports.
    done = fastbatch_cli(
        "eval", str(logdir / "policy"), "--env", "CliTest/CartPole-v0", "--episodes", "1"
    )
    assert done.returncode == 0, done.stderr
    assert strict_json(done.stdout)["episodes"] == 1


def test_a_missing_plugin_or_a_failing_import_stops_the_command_naming_it(tmp_path, monkeypatch):
    from fastbatch import cli

    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "libmissing.so"
    for command in ("train CartPole-v1", f"eval {tmp_path}"):
        words = (
            [*command.split(), "--env", "CartPole-v1"]
            if command.startswith("eval")
            else command.split()
        )
        with pytest.raises(SystemExit, match=f"--plugin {missing}: no such file"):
            cli.main([*words, "--plugin", "libmissing.so"])  # named by its absolute path
        with pytest.raises(SystemExit, match=r"import 'no_such_module_fb': ModuleNotFoundError"):
            cli.main([*words, "--import", "no_such_module_fb"])
    with pytest.raises(SystemExit, match="--resume loads the plugins and imports"):
        cli.main(["train", "--resume", str(tmp_path), "--import", "tests.fake_env_package"])


def test_a_plugin_env_trains_and_resume_and_eval_load_the_plugin_in_fresh_processes(
    point_reacher, tmp_path, monkeypatch, capsys
):
    from fastbatch import cli

    logdir = tmp_path / "run"
    monkeypatch.chdir(point_reacher.parent.parent)  # the plugin named relative to here
    relative = str(point_reacher.relative_to(Path.cwd()))
    assert (
        cli.main(["train", "PointReacher-v0", "--plugin", relative, "--logdir", str(logdir), *TINY])
        == 0
    )
    capsys.readouterr()
    assert json.loads((logdir / "config.json").read_text())["plugins"] == [str(point_reacher)]
    monkeypatch.chdir(ROOT)
    done = fastbatch_cli("train", "--resume", str(logdir), "--steps", "512", "--quiet")
    assert done.returncode == 0, done.stderr
    assert strict_json((logdir / "result.json").read_text())["env_steps"] == 512
    done = fastbatch_cli(
        "eval", str(logdir / "policy"), "--env", "PointReacher-v0", "--episodes", "1"
    )
    assert done.returncode == 0, done.stderr
    assert strict_json(done.stdout)["episodes"] == 1
    # A SavedModel outside its run directory: the plugin is named on the command line.
    policy = shutil.copytree(logdir / "policy", tmp_path / "elsewhere" / "policy")
    eval_args = ("eval", str(policy), "--env", "PointReacher-v0", "--episodes", "1")
    done = fastbatch_cli(*eval_args, "--plugin", str(point_reacher))
    assert done.returncode == 0, done.stderr
    assert strict_json(done.stdout)["env_id"] == "PointReacher-v0"
    # A run whose library has moved: eval names it, and --plugin names the new place instead.
    config = json.loads((logdir / "config.json").read_text())
    moved = str(tmp_path / "gone" / point_reacher.name)
    (logdir / "config.json").write_text(json.dumps({**config, "plugins": [moved]}))
    eval_args = ("eval", str(logdir / "policy"), "--env", "PointReacher-v0", "--episodes", "1")
    with pytest.raises(SystemExit, match=f"--plugin {moved}: no such file"):
        cli.main(list(eval_args))
    assert cli.main([*eval_args, "--plugin", str(point_reacher)]) == 0
    assert strict_json(capsys.readouterr().out)["episodes"] == 1

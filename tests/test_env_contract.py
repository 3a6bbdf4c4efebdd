"""Native env contract v2: mistakes refused at compile time or at registration, typed params,
spaces and time limits from params, env-reported truncation, several envs a library, plugins
and sources of version 1, single envs through gymnasium.make."""

from __future__ import annotations

import copy
import re
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fastbatch
from tests.native_builds import built_plugin, compile_plugin

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(source, name, *flags, include=None) -> library path (asserting it compiles)."""
    folder = tmp_path_factory.mktemp("contract_v2")

    def make(source: Path, name: str, *flags: str, include: str | None = None) -> Path:
        out = folder / f"lib{name}.so"
        return built_plugin(source, out, *flags, include=include)

    return make


@pytest.fixture
def examples(readme_example) -> dict:
    """The README's example folder built out of tree with the CMake package (verbose, so the
    compile flags can be read back)."""
    return readme_example


# ---------------------------------------------------------------------------- mistakes
@pytest.mark.parametrize(
    "mistake, message",
    [
        (4, "ObsType must be float, double, int32_t, int64_t or uint8_t"),
        (5, "declares them in `static fastbatch::ParamList DeclareParams\\(\\)`"),
    ],
)
def test_type_mistakes_do_not_compile(tmp_path, mistake, message):
    done = compile_plugin(PLUGINS / "contract_v2.cc", tmp_path / "lib.so", f"-DMISTAKE={mistake}")
    assert done.returncode != 0
    assert re.search(message, done.stderr), done.stderr[-2000:]


@pytest.mark.parametrize(
    "mistake, message",
    [
        (
            1,
            "Echo-v0: the observation space is declared as Box<uint8> but the env's ObsType is "
            "float64: declare it as Box\\(shape, low, high\\)",
        ),
        (2, "Echo-v0: observation space has 3 low and 3 high bounds for a shape of 4 elements"),
        (3, "its spec could not be built: env class Echo: MakeSpec refused to build"),
        (6, "Ramp-v0: the spec declares infos, so the env writes them: Reset\\(rng, obs, info\\)"),
        (7, "Cast-v0: the env's ObsType is void, so its observation space names the element type"),
    ],
)
def test_spec_mistakes_are_refused_at_registration(build, mistake, message):
    library = build(PLUGINS / "contract_v2.cc", f"mistake{mistake}", f"-DMISTAKE={mistake}")
    with pytest.raises(fastbatch.PluginError, match=message):
        fastbatch.register_native_env(None, library)


@pytest.fixture(scope="module")
def contract_envs(build) -> list[str]:
    return fastbatch.register_native_env(
        None, build(PLUGINS / "contract_v2.cc", "contract"), replace=True
    )


def test_a_library_registers_all_its_envs_or_the_one_named(build, contract_envs):
    assert contract_envs == ["Echo-v0", "Ramp-v0", "Cast-v0"]
    library = build(PLUGINS / "contract_v2.cc", "contract")
    assert fastbatch.register_native_env("Ramp-v0", library, replace=True) == ["Ramp-v0"]
    with pytest.raises(
        fastbatch.PluginError,
        match="exports no env 'Nope-v0'; it exports: Cast-v0, Echo-v0, Ramp-v0",
    ):
        fastbatch.register_native_env("Nope-v0", library)
    with pytest.raises(TypeError, match="apply to one env"):
        fastbatch.register_native_env(None, library, replace=True, scale=2.0)


def test_discrete_actions_reach_an_int32_action_type_intact(contract_envs):
    env = fastbatch.make("Echo-v0", 4)
    env.reset(seed=0)
    obs = env.step(np.array([1, 2, 3, 0]))[0]
    np.testing.assert_array_equal(obs[:, 0], [1, 2, 3, 0])


def test_an_obs_type_void_env_writes_the_element_type_its_params_chose(contract_envs):
    for dtype, first in (("uint8", 1), ("float32", 1.5)):
        env = fastbatch.make("Cast-v0", 2, dtype=dtype)
        assert env.single_observation_space.dtype == np.dtype(dtype)
        env.reset(seed=0)
        obs = env.step(np.array([0, 1]))[0]
        assert obs.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(obs, np.full((2, 3), first, dtype))
        env.close()
        single = gymnasium.make("fastbatch/Cast-v0", dtype=dtype)
        assert single.observation_space.dtype == single.reset(seed=0)[0].dtype == np.dtype(dtype)
        check_env(single.unwrapped, skip_render_check=True)
        single.close()


# ---------------------------------------------------------------------------- params
def test_typed_params_reach_the_env(contract_envs):
    env = fastbatch.make("Echo-v0", 2, scale=2.5, negate=True, mode="offset")
    env.reset(seed=0)
    np.testing.assert_array_equal(env.step(np.array([2, 0]))[0][:, 0], [5.0, 10.0])
    info = fastbatch.spec("Echo-v0").param_info
    assert (
        info["truncate_after"].kind,
        info["truncate_after"].low,
        info["truncate_after"].high,
    ) == ("int", 0, 1000)
    assert info["mode"].choices == ("plain", "offset")
    assert fastbatch.spec("Echo-v0").params == {
        "truncate_after": 0,
        "scale": 1.0,
        "negate": False,
        "mode": "plain",
    }


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {"truncate_after": 6.5},
            TypeError,
            "'truncate_after' must be an integer in \\[0, 1000\\], got 6.5",
        ),
        (
            {"truncate_after": True},
            TypeError,
            "'truncate_after' must be an integer in \\[0, 1000\\], got True",
        ),
        (
            {"truncate_after": 5000},
            ValueError,
            "'truncate_after' must be an integer in \\[0, 1000\\], got 5000",
        ),
        ({"scale": -1.0}, ValueError, "'scale' must be a number in \\[0, 10\\], got -1.0"),
        ({"scale": float("nan")}, ValueError, "'scale' must be a number in \\[0, 10\\], got nan"),
        ({"scale": "2"}, TypeError, "'scale' must be a number in \\[0, 10\\], got '2'"),
        ({"negate": 1}, TypeError, "'negate' must be a bool, got 1"),
        ({"mode": "fancy"}, ValueError, "'mode' must be one of 'plain', 'offset', got 'fancy'"),
        ({"mode": 1}, TypeError, "'mode' must be one of 'plain', 'offset', got 1"),
        (
            {"speed": 1},
            TypeError,
            "got unexpected keyword argument\\(s\\) 'speed'; it accepts: truncate_after",
        ),
    ],
)
def test_bad_params_are_refused_before_any_env_exists(contract_envs, kwargs, error, message):
    with pytest.raises(error, match=f"Echo-v0 (parameter )?{message}"):
        fastbatch.make("Echo-v0", 2, **kwargs)


def test_registration_defaults_follow_the_same_rules(build, contract_envs):
    library = build(PLUGINS / "contract_v2.cc", "contract")
    with pytest.raises(ValueError, match="'scale' must be a number in \\[0, 10\\], got 11"):
        fastbatch.register_native_env("Echo-v0", library, replace=True, scale=11)
    fastbatch.register_native_env("Echo-v0", library, replace=True, scale=2)
    try:
        env = fastbatch.make("Echo-v0", 1)
        env.reset(seed=0)
        assert env.step(np.array([3]))[0][0, 0] == 6.0
    finally:
        fastbatch.register_native_env(None, library, replace=True)


def test_spaces_and_time_limit_come_from_the_params(contract_envs):
    env = fastbatch.make("Ramp-v0", 3, length=5, stats_key="episode")
    assert env.single_observation_space.shape == (5,)
    assert env.observation_space.shape == (3, 5)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs[0], [0, 1, 2, 3, 4])
    for t in range(1, 11):  # the limit is 2 * length
        obs, _, terminated, truncated, info = env.step(np.zeros((3, 1), np.float32))
        assert truncated.all() == (t == 10) and not terminated.any()
    np.testing.assert_array_equal(info["episode"]["l"], [10, 10, 10])
    assert fastbatch.make("Ramp-v0", 1).single_observation_space.shape == (3,)  # the default


# ---------------------------------------------------------------------------- truncation
@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_an_env_reports_its_own_truncation(contract_envs, mode):
    env = fastbatch.make("Echo-v0", 2, truncate_after=3, autoreset_mode=mode, stats_key="episode")
    env.reset(seed=0)
    flags = []
    for _ in range(7):
        _, _, terminated, truncated, info = env.step(np.array([1, 1]))
        assert not terminated.any()
        flags.append(bool(truncated[0]))
        if truncated[0]:
            np.testing.assert_array_equal(info["episode"]["l"], [3, 3])
    assert flags == (
        [False, False, True, False, False, False, True]
        if mode == "next_step"
        else [False, False, True, False, False, True, False]
    )


def test_max_episode_steps_at_registration_and_make(build, contract_envs):
    library = build(PLUGINS / "contract_v2.cc", "contract")
    fastbatch.register_native_env("Echo-v0", library, replace=True, max_episode_steps=2)
    try:
        assert fastbatch.spec("Echo-v0").max_episode_steps == 2
        env = fastbatch.make("Echo-v0", 1)
        env.reset(seed=0)
        assert [bool(env.step(np.array([0]))[3][0]) for _ in range(2)] == [False, True]
        env = fastbatch.make("Echo-v0", 1, max_episode_steps=3)  # make() wins
        env.reset(seed=0)
        assert [bool(env.step(np.array([0]))[3][0]) for _ in range(3)] == [False, False, True]
    finally:
        fastbatch.register_native_env(None, library, replace=True)
    assert fastbatch.spec("Echo-v0").max_episode_steps == 100


# ---------------------------------------------------------------------------- examples
def test_the_image_example_builds_with_the_cmake_package(examples):
    assert "-ffp-contract=off" in examples["log"]  # fastbatch_add_env keeps results bit-exact
    assert fastbatch.register_native_env(None, examples["grid_chase"], replace=True) == [
        "GridChase-v0"
    ]
    env = fastbatch.make("GridChase-v0", 4, size=5, walls=True, reward="shaped", seed=0)
    assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (3, 5, 5), np.uint8)
    obs, _ = env.reset()
    assert obs.dtype == np.uint8 and obs.shape == (4, 3, 5, 5)
    assert (obs[:, 0].sum(axis=(1, 2)) == 255).all() and (obs[:, 2, 0, :] == 255).all()
    for t in range(1, 21):  # time limit 4 * size; staying never reaches the target
        _, reward, terminated, truncated, _ = env.step(np.zeros(4, np.int64))
        np.testing.assert_allclose(reward, -0.01)
        assert not terminated.any() and truncated.all() == (t == 20)
    assert fastbatch.make("GridChase-v0", 1).single_observation_space.shape == (3, 8, 8)


def test_the_image_example_draws_itself_and_records_a_video(examples, tmp_path):
    # The README's "Rendering": GridChase's frame is its grid, 16 pixels a cell; the agent's
    # cell blue, the target's red, walls gray. eval --video records it on the native env.
    pytest.importorskip("PIL")
    from PIL import Image

    from fastbatch.ppo.video import record_video

    fastbatch.register_native_env(None, examples["grid_chase"], replace=True)
    env = fastbatch.make("GridChase-v0", 2, size=5, walls=True, render_mode="rgb_array", seed=0)
    assert env.metadata["render_fps"] == 8.0
    obs, _ = env.reset()
    for frame, image in zip(env.render(), obs):
        assert frame.shape == (80, 80, 3) and frame.dtype == np.uint8
        cells = frame[8::16, 8::16]  # each cell's centre
        np.testing.assert_array_equal(np.all(cells == [40, 90, 220], axis=-1), image[0] == 255)
        np.testing.assert_array_equal(np.all(cells == [220, 50, 40], axis=-1), image[1] == 255)
        np.testing.assert_array_equal(np.all(cells == 128, axis=-1), image[2] == 255)
    env.close()
    returns = record_video(
        lambda obs, starts: np.zeros(len(obs), np.int64),  # stays: 4 * size steps, no reward
        "GridChase-v0",
        tmp_path / "chase.gif",
        episodes=2,
        env_kwargs={"size": 5, "reward": "shaped"},
    )
    assert returns == pytest.approx([-0.2, -0.2])
    with Image.open(tmp_path / "chase.gif") as gif:
        # Pillow merges identical frames (the agent stays): the two episodes' starts differ.
        assert gif.size == (80, 80) and gif.n_frames >= 2


def greedy_moves(obs: np.ndarray) -> np.ndarray:
    """GoalCells' shortest walk: along x first, then y, read off each row's goal offset."""
    dx, dy = obs[:, 2], obs[:, 3]
    return np.select([dx < 0, dx > 0, dy < 0, dy > 0], [3, 4, 1, 2], 0).astype(np.int64)


def test_the_multi_agent_example_steps_each_agent_to_its_goal(examples):
    # The README's multi-agent plugin, built out of tree: one row per (env, agent), each agent
    # leaves on reaching its goal (walking the shortest way, it takes its distance in steps),
    # its rows then read zeros whatever action it is given, and its env resets once all have
    # left (NEXT_STEP: the step after).
    assert fastbatch.register_native_env(None, examples["goal_cells"], replace=True) == [
        "GoalCells-v0"
    ]
    assert "GoalCells-v0" in fastbatch.list_envs(multi_agent=True)
    size, agents, n = 5, 3, 4
    env = fastbatch.make_agents("GoalCells-v0", n, agents=agents, size=size, seed=3)
    assert env.num_agents == agents and env.num_envs == n * agents
    assert env.single_observation_space.shape == (4 + 2 * (agents - 1),)
    obs, info = env.reset()
    assert obs.shape == (n * agents, 4 + 2 * (agents - 1)) and info["active"].all()

    def distances(obs):  # each agent's steps to its goal, from its row
        return np.rint(np.abs(obs[:, 2:4]).sum(axis=1) * size).astype(int)

    distance, walked = distances(obs), np.zeros(n * agents, int)
    assert (distance >= 1).all()
    junk = np.random.default_rng(0)
    resets = 0
    for _ in range(6 * size):
        ended = np.repeat((distance <= walked).reshape(n, agents).all(axis=1), agents)
        moves = np.where(info["active"], greedy_moves(obs), junk.integers(0, 5, n * agents))
        obs, reward, terminated, truncated, info = env.step(moves)
        walked += 1
        assert not truncated.any()
        # the envs whose last agent left on the step before start again
        assert info["active"][ended].all() and not (reward[ended].any() or terminated[ended].any())
        resets += ended.sum() // agents
        walked[ended], distance[ended] = 0, distances(obs)[ended]
        on = ~ended
        walking, arriving = (distance > walked) & on, (distance == walked) & on
        np.testing.assert_array_equal(terminated, arriving)
        np.testing.assert_allclose(reward, np.select([walking, arriving], [-0.01, 1.0], 0.0))
        np.testing.assert_array_equal(info["active"], ended | (distance >= walked))
        assert not obs[on & (distance < walked)].any()  # gone rows read zeros
    assert resets >= n  # every env ran at least one whole episode
    env.close()


# ---------------------------------------------------------------------------- version 1
def legacy_uniforms(seed: int, count: int, low: float, high: float) -> np.ndarray:
    """The draws of a plugin built before ABI version 4: xoshiro256** seeded by splitmix64, as
    the pool still seeds such plugins."""
    mask = 2**64 - 1
    x, state = seed, []
    for _ in range(4):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        state.append(z ^ (z >> 31))

    def rotl(v: int, k: int) -> int:
        return ((v << k) | (v >> (64 - k))) & mask

    out = []
    for _ in range(count):
        s0, s1, s2, s3 = state
        out.append(low + (high - low) * ((rotl((s1 * 5) & mask, 7) * 9 & mask) >> 11) * 2.0**-53)
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= (state[1] << 17) & mask
        state = [s0, s1, s2, rotl(s3, 45)]
    return np.array(out)


def test_plugins_and_sources_of_version_1_keep_working(build):
    # The same source built against the version-1 headers and today's: both load and run. The
    # old library keeps its random streams bit for bit (the pool seeds it as it always did);
    # rebuilt, the source draws numpy's streams (ABI version 4 on), with the same physics.
    v1 = build(PLUGINS / "readme_v1_env.cc", "v1", include=str(PLUGINS / "abi_v1"))
    v4 = build(PLUGINS / "readme_v1_env.cc", "v1_source_v4_headers")
    assert fastbatch._core._load_plugin(str(v1))[0].abi_version == 1
    assert (
        fastbatch._core._load_plugin(str(v4))[0].abi_version == fastbatch._core.ABI_VERSION == 7
    )  # the current headers
    velocities = []
    for name, library in (("ReacherV1-v0", v1), ("ReacherV4-v0", v4)):
        fastbatch.register_native_env(name, library, replace=True)
        assert fastbatch.spec(name).param_info["force_scale"].kind == "float"
        env = fastbatch.make(name, 4, seed=3, target_radius=0.1)
        obs, _ = env.reset()
        for i in range(4):
            if library == v1:
                x, y, tx, ty = legacy_uniforms(3 + i, 4, -0.9, 0.9)
            else:
                x, y, tx, ty = np.random.default_rng(3 + i).uniform(-0.9, 0.9, 4)
            expected = np.array([x, y, 0, 0, tx - x, ty - y], np.float32)
            np.testing.assert_array_equal(obs[i], expected, err_msg=name)
        # Five pushes move no point into a wall: velocities follow from the actions alone.
        steps = [env.step(np.full((4, 2), 0.5, np.float32))[0][:, 2:4].copy() for _ in range(5)]
        velocities.append(np.array(steps))
    np.testing.assert_array_equal(velocities[0], velocities[1])


# ---------------------------------------------------------------------------- gymnasium.make
def checker_warnings(env) -> set[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    return {str(w.message) for w in caught}


@pytest.mark.parametrize("env_id", fastbatch.list_envs())
def test_gymnasium_make_gives_a_single_env_that_passes_check_env(env_id):
    env = gymnasium.make(f"fastbatch/{env_id}")
    # check_env passes, warning about nothing it does not warn about for gymnasium's own env
    # (for a NoVel env, which gymnasium lacks: the full env it hides columns of).
    reference = gymnasium.make(env_id.replace("NoVel", "")).unwrapped
    assert checker_warnings(env.unwrapped) <= checker_warnings(reference)
    obs, info = env.reset(seed=5)
    assert env.observation_space.contains(obs) and info == {}
    twin = fastbatch.make(env_id, 1, seed=5)
    np.testing.assert_array_equal(obs, twin.reset()[0][0])
    action = env.action_space.sample()
    result = env.step(action)
    batch = twin.step(np.asarray([action]))
    np.testing.assert_array_equal(result[0], batch[0][0])
    assert result[1] == float(batch[1][0]) and isinstance(result[1], float)
    env.close()


def test_registry_entries_serialise_and_vectorise_in_every_mode():
    spec = gymnasium.spec("fastbatch/Pendulum-v1")
    assert spec.entry_point == "fastbatch.native.single:NativeEnv" and copy.deepcopy(spec) == spec
    assert gymnasium.envs.registration.EnvSpec.from_json(spec.to_json()) == spec
    for mode in ("sync", "async", "vector_entry_point"):
        envs = gymnasium.make_vec("fastbatch/Pendulum-v1", 3, vectorization_mode=mode)
        obs, _ = envs.reset(seed=1)
        assert obs.shape == (3, 3)
        envs.close()

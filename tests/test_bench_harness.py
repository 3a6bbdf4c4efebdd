"""bench/_harness.py: the timed loops obey their warm-up and stop rules (on fake steps and a fake
clock), medians, formatting, action tables and the run metadata."""

import importlib.util
import json
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "bench" / "_harness.py"
# bench/ is not a package (its scripts import `_harness` from their own folder): load the file
# under a name of its own, registered as dataclasses need.
_spec = importlib.util.spec_from_file_location("bench_harness", _PATH)
harness = importlib.util.module_from_spec(_spec)
sys.modules["bench_harness"] = harness
_spec.loader.exec_module(harness)


class FakeClock:
    """A clock that advances `per_step` seconds at each step call: time is the step count."""

    def __init__(self, per_step: float) -> None:
        self.now, self.per_step, self.calls = 0.0, per_step, 0

    def __call__(self) -> float:
        return self.now

    def step(self, _action) -> None:
        self.calls += 1
        self.now += self.per_step


def test_calls_per_second_stops_at_the_first_pass_past_both_minima():
    clock = FakeClock(0.01)
    # 4 actions a pass; 0.1 s needs 10 calls, so 3 passes (12 calls) end the run.
    rate = harness.calls_per_second(clock.step, [0] * 4, 0.1, min_calls=1, clock=clock)
    assert clock.calls == 12 and rate == pytest.approx(12 / 0.12)
    # The step-count minimum governs when it is the larger: 40 calls, 0.4 s.
    clock = FakeClock(0.01)
    harness.calls_per_second(clock.step, [0] * 4, 0.1, min_calls=40, clock=clock)
    assert clock.calls == 40


def test_loop_warms_up_once_then_times_each_run_in_rows():
    clock = FakeClock(0.001)
    budget = harness.Budget(0.01, min_calls=4, warmup=0.05)
    loop = harness.Loop(clock.step, [0] * 2, rows=8, budget=budget, clock=clock)
    rate = loop.rate()
    assert loop.warm and clock.calls == 50 + 10  # warm-up 0.05 s, then a run of 0.01 s
    assert rate == pytest.approx(8 * 10 / 0.01)
    loop.rate()
    assert clock.calls == 70  # no second warm-up


def test_a_zero_warmup_still_steps_one_pass():
    clock = FakeClock(0.001)
    loop = harness.Loop(clock.step, [0] * 3, 1, harness.Budget(0.001, 1, warmup=0), clock)
    loop.warm_up()
    assert clock.calls == 3


def test_native_loop_discards_short_runs_and_obeys_both_minima():
    calls = []
    pace = [1e-3]  # seconds a step

    def run(steps):
        calls.append(steps)
        return steps * pace[0]

    budget = harness.Budget(0.1, min_calls=8, warmup=0.1)
    loop = harness.NativeLoop(run, rows=4, budget=budget)
    loop.warm_up()
    assert calls[-1] * 1e-3 >= 0.1 and all(c >= 8 for c in calls)
    pace[0] = 1e-4  # the machine got faster: the next sized run ends short and is rerun
    before = len(calls)
    rate = loop.rate()
    assert len(calls) > before + 1 and calls[-1] * 1e-4 >= 0.1
    assert rate == pytest.approx(4 / 1e-4)


def test_interleaved_warms_each_once_and_alternates():
    order = []

    class Fake:
        warm = False

        def __init__(self, name):
            self.name = name

        def warm_up(self):
            order.append(f"warm {self.name}")
            self.warm = True

        def rate(self):
            order.append(self.name)
            return float(len(order))

    runs = harness.interleaved({"a": Fake("a"), "b": Fake("b")}, repeats=2)
    assert order == ["warm a", "warm b", "a", "b", "a", "b"]
    assert runs == {"a": [3.0, 5.0], "b": [4.0, 6.0]}


def test_budget_rejects_bad_values():
    with pytest.raises(ValueError, match="seconds must be positive"):
        harness.Budget(0)
    with pytest.raises(ValueError, match="min_calls"):
        harness.Budget(1, min_calls=0)
    assert harness.Budget(0.3).warmup_seconds == 0.3


def test_medians_skip_missing_values():
    assert harness.median([3.0, None, 1.0, 2.0]) == 2.0
    assert harness.median([None]) is None
    assert harness.medians({"a": [1, 2, 3, 4], "b": []}) == {"a": 2.5, "b": None}


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (789.4, "789"), (45_600.0, "45.6k"), (1_234_000.0, "1.23M"), (3.5e7, "35.00M")],
)
def test_format_rate(value, text):
    assert harness.format_rate(value) == text


def test_format_ratio_and_table_rows():
    assert harness.format_ratio(3.0, 2.0) == "1.50x"
    assert harness.format_ratio(None, 2.0) == harness.format_ratio(1.0, 0.0) == "-"
    table = harness.Table(("env", -6), ("N", 4), ("rate", 8))
    assert table.header() == "env      N    rate"
    assert table.row("Cart", 16, None) == "Cart    16       -"
    assert table.rule() == "-" * 18
    with pytest.raises(ValueError, match="3 cells expected"):
        table.row("Cart", 16)


SPACES = [
    gymnasium.spaces.Discrete(3, start=-1),
    gymnasium.spaces.Box(-2.0, 2.0, (6,), np.float32),
    gymnasium.spaces.Box(np.array([-np.inf, 0.0]), np.array([np.inf, np.inf]), dtype=np.float64),
    gymnasium.spaces.Box(0, 5, (2, 3), np.int32),
    gymnasium.spaces.MultiDiscrete([2, 5]),
    gymnasium.spaces.MultiBinary(4),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_action_tables_match_the_space(space):
    table = harness.action_table(space, rows=5, count=7, seed=3)
    assert table.shape == (7, 5, *space.shape) and table.dtype == space.dtype
    assert table.flags.c_contiguous
    assert all(space.contains(row) for step in table for row in step)
    assert np.array_equal(table, harness.action_table(space, rows=5, count=7, seed=3))


def test_action_table_rejects_other_spaces():
    with pytest.raises(TypeError, match="Discrete, MultiDiscrete, MultiBinary or Box"):
        harness.action_table(gymnasium.spaces.Tuple([gymnasium.spaces.Discrete(2)]), 2)


def test_cores_are_the_affinity_mask():
    ids = harness.core_ids()
    assert ids == sorted(ids) and harness.cores() == len(ids) >= 1


def test_the_cpu_line_names_features_and_what_is_switched_off(monkeypatch):
    monkeypatch.setenv("FASTBATCH_DISABLE_CPU_FEATURES", "avx512vbmi")
    line = harness.cpu_line()
    assert line.endswith(" with FASTBATCH_DISABLE_CPU_FEATURES=avx512vbmi")
    monkeypatch.delenv("FASTBATCH_DISABLE_CPU_FEATURES")
    assert "FASTBATCH_DISABLE_CPU_FEATURES" not in harness.cpu_line()


def test_run_info_header_footer_and_json(tmp_path, capsys):
    run = harness.RunInfo(packages=("no-such-package",), repeats=3)
    header = run.header()
    assert header.startswith("# ") and " UTC; " in header and "numpy " in header
    # The CPU beside every figure: model and the features that pick code paths.
    from fastbatch import cpu

    assert f"; {cpu.model()} (" in header and run.meta["cpu"] == harness.cpu_line()
    assert run.meta["repeats"] == 3 and run.meta["versions"]["no-such-package"] is None
    assert "load average at end" in run.footer()
    out = harness.write_json(tmp_path / "sub" / "r.json", run.meta, [1, 2])
    data = json.loads(out.read_text())
    assert data["results"] == [1, 2] and data["meta"]["cores"] == harness.cores()
    assert capsys.readouterr().out.strip() == f"wrote {out}"

// Envs that exist to test the engine itself (ids start with '_'; not listed by list_envs()).
#ifndef FASTBATCH_ENVS_TEST_ENVS_H_
#define FASTBATCH_ENVS_TEST_ENVS_H_

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include "fastbatch/env.h"

namespace fastbatch::envs {

// A deterministic counter: obs = [steps since reset, last action] ([0, 0] after reset), reward
// = action, terminates when the action is 3 or after `terminate_at_step` steps (if positive).
// Throws from Step when the step count reaches `throw_at_step` (if positive), and from Reset on
// reset number `throw_at_reset` (if positive). Consumes one random number per reset.
class TestCounter {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static Spec MakeSpec() {
    return Spec("_TestCounter-v0")
        .Observation(Box({2}, -kInf, kInf))
        .Action(Discrete(4))
        .MaxEpisodeSteps(0)
        .Param("throw_at_step", 0.0)
        .Param("throw_at_reset", 0.0)
        .Param("terminate_at_step", 0.0);
  }

  explicit TestCounter(const Params& p)
      : throw_at_step_(static_cast<int64_t>(p.Get("throw_at_step"))),
        throw_at_reset_(static_cast<int64_t>(p.Get("throw_at_reset"))),
        terminate_at_step_(static_cast<int64_t>(p.Get("terminate_at_step"))) {}

  void Reset(Rng& rng, float* obs) {
    ++resets_;
    if (throw_at_reset_ > 0 && resets_ == throw_at_reset_) {
      throw std::runtime_error("test env: reset number " + std::to_string(resets_) + " failed");
    }
    steps_ = 0;
    last_draw_ = rng.Uniform();
    obs[0] = 0.0f;
    obs[1] = 0.0f;
  }

  // (steps since reset, the last reset's random draw): shows the per-env RNG stream.
  static constexpr int64_t kStateSize = 2;
  void GetState(double* out) const {
    out[0] = static_cast<double>(steps_);
    out[1] = last_draw_;
  }

  StepResult Step(int64_t action, float* obs) {
    ++steps_;
    if (throw_at_step_ > 0 && steps_ == throw_at_step_) {
      throw std::runtime_error("test env: step " + std::to_string(steps_) + " failed");
    }
    obs[0] = static_cast<float>(steps_);
    obs[1] = static_cast<float>(action);
    const bool terminated = action == 3 || (terminate_at_step_ > 0 && steps_ >= terminate_at_step_);
    return {static_cast<double>(action), terminated};
  }

 private:
  int64_t throw_at_step_, throw_at_reset_, terminate_at_step_;
  int64_t steps_ = 0, resets_ = 0;
  double last_draw_ = 0.0;
};

// An env whose step cost varies by env and over time, for the scheduler and async mode. At each
// reset it draws a level L in [1, max_cost]; each step costs c in [1, L] units of busy work (a
// dependent chain of `work_unit` float64 multiply-adds, ~0.1 us per unit at 64), L and c drawn
// from its own generator, seeded from the pool's at reset. With `stall_prob` > 0 a step also
// sleeps `stall_us` microseconds with that probability (a thread that loses its core). Results
// depend only on the env's own RNG and actions: the same draws are made whatever the params
// that only cost time (work_unit, stall_prob, stall_us).
// obs = [L, c of the last step, the busy work's result, steps since reset]; reward = action +
// c / 100; terminates with probability 1/64 a step; time limit 100 steps.
class TestVariableCost {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static Spec MakeSpec() {
    return Spec("_TestVariableCost-v0")
        .Observation(Box({4}, -kInf, kInf))
        .Action(Discrete(2))
        .MaxEpisodeSteps(100)
        .IntParam("max_cost", 20, 1)
        .IntParam("work_unit", 64, 0)
        .FloatParam("stall_prob", 0.0, 0.0, 1.0)
        .IntParam("stall_us", 1000, 0);
  }

  explicit TestVariableCost(const Params& p)
      : max_cost_(p.Int("max_cost")),
        work_unit_(p.Int("work_unit")),
        stall_prob_(p.Float("stall_prob")),
        stall_us_(p.Int("stall_us")) {}

  void Reset(Rng& rng, float* obs) {
    Rng::Seed(&own_, rng.NextU64(), 0);
    Rng r(&own_);
    level_ = 1 + static_cast<int64_t>(r.Uniform() * static_cast<double>(max_cost_));
    steps_ = 0;
    obs[0] = static_cast<float>(level_);
    obs[1] = 0.0f;
    obs[2] = 0.0f;
    obs[3] = 0.0f;
  }

  StepResult Step(int64_t action, float* obs) {
    Rng r(&own_);
    const int64_t cost = 1 + static_cast<int64_t>(r.Uniform() * static_cast<double>(level_));
    const double start = r.Uniform();
    const bool terminated = r.Uniform() < 1.0 / 64.0;
    const bool stall = r.Uniform() < stall_prob_;
    double x = start;
    for (int64_t k = 0; k < cost * work_unit_; ++k) x = x * 0.999999 + 1e-3;
    if (stall) std::this_thread::sleep_for(std::chrono::microseconds(stall_us_));
    ++steps_;
    obs[0] = static_cast<float>(level_);
    obs[1] = static_cast<float>(cost);
    obs[2] = static_cast<float>(x);
    obs[3] = static_cast<float>(steps_);
    return {static_cast<double>(action) + static_cast<double>(cost) / 100.0, terminated};
  }

  // (level, steps since reset).
  static constexpr int64_t kStateSize = 2;
  void GetState(double* out) const {
    out[0] = static_cast<double>(level_);
    out[1] = static_cast<double>(steps_);
  }

 private:
  int64_t max_cost_, work_unit_;
  double stall_prob_;
  int64_t stall_us_;
  fb_rng own_{};
  int64_t level_ = 1, steps_ = 0;
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_TEST_ENVS_H_

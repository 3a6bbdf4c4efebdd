// Envs that exist to test the engine itself (ids start with '_'; not listed by list_envs()).
#ifndef FASTBATCH_ENVS_TEST_ENVS_H_
#define FASTBATCH_ENVS_TEST_ENVS_H_

#include <stdexcept>
#include <string>

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

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_TEST_ENVS_H_

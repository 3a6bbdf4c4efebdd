// Envs that exist to test the engine itself (ids start with '_'; not listed by list_envs()).
#ifndef FASTBATCH_ENVS_TEST_ENVS_H_
#define FASTBATCH_ENVS_TEST_ENVS_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

// A pixel env for the image path (uint8 observations, CNN policies): a black image of
// `channels` x `size` x `size` (`channels_last`: size x size x channels), values 0..255, in which
// reset and every step light one pixel (255 in every channel) at a cell drawn uniformly
// (rng.Integers(size * size), row-major: row = cell / size, column = cell % size). The reward is
// 1 when the action names the half of the image the PREVIOUS observation's lit pixel was in (0:
// the left columns, 2 * column < size; 1: the right ones), else 0: about 0.5 a step at random, 1.0
// for a policy that sees where the pixel was. Never terminates; the time limit truncates episodes
// after 32 steps. Every step writes the whole image (the row may be a new buffer each step).
// Deterministic given the seed: one draw a reset and a step, from the pool's stream.
class TestImage {
 public:
  using ObsType = uint8_t;
  using ActionType = int64_t;

  static ParamList DeclareParams() {
    return ParamList()
        .Int("size", 8, 2, 128)
        .Int("channels", 3, 1, 16)
        .Bool("channels_last", false);
  }
  static Spec MakeSpec(const Params& p) {
    const int64_t size = p.Int("size"), channels = p.Int("channels");
    std::vector<int64_t> shape = {channels, size, size};
    if (p.Bool("channels_last")) shape = {size, size, channels};
    return Spec("_TestImage-v0")
        .Observation(Box(std::move(shape), 0.0, 255.0))
        .Action(Discrete(2))
        .MaxEpisodeSteps(32);
  }

  explicit TestImage(const Params& p)
      : size_(p.Int("size")), channels_(p.Int("channels")), last_(p.Bool("channels_last")) {}

  void Reset(Rng& rng, uint8_t* obs) {
    rng_ = rng;
    Light(obs);
  }

  StepResult Step(int64_t action, uint8_t* obs) {
    const bool right = 2 * (cell_ % size_) >= size_;
    const double reward = action == (right ? 1 : 0) ? 1.0 : 0.0;
    Light(obs);
    return {reward, false};
  }

  // (the lit cell, its column).
  static constexpr int64_t kStateSize = 2;
  void GetState(double* out) const {
    out[0] = static_cast<double>(cell_);
    out[1] = static_cast<double>(cell_ % size_);
  }

 private:
  // Draws the lit cell and writes the whole image.
  void Light(uint8_t* obs) {
    cell_ = rng_.Integers(size_ * size_);
    const int64_t cells = size_ * size_;
    std::memset(obs, 0, static_cast<size_t>(cells * channels_));
    for (int64_t c = 0; c < channels_; ++c) {
      obs[last_ ? cell_ * channels_ + c : c * cells + cell_] = 255;
    }
  }

  int64_t size_, channels_;
  bool last_;
  Rng rng_;  // a copy of the pool's (set by Reset): the stream continues across steps
  int64_t cell_ = 0;
};

// Agents that leave at different times, for the multi-agent rows (ABI version 6): `agents`
// agents per env. Agent k's observation is [k, steps since reset, its last action, a number
// drawn at reset] ([k, 0, 0, u_k] after reset, u_k = rng.Uniform(), drawn for k = 0, 1, ... in
// order); its reward is (k + 1) * action; action 3 terminates it, action 2 truncates it (the env's
// own limit), 0 and 1 keep it in. The rows of an agent that is gone get junk (obs 99, reward 7,
// both flags), which the pool must replace with zeros.
class TestAgents {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static ParamList DeclareParams() { return ParamList().Int("agents", 3, 1, 8); }
  static Spec MakeSpec(const Params& p) {
    return Spec("_TestAgents-v0")
        .Observation(Box({4}, -kInf, kInf))
        .Action(Discrete(4))
        .Agents(static_cast<int32_t>(p.Int("agents")));
  }

  explicit TestAgents(const Params& p) : agents_(p.Int("agents")) {}

  void Reset(Rng& rng, float* obs) {
    steps_ = 0;
    for (int64_t k = 0; k < agents_; ++k) {
      drawn_[k] = rng.Uniform();
      gone_[k] = false;
      Write(k, 0, obs);
    }
  }

  void Step(const int64_t* actions, float* obs, const AgentResults& out) {
    ++steps_;
    for (int64_t k = 0; k < agents_; ++k) {
      if (gone_[k]) {
        std::fill(obs + 4 * k, obs + 4 * (k + 1), 99.0f);
        out.reward[k] = 7.0f;
        out.terminated[k] = out.truncated[k] = 1;
        continue;
      }
      Write(k, actions[k], obs);
      out.reward[k] = static_cast<float>((k + 1) * actions[k]);
      out.terminated[k] = actions[k] == 3 ? 1 : 0;
      out.truncated[k] = actions[k] == 2 ? 1 : 0;
      gone_[k] = actions[k] >= 2;
    }
  }

 private:
  void Write(int64_t k, int64_t action, float* obs) const {
    float* row = obs + 4 * k;
    row[0] = static_cast<float>(k);
    row[1] = static_cast<float>(steps_);
    row[2] = static_cast<float>(action);
    row[3] = static_cast<float>(drawn_[k]);
  }

  int64_t agents_;
  int64_t steps_ = 0;
  double drawn_[8] = {};
  bool gone_[8] = {};
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_TEST_ENVS_H_

// Env contract v2 under test (tests/test_env_contract.py). Built as is, a library of two envs;
// with -DMISTAKE=<n>, one deliberate author's mistake:
//   1 Box<uint8_t> observation with ObsType double      (refused at registration)
//   2 observation bounds shorter than the shape          (refused at registration)
//   3 MakeSpec throws                                    (refused at registration)
//   4 ObsType bool                                       (refused at compile time)
//   5 MakeSpec(const Params&) without DeclareParams()    (refused at compile time)
//   6 Info("x") declared, but Reset/Step take no info row (refused at registration; v3)
//   7 ObsType void with a Box that names no element type  (refused at registration)
#include <cstdint>
#include <stdexcept>

#include "fastbatch/env.h"

#ifndef MISTAKE
#define MISTAKE 0
#endif

// Echo-v0: the observation is the last action (times `scale`, negated with `negate`); the env
// truncates its own episode after `truncate_after` steps (0: never). Its ActionType is int32_t:
// Discrete actions travel as int64 and must arrive intact.
class Echo {
 public:
#if MISTAKE == 4
  using ObsType = bool;
#elif MISTAKE == 1
  using ObsType = double;
#else
  using ObsType = float;
#endif
  using ActionType = int32_t;

  static fastbatch::Spec MakeSpec() {
#if MISTAKE == 3
    throw std::runtime_error("MakeSpec refused to build");
#endif
    return fastbatch::Spec("Echo-v0")
#if MISTAKE == 1
        .Observation(fastbatch::Box<uint8_t>({1}, 0.0, 255.0))
#elif MISTAKE == 2
        .Observation(fastbatch::Box({4}, {-1, -1, -1}, {1, 1, 1}))
#else
        .Observation(fastbatch::Box({1}, -100.0, 100.0))
#endif
        .Action(fastbatch::Discrete(4))
        .MaxEpisodeSteps(100)
        .IntParam("truncate_after", 0, 0, 1000)
        .FloatParam("scale", 1.0, 0.0, 10.0)
        .BoolParam("negate", false)
        .ChoiceParam("mode", {"plain", "offset"}, "plain");
  }

  explicit Echo(const fastbatch::Params& p)
      : truncate_after_(p.Int("truncate_after")),
        scale_(p.Float("scale")),
        sign_(p.Bool("negate") ? -1.0 : 1.0),
        offset_(p.Choice("mode") == "offset" ? 10.0 : 0.0) {}

  void Reset(fastbatch::Rng& rng, ObsType* obs) {
    rng_ = rng;  // kept for steps: a default-constructed Rng member is a placeholder until here
    steps_ = 0;
    obs[0] = 0;
  }

  fastbatch::StepResult Step(int32_t action, ObsType* obs) {
    ++steps_;
    rng_.NextU64();
    obs[0] = static_cast<ObsType>(sign_ * scale_ * action + offset_);
    return {1.0, false, truncate_after_ > 0 && steps_ >= truncate_after_};
  }

 private:
  fastbatch::Rng rng_;
  int64_t truncate_after_;
  double scale_, sign_, offset_;
  int64_t steps_ = 0;
};

// Ramp-v0: a second env in the same library, whose observation length is a param.
class Ramp {
 public:
  using ObsType = float;
  using ActionType = float;

  static fastbatch::ParamList DeclareParams() {
    return fastbatch::ParamList().Int("length", 3, 1, 16);
  }
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
    return fastbatch::Spec("Ramp-v0")
        .Observation(fastbatch::Box({p.Int("length")}, 0.0, 1000.0))
        .Action(fastbatch::Box({1}, -1.0, 1.0))
#if MISTAKE == 6
        .Info("x")
#endif
        .MaxEpisodeSteps(2 * p.Int("length"));
  }
  explicit Ramp(const fastbatch::Params& p) : length_(p.Int("length")) {}
  void Reset(fastbatch::Rng&, float* obs) {
    t_ = 0;
    for (int64_t k = 0; k < length_; ++k) obs[k] = static_cast<float>(k);
  }
  fastbatch::StepResult Step(const float* action, float* obs) {
    ++t_;
    for (int64_t k = 0; k < length_; ++k) obs[k] = static_cast<float>(k + t_) + action[0];
    return {0.0, false};
  }

 private:
  int64_t length_;
  int64_t t_ = 0;
};

// Cast-v0: ObsType void, so the observation's element type comes from the spec, here from the
// param `dtype`; the observation is the step count in each of its 3 elements.
class Cast {
 public:
  using ObsType = void;
  using ActionType = int64_t;

  static fastbatch::ParamList DeclareParams() {
    return fastbatch::ParamList().Choice("dtype", {"uint8", "float32"}, "uint8");
  }
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
#if MISTAKE == 7
    const auto box = fastbatch::Box({3}, 0.0, 255.0);
#else
    const auto box = p.Choice("dtype") == "uint8" ? fastbatch::Box<uint8_t>({3}, 0.0, 255.0)
                                                  : fastbatch::Box<float>({3}, 0.0, 255.0);
#endif
    return fastbatch::Spec("Cast-v0").Observation(box).Action(fastbatch::Discrete(2));
  }
  explicit Cast(const fastbatch::Params& p) : floats_(p.Choice("dtype") == "float32") {}
  void Reset(fastbatch::Rng&, void* obs) {
    t_ = 0;
    Write(obs);
  }
  fastbatch::StepResult Step(int64_t, void* obs) {
    ++t_;
    Write(obs);
    return {0.0, false};
  }

 private:
  void Write(void* obs) const {
    for (int k = 0; k < 3; ++k) {
      if (floats_) {
        static_cast<float*>(obs)[k] = static_cast<float>(t_) + 0.5f;
      } else {
        static_cast<uint8_t*>(obs)[k] = static_cast<uint8_t>(t_);
      }
    }
  }
  bool floats_;
  int64_t t_ = 0;
};

#if MISTAKE == 5
// Reads params in MakeSpec without declaring them in DeclareParams().
class Undeclared {
 public:
  using ObsType = float;
  using ActionType = int64_t;
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
    return fastbatch::Spec("Undeclared-v0")
        .Observation(fastbatch::Box({p.Int("length")}, 0.0, 1.0))
        .Action(fastbatch::Discrete(2));
  }
  explicit Undeclared(const fastbatch::Params&) {}
  void Reset(fastbatch::Rng&, float* obs) { obs[0] = 0; }
  fastbatch::StepResult Step(int64_t, float* obs) {
    obs[0] = 0;
    return {0.0, false};
  }
};
FASTBATCH_EXPORT_ENVS(Undeclared)
#else
FASTBATCH_EXPORT_ENVS(Echo, Ramp, Cast)
#endif

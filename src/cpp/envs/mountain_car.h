// MountainCar-v0 and MountainCarContinuous-v0, matching gymnasium 1.x
// `envs/classic_control/mountain_car.py` and `continuous_mountain_car.py`.
#ifndef FASTBATCH_ENVS_MOUNTAIN_CAR_H_
#define FASTBATCH_ENVS_MOUNTAIN_CAR_H_

#include <algorithm>
#include <cmath>

#include "fastbatch/env.h"
#include "numpy_math.h"

namespace fastbatch::envs {

inline constexpr double kCarMinPosition = -1.2;
inline constexpr double kCarMaxPosition = 0.6;
inline constexpr double kCarMaxSpeed = 0.07;

// Discrete actions {0: push left, 1: no push, 2: push right}; float64 state throughout.
class MountainCar {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static constexpr double kGoalPosition = 0.5;
  static constexpr double kForce = 0.001;
  static constexpr double kGravity = 0.0025;

  static Spec MakeSpec() {
    return Spec("MountainCar-v0")
        .Observation(Box({2}, {kCarMinPosition, -kCarMaxSpeed}, {kCarMaxPosition, kCarMaxSpeed}))
        .Action(Discrete(3))
        .MaxEpisodeSteps(200)
        .RewardThreshold(-110.0)
        .Param("goal_velocity", 0.0);
  }

  explicit MountainCar(const Params& params) : goal_velocity_(params.Get("goal_velocity")) {}

  void Reset(Rng& rng, float* obs) {
    position_ = rng.Uniform(-0.6, -0.4);
    velocity_ = 0.0;
    WriteObs(obs);
  }

  StepResult Step(int64_t action, float* obs) {
    double velocity = velocity_ + (static_cast<double>(action - 1) * kForce +
                                   std::cos(3 * position_) * (-kGravity));
    velocity = std::min(std::max(velocity, -kCarMaxSpeed), kCarMaxSpeed);
    double position = position_ + velocity;
    position = std::min(std::max(position, kCarMinPosition), kCarMaxPosition);
    if (position == kCarMinPosition && velocity < 0) velocity = 0;
    const bool terminated = position >= kGoalPosition && velocity >= goal_velocity_;
    position_ = position;
    velocity_ = velocity;
    WriteObs(obs);
    return {-1.0, terminated};
  }

  static constexpr int64_t kStateSize = 2;
  void GetState(double* out) const {
    out[0] = position_;
    out[1] = velocity_;
  }
  // The reference's `env.state = ...`.
  void SetState(const double* state) {
    position_ = state[0];
    velocity_ = state[1];
  }

 private:
  void WriteObs(float* obs) const {
    obs[0] = static_cast<float>(position_);
    obs[1] = static_cast<float>(velocity_);
  }

  double goal_velocity_;
  double position_ = 0.0, velocity_ = 0.0;
};

// Continuous force in [-1, 1]. The reference stores its state as float32 after every step and
// mixes NumPy float32/float64 scalars with Python floats; `Num` below replays NumPy 2's
// promotion rules (a Python float is "weak": it takes the NumPy operand's type) so the
// trajectory matches bit for bit.
class MountainCarContinuous {
 public:
  using ObsType = float;
  using ActionType = float;

  static constexpr double kGoalPosition = 0.45;
  static constexpr double kPower = 0.0015;

  static Spec MakeSpec() {
    return Spec("MountainCarContinuous-v0")
        .Observation(Box({2}, {kCarMinPosition, -kCarMaxSpeed}, {kCarMaxPosition, kCarMaxSpeed}))
        .Action(Box({1}, -1.0, 1.0))
        .MaxEpisodeSteps(999)
        .RewardThreshold(90.0)
        .Param("goal_velocity", 0.0);
  }

  explicit MountainCarContinuous(const Params& params)
      : goal_velocity_(params.Get("goal_velocity")) {}

  void Reset(Rng& rng, float* obs) {
    position_ = rng.Uniform(-0.6, -0.4);
    velocity_ = 0.0;
    state_is_f32_ = false;  // np.array([uniform, 0]) is float64 until the first step
    WriteObs(obs);
  }

  StepResult Step(const float* action, float* obs) {
    const Type state_type = state_is_f32_ ? Type::kF32 : Type::kF64;
    Num position{position_, state_type};
    Num velocity{velocity_, state_type};
    const Num a{static_cast<double>(action[0]), Type::kF32};
    // force = min(max(action[0], -1.0), 1.0): Python's min/max keep the winning object.
    Num force = a;
    if (Less(force, Py(-1.0))) force = Py(-1.0);
    if (Less(Py(1.0), force)) force = Py(1.0);
    const Num cos_term = Mul(Py(0.0025), Py(std::cos(Mul(Py(3.0), position).v)));
    velocity = Add(velocity, Sub(Mul(force, Py(kPower)), cos_term));
    if (Less(Py(kCarMaxSpeed), velocity)) velocity = Py(kCarMaxSpeed);
    if (Less(velocity, Py(-kCarMaxSpeed))) velocity = Py(-kCarMaxSpeed);
    position = Add(position, velocity);
    if (Less(Py(kCarMaxPosition), position)) position = Py(kCarMaxPosition);
    if (Less(position, Py(kCarMinPosition))) position = Py(kCarMinPosition);
    if (Equal(position, Py(kCarMinPosition)) && velocity.v < 0) velocity = Py(0.0);
    const bool terminated =
        !Less(position, Py(kGoalPosition)) && !Less(velocity, Py(goal_velocity_));
    double reward = terminated ? 100.0 : 0.0;
    reward -= Pow2(a.v) * 0.1;
    position_ = RoundToF32(position.v);  // np.array([...], dtype=np.float32)
    velocity_ = RoundToF32(velocity.v);
    state_is_f32_ = true;
    WriteObs(obs);
    return {reward, terminated};
  }

  static constexpr int64_t kStateSize = 2;
  void GetState(double* out) const {
    out[0] = position_;
    out[1] = velocity_;
  }
  // The reference's `env.state = ...`. Its step computes in the state's dtype, which a
  // float64 state does not carry: a state of two float32 values is taken as float32 (the
  // reference's state after any step), any other as float64 (after a reset, the position is a
  // float64 draw). A float64 array of float32 values set on the reference steps differently.
  void SetState(const double* state) {
    position_ = state[0];
    velocity_ = state[1];
    state_is_f32_ = RoundToF32(position_) == position_ && RoundToF32(velocity_) == velocity_;
  }

 private:
  // A scalar as NumPy sees it: a float32 or float64 NumPy scalar, or a (weak) Python float.
  enum class Type { kF32, kF64, kPy };
  struct Num {
    double v;
    Type t;
  };
  static Num Py(double v) { return {v, Type::kPy}; }
  // The type an operation on a and b is computed in.
  static Type Common(const Num& a, const Num& b) {
    if (a.t == Type::kF64 || b.t == Type::kF64) return Type::kF64;
    if (a.t == Type::kF32 || b.t == Type::kF32) return Type::kF32;
    return Type::kPy;
  }
  template <typename Op>
  static Num Apply(const Num& a, const Num& b, Op op) {
    const Type t = Common(a, b);
    if (t == Type::kF32) {
      return {static_cast<double>(op(static_cast<float>(a.v), static_cast<float>(b.v))), t};
    }
    return {op(a.v, b.v), t};
  }
  static Num Add(const Num& a, const Num& b) {
    return Apply(a, b, [](auto x, auto y) { return x + y; });
  }
  static Num Sub(const Num& a, const Num& b) {
    return Apply(a, b, [](auto x, auto y) { return x - y; });
  }
  static Num Mul(const Num& a, const Num& b) {
    return Apply(a, b, [](auto x, auto y) { return x * y; });
  }
  static bool Less(const Num& a, const Num& b) {
    if (Common(a, b) == Type::kF32) return static_cast<float>(a.v) < static_cast<float>(b.v);
    return a.v < b.v;
  }
  static bool Equal(const Num& a, const Num& b) {
    if (Common(a, b) == Type::kF32) return static_cast<float>(a.v) == static_cast<float>(b.v);
    return a.v == b.v;
  }

  void WriteObs(float* obs) const {
    obs[0] = static_cast<float>(position_);
    obs[1] = static_cast<float>(velocity_);
  }

  double goal_velocity_;
  double position_ = 0.0, velocity_ = 0.0;
  bool state_is_f32_ = false;
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_MOUNTAIN_CAR_H_

// Pendulum-v1, matching gymnasium 1.x `envs/classic_control/pendulum.py`. The reference mixes a
// float32 action with a float64 state under NumPy 2 promotion rules: the action terms
// `0.001 * u**2` and `3.0 / (m * l**2) * u` are computed in float32, everything else in float64.
#ifndef FASTBATCH_ENVS_PENDULUM_H_
#define FASTBATCH_ENVS_PENDULUM_H_

#include <algorithm>
#include <cmath>

#include "fastbatch/env.h"
#include "numpy_math.h"

namespace fastbatch::envs {

class Pendulum {
 public:
  using ObsType = float;
  using ActionType = float;

  static constexpr double kMaxSpeed = 8;
  static constexpr double kMaxTorque = 2.0;
  static constexpr double kDt = 0.05;
  static constexpr double kMass = 1.0;
  static constexpr double kLength = 1.0;

  static Spec MakeSpec() {
    return Spec("Pendulum-v1")
        .Observation(Box({3}, {-1.0, -1.0, -kMaxSpeed}, {1.0, 1.0, kMaxSpeed}))
        .Action(Box({1}, -kMaxTorque, kMaxTorque))
        .MaxEpisodeSteps(200)
        .Param("g", 10.0);
  }

  explicit Pendulum(const Params& params) : g_(params.Get("g")) {}

  void Reset(Rng& rng, float* obs) {
    th_ = rng.Uniform(-M_PI, M_PI);
    thdot_ = rng.Uniform(-1.0, 1.0);
    WriteObs(obs);
  }

  StepResult Step(const float* action, float* obs) {
    // np.clip on the float32 action; NaN is rejected before it reaches the env.
    const float u = std::min(std::max(action[0], static_cast<float>(-kMaxTorque)),
                             static_cast<float>(kMaxTorque));
    const float torque_cost = 0.001f * Pow2(u);
    const double costs =
        Pow2(AngleNormalize(th_)) + 0.1 * Pow2(thdot_) + static_cast<double>(torque_cost);
    const float torque_term = static_cast<float>(3.0 / (kMass * kLength * kLength)) * u;
    double newthdot =
        thdot_ + (3 * g_ / (2 * kLength) * std::sin(th_) + static_cast<double>(torque_term)) * kDt;
    newthdot = std::min(std::max(newthdot, -kMaxSpeed), kMaxSpeed);
    th_ = th_ + newthdot * kDt;
    thdot_ = newthdot;
    WriteObs(obs);
    return {-costs, false};
  }

  // (theta, theta_dot) in float64, as the reference's `state`.
  static constexpr int64_t kStateSize = 2;
  void GetState(double* out) const {
    out[0] = th_;
    out[1] = thdot_;
  }
  // The reference's `env.state = ...`.
  void SetState(const double* state) {
    th_ = state[0];
    thdot_ = state[1];
  }

 private:
  // ((x + pi) % (2 pi)) - pi with NumPy's floor-modulo (result takes the divisor's sign).
  static double AngleNormalize(double x) {
    const double a = x + M_PI;
    const double b = 2 * M_PI;
    double mod = std::fmod(a, b);
    if (mod != 0.0) {
      if ((b < 0) != (mod < 0)) mod += b;
    } else {
      mod = std::copysign(0.0, b);
    }
    return mod - M_PI;
  }

  void WriteObs(float* obs) const {
    obs[0] = static_cast<float>(std::cos(th_));
    obs[1] = static_cast<float>(std::sin(th_));
    obs[2] = static_cast<float>(thdot_);
  }

  double g_;
  double th_ = 0.0, thdot_ = 0.0;
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_PENDULUM_H_

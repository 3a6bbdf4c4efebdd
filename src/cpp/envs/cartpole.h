// CartPole-v1, matching gymnasium 1.x `envs/classic_control/cartpole.py` (Euler integrator,
// default reward). Arithmetic follows the reference's float64 expression order.
#ifndef FASTBATCH_ENVS_CARTPOLE_H_
#define FASTBATCH_ENVS_CARTPOLE_H_

#include <cmath>

#include "fastbatch/env.h"

namespace fastbatch::envs {

class CartPole {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kTotalMass = kMassPole + kMassCart;
  static constexpr double kLength = 0.5;  // half the pole's length
  static constexpr double kPoleMassLength = kMassPole * kLength;
  static constexpr double kForceMag = 10.0;
  static constexpr double kTau = 0.02;
  static constexpr double kThetaThreshold = 12 * 2 * M_PI / 360;
  static constexpr double kXThreshold = 2.4;

  static Spec MakeSpec() {
    const double high[4] = {kXThreshold * 2, kInf, kThetaThreshold * 2, kInf};
    return Spec("CartPole-v1")
        .Observation(Box({4}, {-high[0], -high[1], -high[2], -high[3]},
                         {high[0], high[1], high[2], high[3]}))
        .Action(Discrete(2))
        .MaxEpisodeSteps(500)
        .RewardThreshold(475.0)
        .BoolParam("sutton_barto_reward", false);  // gymnasium's kwarg is a bool
  }

  explicit CartPole(const Params& params) : sutton_barto_(params.Bool("sutton_barto_reward")) {}

  void Reset(Rng& rng, float* obs) {
    for (double& v : state_) v = rng.Uniform(-0.05, 0.05);
    steps_beyond_terminated_ = -1;
    WriteObs(obs);
  }

  StepResult Step(int64_t action, float* obs) {
    double x = state_[0], x_dot = state_[1], theta = state_[2], theta_dot = state_[3];
    const double force = action == 1 ? kForceMag : -kForceMag;
    const double costheta = std::cos(theta);
    const double sintheta = std::sin(theta);
    const double temp = (force + kPoleMassLength * (theta_dot * theta_dot) * sintheta) / kTotalMass;
    const double thetaacc =
        (kGravity * sintheta - costheta * temp) /
        (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
    const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
    x = x + kTau * x_dot;
    x_dot = x_dot + kTau * xacc;
    theta = theta + kTau * theta_dot;
    theta_dot = theta_dot + kTau * thetaacc;
    state_[0] = x;
    state_[1] = x_dot;
    state_[2] = theta;
    state_[3] = theta_dot;
    const bool terminated =
        x < -kXThreshold || x > kXThreshold || theta < -kThetaThreshold || theta > kThetaThreshold;
    double reward;
    if (!terminated) {
      reward = sutton_barto_ ? 0.0 : 1.0;
    } else if (steps_beyond_terminated_ < 0) {
      steps_beyond_terminated_ = 0;
      reward = sutton_barto_ ? -1.0 : 1.0;
    } else {
      ++steps_beyond_terminated_;
      reward = sutton_barto_ ? -1.0 : 0.0;
    }
    WriteObs(obs);
    return {reward, terminated};
  }

  // (x, x_dot, theta, theta_dot) in float64, as the reference's `state`.
  static constexpr int64_t kStateSize = 4;
  void GetState(double* out) const {
    for (int i = 0; i < 4; ++i) out[i] = state_[i];
  }
  // The reference's `env.state = ...` (its count of steps past termination stays).
  void SetState(const double* state) {
    for (int i = 0; i < 4; ++i) state_[i] = state[i];
  }

 private:
  void WriteObs(float* obs) const {
    for (int i = 0; i < 4; ++i) obs[i] = static_cast<float>(state_[i]);
  }

  bool sutton_barto_;
  double state_[4] = {0, 0, 0, 0};
  int64_t steps_beyond_terminated_ = -1;
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_CARTPOLE_H_

// Acrobot-v1, matching gymnasium 1.x `envs/classic_control/acrobot.py` ("book" dynamics, RK4
// over one 0.2 s step, no torque noise). The reset state is drawn in float64 and rounded to
// float32 as the reference does; integration is float64 in the reference's expression order.
#ifndef FASTBATCH_ENVS_ACROBOT_H_
#define FASTBATCH_ENVS_ACROBOT_H_

#include <algorithm>
#include <cmath>

#include "fastbatch/env.h"
#include "numpy_math.h"

namespace fastbatch::envs {

class Acrobot {
 public:
  using ObsType = float;
  using ActionType = int64_t;

  static constexpr double kDt = 0.2;
  static constexpr double kL1 = 1.0;  // link 1 length
  static constexpr double kM1 = 1.0;  // link masses
  static constexpr double kM2 = 1.0;
  static constexpr double kLc1 = 0.5;  // centres of mass
  static constexpr double kLc2 = 0.5;
  static constexpr double kMoi = 1.0;  // moments of inertia
  static constexpr double kMaxVel1 = 4 * M_PI;
  static constexpr double kMaxVel2 = 9 * M_PI;
  static constexpr double kG = 9.8;

  static Spec MakeSpec() {
    return Spec("Acrobot-v1")
        .Observation(Box({6}, {-1.0, -1.0, -1.0, -1.0, -kMaxVel1, -kMaxVel2},
                         {1.0, 1.0, 1.0, 1.0, kMaxVel1, kMaxVel2}))
        .Action(Discrete(3))
        .MaxEpisodeSteps(500)
        .RewardThreshold(-100.0);
  }

  explicit Acrobot(const Params&) {}

  void Reset(Rng& rng, float* obs) {
    for (double& v : s_) v = RoundToF32(rng.Uniform(-0.1, 0.1));  // .astype(np.float32)
    WriteObs(obs);
  }

  StepResult Step(int64_t action, float* obs) {
    const double torque = static_cast<double>(action) - 1.0;  // AVAIL_TORQUE = [-1, 0, +1]
    double y0[5] = {s_[0], s_[1], s_[2], s_[3], torque};
    double k1[5], k2[5], k3[5], k4[5], y[5];
    const double dt = kDt;
    const double dt2 = dt / 2.0;
    Dsdt(y0, k1);
    for (int i = 0; i < 5; ++i) y[i] = y0[i] + dt2 * k1[i];
    Dsdt(y, k2);
    for (int i = 0; i < 5; ++i) y[i] = y0[i] + dt2 * k2[i];
    Dsdt(y, k3);
    for (int i = 0; i < 5; ++i) y[i] = y0[i] + dt * k3[i];
    Dsdt(y, k4);
    for (int i = 0; i < 4; ++i) {
      s_[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    }
    s_[0] = Wrap(s_[0], -M_PI, M_PI);
    s_[1] = Wrap(s_[1], -M_PI, M_PI);
    s_[2] = std::min(std::max(s_[2], -kMaxVel1), kMaxVel1);
    s_[3] = std::min(std::max(s_[3], -kMaxVel2), kMaxVel2);
    const bool terminated = -std::cos(s_[0]) - std::cos(s_[1] + s_[0]) > 1.0;
    WriteObs(obs);
    return {terminated ? 0.0 : -1.0, terminated};
  }

  // (theta1, theta2, dtheta1, dtheta2) in float64, as the reference's `state`.
  static constexpr int64_t kStateSize = 4;
  void GetState(double* out) const {
    for (int i = 0; i < 4; ++i) out[i] = s_[i];
  }
  // The reference's `env.state = ...` (a float32 state, as after its reset, is the same values:
  // its step computes in float64 either way).
  void SetState(const double* state) {
    for (int i = 0; i < 4; ++i) s_[i] = state[i];
  }

 private:
  static void Dsdt(const double* s, double* out) {
    const double a = s[4];
    const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
    const double d1 = kM1 * (kLc1 * kLc1) +
                      kM2 * (kL1 * kL1 + kLc2 * kLc2 + 2 * kL1 * kLc2 * std::cos(theta2)) + kMoi +
                      kMoi;
    const double d2 = kM2 * (kLc2 * kLc2 + kL1 * kLc2 * std::cos(theta2)) + kMoi;
    const double phi2 = kM2 * kLc2 * kG * std::cos(theta1 + theta2 - M_PI / 2.0);
    const double phi1 = -kM2 * kL1 * kLc2 * Pow2(dtheta2) * std::sin(theta2) -
                        2 * kM2 * kL1 * kLc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                        (kM1 * kLc1 + kM2 * kL1) * kG * std::cos(theta1 - M_PI / 2) + phi2;
    const double ddtheta2 =
        (a + d2 / d1 * phi1 - kM2 * kL1 * kLc2 * Pow2(dtheta1) * std::sin(theta2) - phi2) /
        (kM2 * (kLc2 * kLc2) + kMoi - Pow2(d2) / d1);
    const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    out[0] = dtheta1;
    out[1] = dtheta2;
    out[2] = ddtheta1;
    out[3] = ddtheta2;
    out[4] = 0.0;
  }

  static double Wrap(double x, double m, double big_m) {
    const double diff = big_m - m;
    while (x > big_m) x = x - diff;
    while (x < m) x = x + diff;
    return x;
  }

  void WriteObs(float* obs) const {
    obs[0] = static_cast<float>(std::cos(s_[0]));
    obs[1] = static_cast<float>(std::sin(s_[0]));
    obs[2] = static_cast<float>(std::cos(s_[1]));
    obs[3] = static_cast<float>(std::sin(s_[1]));
    obs[4] = static_cast<float>(s_[2]);
    obs[5] = static_cast<float>(s_[3]);
  }

  double s_[4] = {0, 0, 0, 0};
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_ACROBOT_H_

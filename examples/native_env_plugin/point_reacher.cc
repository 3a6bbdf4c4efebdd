// PointReacher-v0: a point mass on a 2-D table pushed towards a random target.
//
// Observation (float32, 6): position x, y; velocity vx, vy; target offset tx - x, ty - y.
// Action (float32, 2): force along x and y, clipped to [-1, 1].
// Reward: minus the distance to the target, minus 0.01 |force|^2. The episode terminates when
// the point is within `target_radius` of the target; the time limit is 200 steps.
#include <algorithm>
#include <cmath>

#include "fastbatch/env.h"

class PointReacher {
 public:
  using ObsType = float;
  using ActionType = float;

  static constexpr double kDt = 0.05;
  static constexpr double kMaxSpeed = 2.0;
  static constexpr double kDamping = 0.1;

  static fastbatch::Spec MakeSpec() {
    return fastbatch::Spec("PointReacher-v0")
        .Observation(fastbatch::Box({6}, {-1, -1, -kMaxSpeed, -kMaxSpeed, -2, -2},
                                    {1, 1, kMaxSpeed, kMaxSpeed, 2, 2}))
        .Action(fastbatch::Box({2}, -1.0, 1.0))
        .MaxEpisodeSteps(200)
        .FloatParam("target_radius", 0.05, 0.0, 2.0)
        .FloatParam("force_scale", 4.0, 0.0, 100.0);
  }

  explicit PointReacher(const fastbatch::Params& params)
      : target_radius_(params.Float("target_radius")), force_scale_(params.Float("force_scale")) {}

  void Reset(fastbatch::Rng& rng, float* obs) {
    x_ = rng.Uniform(-0.9, 0.9);
    y_ = rng.Uniform(-0.9, 0.9);
    vx_ = vy_ = 0.0;
    tx_ = rng.Uniform(-0.9, 0.9);
    ty_ = rng.Uniform(-0.9, 0.9);
    WriteObs(obs);
  }

  fastbatch::StepResult Step(const float* action, float* obs) {
    const double fx = std::clamp(static_cast<double>(action[0]), -1.0, 1.0);
    const double fy = std::clamp(static_cast<double>(action[1]), -1.0, 1.0);
    vx_ = std::clamp(vx_ * (1.0 - kDamping) + force_scale_ * fx * kDt, -kMaxSpeed, kMaxSpeed);
    vy_ = std::clamp(vy_ * (1.0 - kDamping) + force_scale_ * fy * kDt, -kMaxSpeed, kMaxSpeed);
    x_ = Wall(x_ + vx_ * kDt, &vx_);
    y_ = Wall(y_ + vy_ * kDt, &vy_);
    const double distance = std::hypot(tx_ - x_, ty_ - y_);
    WriteObs(obs);
    return {-distance - 0.01 * (fx * fx + fy * fy), distance < target_radius_};
  }

 private:
  // Stops at the table's edge.
  static double Wall(double p, double* v) {
    if (p < -1.0 || p > 1.0) *v = 0.0;
    return std::clamp(p, -1.0, 1.0);
  }

  void WriteObs(float* obs) const {
    obs[0] = static_cast<float>(x_);
    obs[1] = static_cast<float>(y_);
    obs[2] = static_cast<float>(vx_);
    obs[3] = static_cast<float>(vy_);
    obs[4] = static_cast<float>(tx_ - x_);
    obs[5] = static_cast<float>(ty_ - y_);
  }

  double target_radius_, force_scale_;
  double x_ = 0, y_ = 0, vx_ = 0, vy_ = 0, tx_ = 0, ty_ = 0;
};

FASTBATCH_EXPORT_ENV(PointReacher)

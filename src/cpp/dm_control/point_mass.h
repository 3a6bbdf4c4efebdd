// dm_control's point_mass domain (suite/point_mass.py): easy, and hard, whose actuators drive a
// random pair of joint directions each episode (the task edits its model's tendon weights).
#ifndef FASTBATCH_DM_CONTROL_POINT_MASS_H_
#define FASTBATCH_DM_CONTROL_POINT_MASS_H_

#include <cmath>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <bool kRandomizeGains>
struct PointMass {
  static constexpr const char* kId =
      kRandomizeGains ? "dm_control/point_mass-hard-v0" : "dm_control/point_mass-easy-v0";
  static constexpr const char* kFile = "point_mass.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kPrivateModel = kRandomizeGains;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"position", m->nq}, {"velocity", m->nv}};
  }

  explicit PointMass(const Physics& physics)
      : target_(physics.Id(mjOBJ_GEOM, "target")), mass_(physics.Id(mjOBJ_GEOM, "pointmass")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    RandomizeLimitedAndRotationalJoints(physics, random);
    if (!kRandomizeGains) return;
    auto direction = [&random](double* dir) {
      dir[0] = random.StandardNormal();
      dir[1] = random.StandardNormal();
      const double norm = Norm(dir, 2);
      dir[0] /= norm;
      dir[1] /= norm;
    };
    double dir1[2], dir2[2];
    direction(dir1);
    do {
      direction(dir2);
    } while (std::fabs(Dot(dir1, dir2, 2)) > 0.9);
    mjtNum* wrap_prm = physics.mutable_m()->wrap_prm;
    wrap_prm[0] = dir1[0];
    wrap_prm[1] = dir1[1];
    wrap_prm[2] = dir2[0];
    wrap_prm[3] = dir2[1];
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 0; k < physics.m()->nq; ++k) *obs++ = d->qpos[k];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    double to_target[3];
    for (int k = 0; k < 3; ++k)
      to_target[k] = d->geom_xpos[3 * target_ + k] - d->geom_xpos[3 * mass_ + k];
    const double size = physics.m()->geom_size[3 * target_];
    const double near_target = Tolerance{0, size, size}(Norm(to_target, 3));
    const Tolerance control{0, 0, 1, Sigmoid::kQuadratic, 0};
    double values[8];
    const int nu = physics.m()->nu;
    for (int k = 0; k < nu; ++k) values[k] = control(d->ctrl[k], Input::kElement);
    const double small_control = (Mean(values, nu) + 4) / 5;
    return near_target * small_control;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int target_, mass_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_POINT_MASS_H_

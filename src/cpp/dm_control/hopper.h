// dm_control's hopper domain (suite/hopper.py): stand and hop.
#ifndef FASTBATCH_DM_CONTROL_HOPPER_H_
#define FASTBATCH_DM_CONTROL_HOPPER_H_

#include <cmath>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <bool kHopping>
struct Hopper {
  static constexpr const char* kId =
      kHopping ? "dm_control/hopper-hop-v0" : "dm_control/hopper-stand-v0";
  static constexpr const char* kFile = "hopper.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"position", m->nq - 1}, {"velocity", m->nv}, {"touch", 2}};
  }

  explicit Hopper(const Physics& physics)
      : torso_(physics.Id(mjOBJ_BODY, "torso")),
        foot_(physics.Id(mjOBJ_BODY, "foot")),
        speed_(physics.SensorAdr("torso_subtreelinvel")),
        toe_(physics.SensorAdr("touch_toe")),
        heel_(physics.SensorAdr("touch_heel")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    RandomizeLimitedAndRotationalJoints(physics, random);
  }

  // touch: np.log1p of the touch sensors (libm's log1p; see rewards.h on numpy's own).
  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 1; k < physics.m()->nq; ++k) *obs++ = d->qpos[k];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
    *obs++ = std::log1p(d->sensordata[toe_]);
    *obs++ = std::log1p(d->sensordata[heel_]);
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const double height = d->xipos[3 * torso_ + 2] - d->xipos[3 * foot_ + 2];
    const double standing = Tolerance{0.6, 2}(height);
    if (kHopping) {
      return standing * Tolerance{2, kInf, 1, Sigmoid::kLinear, 0.5}(d->sensordata[speed_]);
    }
    const Tolerance control{0, 0, 1, Sigmoid::kQuadratic, 0};
    double values[8];
    const int nu = physics.m()->nu;
    for (int k = 0; k < nu; ++k) values[k] = control(d->ctrl[k], Input::kElement);
    return standing * ((Mean(values, nu) + 4) / 5);
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int torso_, foot_, speed_, toe_, heel_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_HOPPER_H_

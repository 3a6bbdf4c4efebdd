// dm_control's walker domain (suite/walker.py): stand, walk and run.
#ifndef FASTBATCH_DM_CONTROL_WALKER_H_
#define FASTBATCH_DM_CONTROL_WALKER_H_

#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <int kSpeed>  // _WALK_SPEED 1, _RUN_SPEED 8, 0 for stand
struct PlanarWalker {
  static constexpr const char* kId =
      kSpeed == 0 ? "dm_control/walker-stand-v0"
                  : (kSpeed == 1 ? "dm_control/walker-walk-v0" : "dm_control/walker-run-v0");
  static constexpr const char* kFile = "walker.xml";
  static constexpr double kTimeLimit = 25;
  static constexpr double kControlTimestep = .025;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"orientations", 2 * (m->nbody - 1)}, {"height", 1}, {"velocity", m->nv}};
  }

  explicit PlanarWalker(const Physics& physics)
      : torso_(physics.Id(mjOBJ_BODY, "torso")),
        velocity_(physics.SensorAdr("torso_subtreelinvel")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    RandomizeLimitedAndRotationalJoints(physics, random);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int b = 1; b < physics.m()->nbody; ++b) {
      *obs++ = d->xmat[9 * b + kXX];
      *obs++ = d->xmat[9 * b + kXZ];
    }
    *obs++ = d->xpos[3 * torso_ + 2];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const double standing = Tolerance{1.2, kInf, 1.2 / 2}(d->xpos[3 * torso_ + 2]);
    const double upright = (1 + d->xmat[9 * torso_ + kZZ]) / 2;
    const double stand_reward = (3 * standing + upright) / 4;
    if (kSpeed == 0) return stand_reward;
    const double move = Tolerance{double(kSpeed), kInf, kSpeed / 2.0, Sigmoid::kLinear,
                                  0.5}(d->sensordata[velocity_]);
    return stand_reward * (5 * move + 1) / 6;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int torso_, velocity_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_WALKER_H_

// dm_control's pendulum (suite/pendulum.py: swingup) and acrobot (suite/acrobot.py: swingup,
// swingup_sparse) domains: one or two hinged poles to swing up.
#ifndef FASTBATCH_DM_CONTROL_PENDULUM_ACROBOT_H_
#define FASTBATCH_DM_CONTROL_PENDULUM_ACROBOT_H_

#include <cmath>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

struct PendulumSwingup {
  static constexpr const char* kId = "dm_control/pendulum-swingup-v0";
  static constexpr const char* kFile = "pendulum.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel*) {
    return {{"orientation", 2}, {"velocity", 1}};
  }

  explicit PendulumSwingup(const Physics& physics)
      : pole_(physics.Id(mjOBJ_BODY, "pole")),
        hinge_(physics.QposAdr("hinge")),
        hinge_dof_(physics.DofAdr("hinge")),
        cosine_bound_(std::cos(8 * kPi / 180)) {}  // np.cos(np.deg2rad(8))

  void Initialize(Physics& physics, RandomState& random) const {
    physics.d()->qpos[hinge_] = random.Uniform(-kPi, kPi);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    obs[0] = d->xmat[9 * pole_ + kZZ];
    obs[1] = d->xmat[9 * pole_ + kXZ];
    obs[2] = d->qvel[hinge_dof_];
  }

  double Reward(const Physics& physics) const {
    return Tolerance{cosine_bound_, 1}(physics.d()->xmat[9 * pole_ + kZZ]);
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int pole_, hinge_, hinge_dof_;
  double cosine_bound_;
};

template <bool kSparse>
struct AcrobotSwingup {
  static constexpr const char* kId =
      kSparse ? "dm_control/acrobot-swingup_sparse-v0" : "dm_control/acrobot-swingup-v0";
  static constexpr const char* kFile = "acrobot.xml";
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"orientations", 4}, {"velocity", m->nv}};
  }

  explicit AcrobotSwingup(const Physics& physics)
      : upper_(physics.Id(mjOBJ_BODY, "upper_arm")),
        lower_(physics.Id(mjOBJ_BODY, "lower_arm")),
        shoulder_(physics.QposAdr("shoulder")),
        elbow_(physics.QposAdr("elbow")),
        target_(physics.Id(mjOBJ_SITE, "target")),
        tip_(physics.Id(mjOBJ_SITE, "tip")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    physics.d()->qpos[shoulder_] = random.Uniform(-kPi, kPi);
    physics.d()->qpos[elbow_] = random.Uniform(-kPi, kPi);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    *obs++ = d->xmat[9 * upper_ + kXZ];
    *obs++ = d->xmat[9 * lower_ + kXZ];
    *obs++ = d->xmat[9 * upper_ + kZZ];
    *obs++ = d->xmat[9 * lower_ + kZZ];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    double tip_to_target[3];
    for (int k = 0; k < 3; ++k)
      tip_to_target[k] = d->site_xpos[3 * target_ + k] - d->site_xpos[3 * tip_ + k];
    const double radius = physics.m()->site_size[3 * target_];
    return Tolerance{0, radius, kSparse ? 0.0 : 1.0}(Norm(tip_to_target, 3));
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int upper_, lower_, shoulder_, elbow_, target_, tip_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_PENDULUM_ACROBOT_H_

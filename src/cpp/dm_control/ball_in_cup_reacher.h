// dm_control's ball_in_cup (suite/ball_in_cup.py: catch) and reacher (suite/reacher.py: easy,
// hard) domains. Reacher places its target per episode by editing its model (a private copy).
#ifndef FASTBATCH_DM_CONTROL_BALL_IN_CUP_REACHER_H_
#define FASTBATCH_DM_CONTROL_BALL_IN_CUP_REACHER_H_

#include <cmath>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

struct BallInCupCatch {
  static constexpr const char* kId = "dm_control/ball_in_cup-catch-v0";
  static constexpr const char* kFile = "ball_in_cup.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"position", m->nq}, {"velocity", m->nv}};
  }

  explicit BallInCupCatch(const Physics& physics)
      : ball_x_(physics.QposAdr("ball_x")),
        ball_z_(physics.QposAdr("ball_z")),
        target_(physics.Id(mjOBJ_SITE, "target")),
        ball_(physics.Id(mjOBJ_BODY, "ball")),
        ball_geom_(physics.Id(mjOBJ_GEOM, "ball")) {}

  // The ball anywhere in a box, drawn again while it penetrates anything.
  void Initialize(Physics& physics, RandomState& random) const {
    do {
      physics.d()->qpos[ball_x_] = random.Uniform(-.2, .2);
      physics.d()->qpos[ball_z_] = random.Uniform(.2, .5);
      physics.AfterReset();
    } while (physics.d()->ncon > 0);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 0; k < physics.m()->nq; ++k) *obs++ = d->qpos[k];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const mjModel* m = physics.m();
    const double ball_size = m->geom_size[3 * ball_geom_];
    const int axes[2] = {0, 2};
    for (int i = 0; i < 2; ++i) {
      const int k = axes[i];
      const double gap = std::fabs(d->site_xpos[3 * target_ + k] - d->xpos[3 * ball_ + k]);
      if (!(gap < m->site_size[3 * target_ + k] - ball_size)) return 0.0;
    }
    return 1.0;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int ball_x_, ball_z_, target_, ball_, ball_geom_;
};

template <bool kHard>
struct Reacher {
  static constexpr const char* kId =
      kHard ? "dm_control/reacher-hard-v0" : "dm_control/reacher-easy-v0";
  static constexpr const char* kFile = "reacher.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kPrivateModel = true;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"position", m->nq}, {"to_target", 2}, {"velocity", m->nv}};
  }

  explicit Reacher(const Physics& physics)
      : target_(physics.Id(mjOBJ_GEOM, "target")), finger_(physics.Id(mjOBJ_GEOM, "finger")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    mjModel* m = physics.mutable_m();
    m->geom_size[3 * target_] = kHard ? .015 : .05;
    RandomizeLimitedAndRotationalJoints(physics, random);
    const double angle = random.Uniform(0, 2 * kPi);
    const double radius = random.Uniform(.05, .20);
    m->geom_pos[3 * target_] = radius * std::sin(angle);
    m->geom_pos[3 * target_ + 1] = radius * std::cos(angle);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 0; k < physics.m()->nq; ++k) *obs++ = d->qpos[k];
    *obs++ = d->geom_xpos[3 * target_] - d->geom_xpos[3 * finger_];
    *obs++ = d->geom_xpos[3 * target_ + 1] - d->geom_xpos[3 * finger_ + 1];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const mjModel* m = physics.m();
    const double to_target[2] = {d->geom_xpos[3 * target_] - d->geom_xpos[3 * finger_],
                                 d->geom_xpos[3 * target_ + 1] - d->geom_xpos[3 * finger_ + 1]};
    const double radii = m->geom_size[3 * target_] + m->geom_size[3 * finger_];
    return Tolerance{0, radii}(Norm(to_target, 2));
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int target_, finger_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_BALL_IN_CUP_REACHER_H_

// dm_control's humanoid domain (suite/humanoid.py): stand, walk, run and run_pure_state.
#ifndef FASTBATCH_DM_CONTROL_HUMANOID_H_
#define FASTBATCH_DM_CONTROL_HUMANOID_H_

#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <int kSpeed, bool kPureState>  // _WALK_SPEED 1, _RUN_SPEED 10, 0 for stand
struct Humanoid {
  static constexpr const char* kId =
      kPureState
          ? "dm_control/humanoid-run_pure_state-v0"
          : (kSpeed == 0
                 ? "dm_control/humanoid-stand-v0"
                 : (kSpeed == 1 ? "dm_control/humanoid-walk-v0" : "dm_control/humanoid-run-v0"));
  static constexpr const char* kFile = "humanoid.xml";
  static constexpr double kTimeLimit = 25;
  static constexpr double kControlTimestep = .025;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    if (kPureState) return {{"position", m->nq}, {"velocity", m->nv}};
    return {{"joint_angles", m->nq - 7}, {"head_height", 1},  {"extremities", 12},
            {"torso_vertical", 3},       {"com_velocity", 3}, {"velocity", m->nv}};
  }

  explicit Humanoid(const Physics& physics)
      : torso_(physics.Id(mjOBJ_BODY, "torso")),
        head_(physics.Id(mjOBJ_BODY, "head")),
        com_velocity_(physics.SensorAdr("torso_subtreelinvel")),
        limbs_{physics.Id(mjOBJ_BODY, "left_hand"), physics.Id(mjOBJ_BODY, "left_foot"),
               physics.Id(mjOBJ_BODY, "right_hand"), physics.Id(mjOBJ_BODY, "right_foot")} {}

  // Random joints (the root's orientation too), drawn again while anything penetrates.
  void Initialize(Physics& physics, RandomState& random) const {
    do {
      RandomizeLimitedAndRotationalJoints(physics, random);
      physics.AfterReset();
    } while (physics.d()->ncon > 0);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    const mjModel* m = physics.m();
    if (kPureState) {
      for (int k = 0; k < m->nq; ++k) *obs++ = d->qpos[k];
      for (int k = 0; k < m->nv; ++k) *obs++ = d->qvel[k];
      return;
    }
    for (int k = 7; k < m->nq; ++k) *obs++ = d->qpos[k];
    *obs++ = d->xpos[3 * head_ + 2];
    const double* torso_frame = d->xmat + 9 * torso_;
    for (int limb : limbs_) {
      double torso_to_limb[3];
      for (int k = 0; k < 3; ++k)
        torso_to_limb[k] = d->xpos[3 * limb + k] - d->xpos[3 * torso_ + k];
      VecMat3(torso_to_limb, torso_frame, obs);
      obs += 3;
    }
    *obs++ = torso_frame[kZX];
    *obs++ = torso_frame[kZY];
    *obs++ = torso_frame[kZZ];
    for (int k = 0; k < 3; ++k) *obs++ = d->sensordata[com_velocity_ + k];
    for (int k = 0; k < m->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const double standing = Tolerance{1.4, kInf, 1.4 / 4}(d->xpos[3 * head_ + 2]);
    const double upright =
        Tolerance{0.9, kInf, 1.9, Sigmoid::kLinear, 0}(d->xmat[9 * torso_ + kZZ]);
    const double stand_reward = standing * upright;
    const Tolerance control{0, 0, 1, Sigmoid::kQuadratic, 0};
    const int nu = physics.m()->nu;
    double values[128];
    for (int k = 0; k < nu; ++k) values[k] = control(d->ctrl[k], Input::kElement);
    const double small_control = (4 + Mean(values, nu)) / 5;
    const double* com_velocity = d->sensordata + com_velocity_;
    if (kSpeed == 0) {
      const Tolerance still{0, 0, 2};
      const double dont_move[2] = {still(com_velocity[0], Input::kElement),
                                   still(com_velocity[1], Input::kElement)};
      return small_control * stand_reward * Mean(dont_move, 2);
    }
    const double speed = Norm(com_velocity, 2);
    double move = Tolerance{double(kSpeed), kInf, double(kSpeed), Sigmoid::kLinear, 0}(speed);
    move = (5 * move + 1) / 6;
    return small_control * stand_reward * move;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int torso_, head_, com_velocity_;
  int limbs_[4];
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_HUMANOID_H_

// dm_control's fish domain (suite/fish.py): upright and swim. Swim places its target per episode
// by editing its model (a private copy).
#ifndef FASTBATCH_DM_CONTROL_FISH_H_
#define FASTBATCH_DM_CONTROL_FISH_H_

#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <bool kSwim>
struct Fish {
  static constexpr const char* kId =
      kSwim ? "dm_control/fish-swim-v0" : "dm_control/fish-upright-v0";
  static constexpr const char* kFile = "fish.xml";
  static constexpr double kTimeLimit = 40;
  static constexpr double kControlTimestep = .04;
  static constexpr bool kPrivateModel = true;  // swim moves the target, upright hides it
  static constexpr const char* kJoints[7] = {"tail1",         "tail_twist",     "tail2",
                                             "finright_roll", "finright_pitch", "finleft_roll",
                                             "finleft_pitch"};

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    if (!kSwim) return {{"joint_angles", 7}, {"upright", 1}, {"velocity", m->nv}};
    return {{"joint_angles", 7}, {"upright", 1}, {"target", 3}, {"velocity", m->nv}};
  }

  explicit Fish(const Physics& physics)
      : torso_(physics.Id(mjOBJ_BODY, "torso")),
        root_(physics.QposAdr("root")),
        target_(physics.Id(mjOBJ_GEOM, "target")),
        mouth_(physics.Id(mjOBJ_GEOM, "mouth")) {
    for (int k = 0; k < 7; ++k) {
      joint_qpos_[k] = physics.QposAdr(kJoints[k]);
      joint_dof_[k] = physics.DofAdr(kJoints[k]);
    }
  }

  void Initialize(Physics& physics, RandomState& random) const {
    double quat[4];
    for (double& q : quat) q = random.StandardNormal();
    const double norm = Norm(quat, 4);
    double* qpos = physics.d()->qpos;
    for (int k = 0; k < 4; ++k) qpos[root_ + 3 + k] = quat[k] / norm;
    for (int k = 0; k < 7; ++k) qpos[joint_qpos_[k]] = random.Uniform(-.2, .2);
    if (!kSwim) physics.mutable_m()->geom_rgba[4 * target_ + 3] = 0;  // frames only
    if (kSwim) {
      double* pos = physics.mutable_m()->geom_pos + 3 * target_;
      pos[0] = random.Uniform(-.4, .4);
      pos[1] = random.Uniform(-.4, .4);
      pos[2] = random.Uniform(.1, .3);
    }
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 0; k < 7; ++k) *obs++ = d->qpos[joint_qpos_[k]];
    *obs++ = d->xmat[9 * torso_ + kZZ];
    if (kSwim) {
      MouthToTarget(d, obs);
      obs += 3;
    }
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const double upright = d->xmat[9 * torso_ + kZZ];
    if (!kSwim) return Tolerance{1, 1, 1}(upright);
    const mjModel* m = physics.m();
    const double radii = m->geom_size[3 * mouth_] + m->geom_size[3 * target_];
    double to_target[3];
    MouthToTarget(d, to_target);
    const double in_target = Tolerance{0, radii, 2 * radii}(Norm(to_target, 3));
    const double is_upright = 0.5 * (upright + 1);
    return (7 * in_target + is_upright) / 8;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

 private:
  // The target in the mouth's frame: (target - mouth) . mouth_xmat.
  void MouthToTarget(const mjData* d, double* out) const {
    double global[3];
    for (int k = 0; k < 3; ++k)
      global[k] = d->geom_xpos[3 * target_ + k] - d->geom_xpos[3 * mouth_ + k];
    VecMat3(global, d->geom_xmat + 9 * mouth_, out);
  }

  int torso_, root_, target_, mouth_;
  int joint_qpos_[7], joint_dof_[7];
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_FISH_H_

// dm_control's finger domain (suite/finger.py): spin, turn_easy and turn_hard. Every task edits
// its model per episode (the spinner's damping, the target site), so each env has its own copy.
#ifndef FASTBATCH_DM_CONTROL_FINGER_H_
#define FASTBATCH_DM_CONTROL_FINGER_H_

#include <cmath>
#include <stdexcept>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

// kTargetRadius 0: spin; else turn to a target of that radius (_EASY 0.07, _HARD 0.03).
template <int kTargetMillimetres>
struct Finger {
  static constexpr bool kTurn = kTargetMillimetres > 0;
  static constexpr const char* kId =
      !kTurn ? "dm_control/finger-spin-v0"
             : (kTargetMillimetres == 70 ? "dm_control/finger-turn_easy-v0"
                                         : "dm_control/finger-turn_hard-v0");
  static constexpr const char* kFile = "finger.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr bool kPrivateModel = true;

  static std::vector<ObsKey> ObsKeys(const mjModel*) {
    if (!kTurn) return {{"position", 4}, {"velocity", 3}, {"touch", 2}};
    return {{"position", 4},
            {"velocity", 3},
            {"touch", 2},
            {"target_position", 2},
            {"dist_to_target", 1}};
  }

  explicit Finger(const Physics& physics)
      : proximal_(physics.SensorAdr("proximal")),
        distal_(physics.SensorAdr("distal")),
        proximal_velocity_(physics.SensorAdr("proximal_velocity")),
        distal_velocity_(physics.SensorAdr("distal_velocity")),
        hinge_velocity_(physics.SensorAdr("hinge_velocity")),
        tip_(physics.SensorAdr("tip")),
        spinner_(physics.SensorAdr("spinner")),
        target_(physics.SensorAdr("target")),
        touch_top_(physics.SensorAdr("touchtop")),
        touch_bottom_(physics.SensorAdr("touchbottom")),
        hinge_(physics.Id(mjOBJ_JOINT, "hinge")),
        hinge_dof_(physics.DofAdr("hinge")),
        cap1_(physics.Id(mjOBJ_GEOM, "cap1")),
        target_site_(physics.Id(mjOBJ_SITE, "target")),
        tip_site_(physics.Id(mjOBJ_SITE, "tip")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    mjModel* m = physics.mutable_m();
    if (!kTurn) {
      m->site_rgba[4 * target_site_ + 3] = 0;  // hides the target and the tip (frames only)
      m->site_rgba[4 * tip_site_ + 3] = 0;
      m->dof_damping[hinge_dof_] = .03;
    } else {
      const double angle = random.Uniform(-kPi, kPi);
      const double hinge_x = physics.d()->xanchor[3 * hinge_];
      const double hinge_z = physics.d()->xanchor[3 * hinge_ + 2];
      const double* size = m->geom_size + 3 * cap1_;
      const double radius = size[0] + size[1] + size[2];
      m->site_pos[3 * target_site_] = hinge_x + radius * std::sin(angle);
      m->site_pos[3 * target_site_ + 2] = hinge_z + radius * std::cos(angle);
      m->site_size[3 * target_site_] = kTargetMillimetres / 1000.0;
    }
    for (int attempt = 0;; ++attempt) {  // _set_random_joint_angles
      if (attempt == 1000) {
        throw std::runtime_error("Could not find a collision-free state after 1000 attempts");
      }
      RandomizeLimitedAndRotationalJoints(physics, random);
      physics.AfterReset();
      if (physics.d()->ncon == 0) break;
    }
  }

  void Observe(const Physics& physics, double* obs) const {
    const double* s = physics.d()->sensordata;
    *obs++ = s[proximal_];
    *obs++ = s[distal_];
    *obs++ = s[tip_] - s[spinner_];
    *obs++ = s[tip_ + 2] - s[spinner_ + 2];
    *obs++ = s[proximal_velocity_];
    *obs++ = s[distal_velocity_];
    *obs++ = s[hinge_velocity_];
    *obs++ = std::log1p(s[touch_top_]);
    *obs++ = std::log1p(s[touch_bottom_]);
    if (kTurn) {
      *obs++ = s[target_] - s[spinner_];
      *obs++ = s[target_ + 2] - s[spinner_ + 2];
      *obs++ = DistToTarget(physics);
    }
  }

  double Reward(const Physics& physics) const {
    if (!kTurn) return physics.d()->sensordata[hinge_velocity_] <= -15.0 ? 1.0 : 0.0;
    return DistToTarget(physics) <= 0 ? 1.0 : 0.0;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

 private:
  double DistToTarget(const Physics& physics) const {
    const double* s = physics.d()->sensordata;
    const double to_target[2] = {
        (s[target_] - s[spinner_]) - (s[tip_] - s[spinner_]),
        (s[target_ + 2] - s[spinner_ + 2]) - (s[tip_ + 2] - s[spinner_ + 2])};
    return Norm(to_target, 2) - physics.m()->site_size[3 * target_site_];
  }

  int proximal_, distal_, proximal_velocity_, distal_velocity_, hinge_velocity_, tip_, spinner_,
      target_, touch_top_, touch_bottom_, hinge_, hinge_dof_, cap1_, target_site_, tip_site_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_FINGER_H_

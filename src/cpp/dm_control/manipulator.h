// dm_control's manipulator domain (suite/manipulator.py): bring_ball, bring_peg, insert_ball and
// insert_peg, fully observable. dm_control generates each task's model by removing the props it
// does not use (`make_model`); `fastbatch.dm_control` does the same and hands the XML over as
// "manipulator_<object>[_insert].xml". Targets and receptacles move per episode by editing the
// model (a private copy).
//
// Where it may differ from dm_control: an episode whose object starts in the hand (one in ten)
// takes its angle from atan2, libm's here; numpy's AVX-512 build computes np.arctan2 with its own
// SIMD code, which differs in the last bit for a few percent of angles, and such an episode then
// drifts from dm_control's by rounding (docs/envs.md).
#ifndef FASTBATCH_DM_CONTROL_MANIPULATOR_H_
#define FASTBATCH_DM_CONTROL_MANIPULATOR_H_

#include <algorithm>
#include <cmath>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <bool kPeg, bool kInsert>
struct Manipulator {
  static constexpr const char* kId = kPeg ? (kInsert ? "dm_control/manipulator-insert_peg-v0"
                                                     : "dm_control/manipulator-bring_peg-v0")
                                          : (kInsert ? "dm_control/manipulator-insert_ball-v0"
                                                     : "dm_control/manipulator-bring_ball-v0");
  static constexpr const char* kFile =
      kPeg ? (kInsert ? "manipulator_peg_insert.xml" : "manipulator_peg.xml")
           : (kInsert ? "manipulator_ball_insert.xml" : "manipulator_ball.xml");
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = .01;
  static constexpr bool kPrivateModel = true;
  static constexpr const char* kArmJoints[8] = {"arm_root",  "arm_shoulder", "arm_elbow",
                                                "arm_wrist", "finger",       "fingertip",
                                                "thumb",     "thumbtip"};
  static constexpr const char* kTouch[5] = {"palm_touch", "finger_touch", "thumb_touch",
                                            "fingertip_touch", "thumbtip_touch"};
  static constexpr double kClose = .01;

  static std::vector<ObsKey> ObsKeys(const mjModel*) {
    return {{"arm_pos", 16},   {"arm_vel", 8},    {"touch", 5},     {"hand_pos", 4},
            {"object_pos", 4}, {"object_vel", 3}, {"target_pos", 4}};
  }

  explicit Manipulator(const Physics& physics)
      : hand_(physics.Id(mjOBJ_BODY, "hand")),
        object_(physics.Id(mjOBJ_BODY, kPeg ? "peg" : "ball")),
        target_(physics.Id(mjOBJ_BODY, kPeg ? "target_peg" : "target_ball")),
        receptacle_(kInsert ? physics.Id(mjOBJ_BODY, kPeg ? "slot" : "cup") : -1),
        finger_(physics.QposAdr("finger")),
        thumb_(physics.QposAdr("thumb")),
        grasp_(physics.Id(mjOBJ_SITE, "grasp")) {
    for (int k = 0; k < 8; ++k) {
      arm_joint_[k] = physics.Id(mjOBJ_JOINT, kArmJoints[k]);
      arm_qpos_[k] = physics.QposAdr(kArmJoints[k]);
      arm_dof_[k] = physics.DofAdr(kArmJoints[k]);
    }
    for (int k = 0; k < 5; ++k) touch_[k] = physics.SensorAdr(kTouch[k]);
    const char* dims = "xzy";
    for (int k = 0; k < 3; ++k) {
      const std::string name = std::string(kPeg ? "peg" : "ball") + "_" + dims[k];
      object_qpos_[k] = physics.QposAdr(name.c_str());
      object_dof_[k] = physics.DofAdr(name.c_str());
    }
    if (kPeg) {
      sites_[0] = physics.Id(mjOBJ_SITE, "peg_grasp");
      sites_[1] = physics.Id(mjOBJ_SITE, "grasp");
      sites_[2] = physics.Id(mjOBJ_SITE, "peg_pinch");
      sites_[3] = physics.Id(mjOBJ_SITE, "pinch");
      sites_[4] = physics.Id(mjOBJ_SITE, "peg");
      sites_[5] = physics.Id(mjOBJ_SITE, "target_peg");
      sites_[6] = physics.Id(mjOBJ_SITE, "target_peg_tip");
      sites_[7] = physics.Id(mjOBJ_SITE, "peg_tip");
    } else {
      sites_[0] = physics.Id(mjOBJ_SITE, "ball");
      sites_[1] = physics.Id(mjOBJ_SITE, "target_ball");
    }
  }

  void Initialize(Physics& physics, RandomState& random) const {
    mjModel* m = physics.mutable_m();
    mjData* d = physics.d();
    do {
      for (int k = 0; k < 8; ++k) {
        const int j = arm_joint_[k];
        const bool limited = m->jnt_limited[j] != 0;
        const double low = limited ? m->jnt_range[2 * j] : -kPi;
        const double high = limited ? m->jnt_range[2 * j + 1] : kPi;
        d->qpos[arm_qpos_[k]] = random.Uniform(low, high);
      }
      d->qpos[finger_] = d->qpos[thumb_];
      const double target_x = random.Uniform(-.4, .4);
      const double target_z = random.Uniform(.1, .4);
      double target_angle;
      if (kInsert) {
        target_angle = random.Uniform(-kPi / 3, kPi / 3);
        SetPose(m, receptacle_, target_x, target_z, target_angle);
      } else {
        target_angle = random.Uniform(-kPi, kPi);
      }
      SetPose(m, target_, target_x, target_z, target_angle);
      // choice(['in_hand', 'in_target', 'uniform'], p=[.1, .1, .8]): one random_sample
      // against the normalised cumulative probabilities (searchsorted, side='right').
      const double p_rest = 1 - .1 - .1;
      double cdf[3] = {.1, .1 + .1, 0};
      cdf[2] = cdf[1] + p_rest;
      for (double& c : cdf) c /= (.1 + .1) + p_rest;
      const double u = random.RandomSample();
      const int init_type = (cdf[0] <= u) + (cdf[1] <= u) + (cdf[2] <= u);
      double object_x, object_z, object_angle;
      if (init_type == 1) {  // in_target
        object_x = target_x;
        object_z = target_z;
        object_angle = target_angle;
      } else if (init_type == 0) {  // in_hand
        physics.AfterReset();
        object_x = d->site_xpos[3 * grasp_];
        object_z = d->site_xpos[3 * grasp_ + 2];
        const double* xmat = d->site_xmat + 9 * grasp_;
        object_angle = kPi - std::atan2(xmat[kZX], xmat[kXX]);
      } else {
        object_x = random.Uniform(-.5, .5);
        object_z = random.Uniform(0, .7);
        object_angle = random.Uniform(0, 2 * kPi);
        d->qvel[object_dof_[0]] = random.Uniform(-5, 5);
      }
      d->qpos[object_qpos_[0]] = object_x;
      d->qpos[object_qpos_[1]] = object_z;
      d->qpos[object_qpos_[2]] = object_angle;
      physics.AfterReset();
    } while (d->ncon > 0);
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 0; k < 8; ++k) {
      *obs++ = std::sin(d->qpos[arm_qpos_[k]]);
      *obs++ = std::cos(d->qpos[arm_qpos_[k]]);
    }
    for (int k = 0; k < 8; ++k) *obs++ = d->qvel[arm_dof_[k]];
    for (int k = 0; k < 5; ++k) *obs++ = std::log1p(d->sensordata[touch_[k]]);
    obs = Pose2d(d, hand_, obs);
    obs = Pose2d(d, object_, obs);
    for (int k = 0; k < 3; ++k) *obs++ = d->qvel[object_dof_[k]];
    Pose2d(d, target_, obs);
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    if (!kPeg) return IsClose(SiteDistance(d, sites_[0], sites_[1]));
    const double grasp = IsClose(SiteDistance(d, sites_[0], sites_[1]));
    const double pinch = IsClose(SiteDistance(d, sites_[2], sites_[3]));
    const double grasping = (grasp + pinch) / 2;
    const double bring = IsClose(SiteDistance(d, sites_[4], sites_[5]));
    const double bring_tip = IsClose(SiteDistance(d, sites_[6], sites_[7]));
    const double bringing = (bring + bring_tip) / 2;
    return std::max(bringing, grasping / 3);
  }

  double Discount(const Physics&) const { return kNoDiscount; }

 private:
  static void SetPose(mjModel* m, int body, double x, double z, double angle) {
    m->body_pos[3 * body] = x;
    m->body_pos[3 * body + 2] = z;
    m->body_quat[4 * body] = std::cos(angle / 2);
    m->body_quat[4 * body + 2] = std::sin(angle / 2);
  }
  // body_2d_pose: x, z, qw, qy.
  static double* Pose2d(const mjData* d, int body, double* out) {
    *out++ = d->xpos[3 * body];
    *out++ = d->xpos[3 * body + 2];
    *out++ = d->xquat[4 * body];
    *out++ = d->xquat[4 * body + 2];
    return out;
  }
  // site_distance(site1, site2): |site1 - site2|.
  static double SiteDistance(const mjData* d, int site1, int site2) {
    double gap[3];
    for (int k = 0; k < 3; ++k) gap[k] = d->site_xpos[3 * site1 + k] - d->site_xpos[3 * site2 + k];
    return Norm(gap, 3);
  }
  static double IsClose(double distance) { return Tolerance{0, kClose, kClose * 2}(distance); }

  int hand_, object_, target_, receptacle_, finger_, thumb_, grasp_;
  int arm_joint_[8], arm_qpos_[8], arm_dof_[8], touch_[5], object_qpos_[3], object_dof_[3];
  int sites_[8] = {};
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_MANIPULATOR_H_

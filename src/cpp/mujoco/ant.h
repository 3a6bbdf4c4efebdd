// Ant-v5, matching gymnasium 1.x `envs/mujoco/ant_v5.py` on its `ant.xml`: walk forward (the
// velocity of body `main_body`), healthy while the state is finite and the torso z is in
// [low, high] (inclusive), contact cost over the clipped external forces of every body, contact
// forces of the bodies but the world in the observation. Same kwargs (range kwargs as
// `<name>_low`/`<name>_high` params; `main_body` as a body index), reset noise (uniform qpos,
// normal qvel), info keys and time limit.
#ifndef FASTBATCH_MUJOCO_ANT_H_
#define FASTBATCH_MUJOCO_ANT_H_

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim.h"

namespace fastbatch::mujoco {

class Ant {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "ant.xml";
  static constexpr int64_t kStateSize = 29;    // nq 15 + nv 14
  static constexpr CameraConfig kCamera{4.0};  // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int {
    kXPosition,
    kYPosition,
    kDistanceFromOrigin,
    kXVelocity,
    kYVelocity,
    kRewardForward,
    kRewardCtrl,
    kRewardContact,
    kRewardSurvive,
    kInfoRowSize
  };
  static constexpr InfoEntry kInfos[] = {
      {kXPosition, "x_position"},
      {kYPosition, "y_position"},
      {kDistanceFromOrigin, "distance_from_origin"},
      {kXVelocity, "x_velocity"},
      {kYVelocity, "y_velocity"},
      {kRewardForward, "reward_forward"},
      {kRewardCtrl, "reward_ctrl"},
      {kRewardContact, "reward_contact"},
      {kRewardSurvive, "reward_survive"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList()
        .Int("frame_skip", 5, 1, 1000)
        .Float("forward_reward_weight", 1.0)
        .Float("ctrl_cost_weight", 0.5)
        .Float("contact_cost_weight", 5e-4)
        .Float("healthy_reward", 1.0)
        .Int("main_body", 1, 0, LoadModel(kFile)->nbody - 1)  // a body index
        .Bool("terminate_when_unhealthy", true)
        .Float("healthy_z_range_low", 0.2)
        .Float("healthy_z_range_high", 1.0)
        .Float("contact_force_range_low", -1.0)
        .Float("contact_force_range_high", 1.0)
        .Float("reset_noise_scale", 0.1, 0.0)
        .Bool("exclude_current_positions_from_observation", true)
        .Bool("include_cfrc_ext_in_observation", true);
  }
  static Spec MakeSpec(const Params& p) {
    const auto model = LoadModel(kFile);
    int64_t size = model->nq + model->nv - 2 * p.Bool("exclude_current_positions_from_observation");
    if (p.Bool("include_cfrc_ext_in_observation")) size += (model->nbody - 1) * 6;
    Spec spec("Ant-v5");
    spec.Observation(Box({size}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000)
        .RewardThreshold(6000.0);
    return DeclareInfos(spec, kInfos);
  }

  explicit Ant(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), true, kStateSize),
        forward_weight_(p.Float("forward_reward_weight")),
        ctrl_weight_(static_cast<float>(p.Float("ctrl_cost_weight"))),
        contact_weight_(p.Float("contact_cost_weight")),
        healthy_reward_(p.Float("healthy_reward")),
        main_body_(static_cast<int>(p.Int("main_body"))),
        terminate_(p.Bool("terminate_when_unhealthy")),
        z_low_(p.Float("healthy_z_range_low")),
        z_high_(p.Float("healthy_z_range_high")),
        force_low_(p.Float("contact_force_range_low")),
        force_high_(p.Float("contact_force_range_high")),
        noise_(p.Float("reset_noise_scale")),
        skip_(p.Bool("exclude_current_positions_from_observation") ? 2 : 0),
        include_forces_(p.Bool("include_cfrc_ext_in_observation")),
        scratch_(static_cast<size_t>(sim_.m()->nbody) * 6) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = noise_ * rng.StandardNormal();
    });
    WriteObs(obs);
    WritePosition(info);
    MarkAbsent(info, kXVelocity, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    const double* body = sim_.d()->xpos + 3 * main_body_;
    const double x_before = body[0], y_before = body[1];
    sim_.Step(action);
    const double x_velocity = (body[0] - x_before) / sim_.dt();
    const double y_velocity = (body[1] - y_before) / sim_.dt();
    WriteObs(obs);
    const double forward = x_velocity * forward_weight_;
    const bool healthy = Healthy();
    const double survive = healthy ? healthy_reward_ : 0.0;
    const float ctrl_cost = ctrl_weight_ * SquaredSum(action, sim_.nu());
    const double contact_cost =
        contact_weight_ * ClippedSquaredSum(sim_.d()->cfrc_ext, sim_.m()->nbody * 6, force_low_,
                                            force_high_, scratch_.data());
    WritePosition(info);
    info[kXVelocity] = x_velocity;
    info[kYVelocity] = y_velocity;
    info[kRewardForward] = forward;
    info[kRewardCtrl] = -static_cast<double>(ctrl_cost);
    info[kRewardContact] = -contact_cost;
    info[kRewardSurvive] = survive;
    const double costs = static_cast<double>(ctrl_cost) + contact_cost;
    return {(forward + survive) - costs, !healthy && terminate_};
  }

  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  bool Healthy() const {
    for (int k = 0; k < sim_.nq(); ++k) {
      if (!std::isfinite(sim_.qpos()[k])) return false;
    }
    for (int k = 0; k < sim_.nv(); ++k) {
      if (!std::isfinite(sim_.qvel()[k])) return false;
    }
    const double z = sim_.qpos()[2];
    return z_low_ <= z && z <= z_high_;
  }

  void WritePosition(double* info) const {
    const double x = sim_.qpos()[0], y = sim_.qpos()[1];
    info[kXPosition] = x;
    info[kYPosition] = y;
    info[kDistanceFromOrigin] = std::sqrt(x * x + y * y);
  }

  void WriteObs(double* obs) const {
    obs = Copy(sim_.qpos() + skip_, sim_.nq() - skip_, obs);
    obs = Copy(sim_.qvel(), sim_.nv(), obs);
    if (include_forces_) {
      CopyClipped(sim_.d()->cfrc_ext + 6, (sim_.m()->nbody - 1) * 6, force_low_, force_high_, obs);
    }
  }

  Sim sim_;
  double forward_weight_;
  float ctrl_weight_;
  double contact_weight_, healthy_reward_;
  int main_body_;
  bool terminate_;
  double z_low_, z_high_, force_low_, force_high_, noise_;
  int skip_;
  bool include_forces_;
  std::vector<double> scratch_;  // the clipped forces of the contact cost
};

}  // namespace fastbatch::mujoco

#endif  // FASTBATCH_MUJOCO_ANT_H_

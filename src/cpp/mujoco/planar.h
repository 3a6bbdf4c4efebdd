// The planar locomotion envs of gymnasium 1.x, version 5: HalfCheetah-v5
// (`envs/mujoco/half_cheetah_v5.py`), Hopper-v5 (`hopper_v5.py`), Walker2d-v5
// (`walker2d_v5.py`) and Swimmer-v5 (`swimmer_v5.py`), on gymnasium's XML assets. Same
// frame_skip, float64 observation layout, rewards (float32 control costs, as numpy computes them
// for a float32 action), health and termination rules, reset-noise draws, info keys and
// constructor kwargs (a (low, high) range kwarg is two params, `<name>_low` and `<name>_high`).
#ifndef FASTBATCH_MUJOCO_PLANAR_H_
#define FASTBATCH_MUJOCO_PLANAR_H_

#include <cmath>

#include "sim.h"

namespace fastbatch::mujoco {

// HalfCheetah-v5: run forward; never terminates.
class HalfCheetah {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "half_cheetah.xml";
  static constexpr int64_t kStateSize = 18;    // nq 9 + nv 9
  static constexpr CameraConfig kCamera{4.0};  // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int { kXPosition, kXVelocity, kRewardForward, kRewardCtrl, kInfoRowSize };
  static constexpr InfoEntry kInfos[] = {
      {kXPosition, "x_position"},
      {kXVelocity, "x_velocity"},
      {kRewardForward, "reward_forward"},
      {kRewardCtrl, "reward_ctrl"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList()
        .Int("frame_skip", 5, 1, 1000)
        .Float("forward_reward_weight", 1.0)
        .Float("ctrl_cost_weight", 0.1)
        .Float("reset_noise_scale", 0.1, 0.0)
        .Bool("exclude_current_positions_from_observation", true);
  }
  static Spec MakeSpec(const Params& p) {
    const auto model = LoadModel(kFile);
    const int64_t size =
        model->nq + model->nv - p.Bool("exclude_current_positions_from_observation");
    Spec spec("HalfCheetah-v5");
    spec.Observation(Box({size}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000)
        .RewardThreshold(4800.0);
    return DeclareInfos(spec, kInfos);
  }

  explicit HalfCheetah(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        forward_weight_(p.Float("forward_reward_weight")),
        ctrl_weight_(static_cast<float>(p.Float("ctrl_cost_weight"))),
        noise_(p.Float("reset_noise_scale")),
        skip_(p.Bool("exclude_current_positions_from_observation") ? 1 : 0) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = noise_ * rng.StandardNormal();
    });
    WriteObs(obs);
    info[kXPosition] = sim_.qpos()[0];
    MarkAbsent(info, kXVelocity, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    const double x_before = sim_.qpos()[0];
    sim_.Step(action);
    const double x_after = sim_.qpos()[0];
    const double x_velocity = (x_after - x_before) / sim_.dt();
    WriteObs(obs);
    const double forward = forward_weight_ * x_velocity;
    const float ctrl_cost = ctrl_weight_ * SquaredSum(action, sim_.nu());
    info[kXPosition] = x_after;
    info[kXVelocity] = x_velocity;
    info[kRewardForward] = forward;
    info[kRewardCtrl] = -static_cast<double>(ctrl_cost);
    return {forward - static_cast<double>(ctrl_cost), false};
  }

  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  void WriteObs(double* obs) const {
    obs = Copy(sim_.qpos() + skip_, sim_.nq() - skip_, obs);
    Copy(sim_.qvel(), sim_.nv(), obs);
  }

  Sim sim_;
  double forward_weight_;
  float ctrl_weight_;
  double noise_;
  int skip_;
};

// Hopper-v5 and Walker2d-v5: hop or walk forward while healthy (z and torso angle in range;
// Hopper also every state entry but x and z); velocities clipped to [-10, 10] in the
// observation; uniform reset noise.
template <bool kHopper>
class Biped {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = kHopper ? "hopper.xml" : "walker2d_v5.xml";
  static constexpr int64_t kStateSize = kHopper ? 12 : 18;
  static constexpr CameraConfig kCamera{
      kHopper ? 3.0 : 4.0, {0.0, 0.0, 1.15}, -20.0};  // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int {
    kXPosition,
    kZDistanceFromOrigin,
    kXVelocity,
    kRewardForward,
    kRewardCtrl,
    kRewardSurvive,
    kInfoRowSize
  };
  static constexpr InfoEntry kInfos[] = {
      {kXPosition, "x_position"},   {kZDistanceFromOrigin, "z_distance_from_origin"},
      {kXVelocity, "x_velocity"},   {kRewardForward, "reward_forward"},
      {kRewardCtrl, "reward_ctrl"}, {kRewardSurvive, "reward_survive"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    ParamList list;
    list.Int("frame_skip", 4, 1, 1000)
        .Float("forward_reward_weight", 1.0)
        .Float("ctrl_cost_weight", 1e-3)
        .Float("healthy_reward", 1.0)
        .Bool("terminate_when_unhealthy", true);
    if (kHopper)
      list.Float("healthy_state_range_low", -100.0).Float("healthy_state_range_high", 100.0);
    list.Float("healthy_z_range_low", kHopper ? 0.7 : 0.8)
        .Float("healthy_z_range_high", kHopper ? kInf : 2.0)
        .Float("healthy_angle_range_low", kHopper ? -0.2 : -1.0)
        .Float("healthy_angle_range_high", kHopper ? 0.2 : 1.0)
        .Float("reset_noise_scale", 5e-3, 0.0)
        .Bool("exclude_current_positions_from_observation", true);
    return list;
  }
  static Spec MakeSpec(const Params& p) {
    const auto model = LoadModel(kFile);
    const int64_t size =
        model->nq + model->nv - p.Bool("exclude_current_positions_from_observation");
    Spec spec(kHopper ? "Hopper-v5" : "Walker2d-v5");
    spec.Observation(Box({size}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000);
    if (kHopper) spec.RewardThreshold(3800.0);
    return DeclareInfos(spec, kInfos);
  }

  explicit Biped(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        forward_weight_(p.Float("forward_reward_weight")),
        ctrl_weight_(static_cast<float>(p.Float("ctrl_cost_weight"))),
        healthy_reward_(p.Float("healthy_reward")),
        terminate_(p.Bool("terminate_when_unhealthy")),
        state_low_(kHopper ? p.Float("healthy_state_range_low") : 0.0),
        state_high_(kHopper ? p.Float("healthy_state_range_high") : 0.0),
        z_low_(p.Float("healthy_z_range_low")),
        z_high_(p.Float("healthy_z_range_high")),
        angle_low_(p.Float("healthy_angle_range_low")),
        angle_high_(p.Float("healthy_angle_range_high")),
        noise_(p.Float("reset_noise_scale")),
        skip_(p.Bool("exclude_current_positions_from_observation") ? 1 : 0) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = rng.Uniform(-noise_, noise_);
    });
    WriteObs(obs);
    info[kXPosition] = sim_.qpos()[0];
    info[kZDistanceFromOrigin] = sim_.qpos()[1] - sim_.init_qpos()[1];
    MarkAbsent(info, kXVelocity, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    const double x_before = sim_.qpos()[0];
    sim_.Step(action);
    const double x_after = sim_.qpos()[0];
    const double x_velocity = (x_after - x_before) / sim_.dt();
    WriteObs(obs);
    const double forward = forward_weight_ * x_velocity;
    const bool healthy = Healthy();
    const double survive = healthy ? healthy_reward_ : 0.0;
    const float ctrl_cost = ctrl_weight_ * SquaredSum(action, sim_.nu());
    info[kXPosition] = x_after;
    info[kZDistanceFromOrigin] = sim_.qpos()[1] - sim_.init_qpos()[1];
    info[kXVelocity] = x_velocity;
    info[kRewardForward] = forward;
    info[kRewardCtrl] = -static_cast<double>(ctrl_cost);
    info[kRewardSurvive] = survive;
    return {(forward + survive) - static_cast<double>(ctrl_cost), !healthy && terminate_};
  }

  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  bool Healthy() const {
    const double z = sim_.qpos()[1], angle = sim_.qpos()[2];
    if (kHopper) {  // state_vector()[2:]: qpos[2:] and all of qvel, strictly inside the range
      for (int k = 2; k < sim_.nq(); ++k) {
        if (!(state_low_ < sim_.qpos()[k] && sim_.qpos()[k] < state_high_)) return false;
      }
      for (int k = 0; k < sim_.nv(); ++k) {
        if (!(state_low_ < sim_.qvel()[k] && sim_.qvel()[k] < state_high_)) return false;
      }
    }
    return z_low_ < z && z < z_high_ && angle_low_ < angle && angle < angle_high_;
  }

  void WriteObs(double* obs) const {
    obs = Copy(sim_.qpos() + skip_, sim_.nq() - skip_, obs);
    CopyClipped(sim_.qvel(), sim_.nv(), -10.0, 10.0, obs);
  }

  Sim sim_;
  double forward_weight_;
  float ctrl_weight_;
  double healthy_reward_;
  bool terminate_;
  double state_low_, state_high_, z_low_, z_high_, angle_low_, angle_high_;
  double noise_;
  int skip_;
};

using Hopper = Biped<true>;
using Walker2d = Biped<false>;

// Swimmer-v5: swim forward in a viscous fluid; never terminates; uniform reset noise.
class Swimmer {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "swimmer.xml";
  static constexpr int64_t kStateSize = 10;  // nq 5 + nv 5
  static constexpr CameraConfig kCamera{};   // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int {
    kXPosition,
    kYPosition,
    kDistanceFromOrigin,
    kXVelocity,
    kYVelocity,
    kRewardForward,
    kRewardCtrl,
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
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList()
        .Int("frame_skip", 4, 1, 1000)
        .Float("forward_reward_weight", 1.0)
        .Float("ctrl_cost_weight", 1e-4)
        .Float("reset_noise_scale", 0.1, 0.0)
        .Bool("exclude_current_positions_from_observation", true);
  }
  static Spec MakeSpec(const Params& p) {
    const auto model = LoadModel(kFile);
    const int64_t size =
        model->nq + model->nv - 2 * p.Bool("exclude_current_positions_from_observation");
    Spec spec("Swimmer-v5");
    spec.Observation(Box({size}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000)
        .RewardThreshold(360.0);
    return DeclareInfos(spec, kInfos);
  }

  explicit Swimmer(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        forward_weight_(p.Float("forward_reward_weight")),
        ctrl_weight_(static_cast<float>(p.Float("ctrl_cost_weight"))),
        noise_(p.Float("reset_noise_scale")),
        skip_(p.Bool("exclude_current_positions_from_observation") ? 2 : 0) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = rng.Uniform(-noise_, noise_);
    });
    WriteObs(obs);
    const double x = sim_.qpos()[0], y = sim_.qpos()[1];
    info[kXPosition] = x;
    info[kYPosition] = y;
    info[kDistanceFromOrigin] = std::sqrt(x * x + y * y);
    MarkAbsent(info, kXVelocity, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    const double x_before = sim_.qpos()[0], y_before = sim_.qpos()[1];
    sim_.Step(action);
    const double x = sim_.qpos()[0], y = sim_.qpos()[1];
    const double x_velocity = (x - x_before) / sim_.dt();
    const double y_velocity = (y - y_before) / sim_.dt();
    WriteObs(obs);
    const double forward = forward_weight_ * x_velocity;
    const float ctrl_cost = ctrl_weight_ * SquaredSum(action, sim_.nu());
    info[kXPosition] = x;
    info[kYPosition] = y;
    info[kDistanceFromOrigin] = std::sqrt(x * x + y * y);
    info[kXVelocity] = x_velocity;
    info[kYVelocity] = y_velocity;
    info[kRewardForward] = forward;
    info[kRewardCtrl] = -static_cast<double>(ctrl_cost);
    return {forward - static_cast<double>(ctrl_cost), false};
  }

  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  void WriteObs(double* obs) const {
    obs = Copy(sim_.qpos() + skip_, sim_.nq() - skip_, obs);
    Copy(sim_.qvel(), sim_.nv(), obs);
  }

  Sim sim_;
  double forward_weight_;
  float ctrl_weight_;
  double noise_;
  int skip_;
};

}  // namespace fastbatch::mujoco

#endif  // FASTBATCH_MUJOCO_PLANAR_H_

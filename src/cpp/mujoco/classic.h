// The small MuJoCo envs of gymnasium 1.x, version 5: InvertedPendulum-v5
// (`envs/mujoco/inverted_pendulum_v5.py`), InvertedDoublePendulum-v5
// (`inverted_double_pendulum_v5.py`), Reacher-v5 (`reacher_v5.py`) and Pusher-v5
// (`pusher_v5.py`), on gymnasium's XML assets, with their observations, rewards, termination,
// reset draws (Reacher's and Pusher's targets by the same rejection sampling), info keys,
// kwargs and time limits.
#ifndef FASTBATCH_MUJOCO_CLASSIC_H_
#define FASTBATCH_MUJOCO_CLASSIC_H_

#include <cmath>

#include "sim.h"

namespace fastbatch::mujoco {

// Position of body `name` (gymnasium's get_body_com: data.body(name).xpos).
inline const double* BodyPos(const Sim& sim, int body) { return sim.d()->xpos + 3 * body; }
inline int BodyId(const Sim& sim, const char* name) {
  const int id = mj_name2id(sim.m(), mjOBJ_BODY, name);
  if (id < 0) throw std::runtime_error(std::string("the model has no body '") + name + "'");
  return id;
}
inline double Norm3(const double* a, const double* b) {
  const double x = a[0] - b[0], y = a[1] - b[1], z = a[2] - b[2];
  return std::sqrt(x * x + y * y + z * z);
}

class InvertedPendulum {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "inverted_pendulum.xml";
  static constexpr int64_t kStateSize = 4;
  static constexpr CameraConfig kCamera{2.04};  // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int { kRewardSurvive, kInfoRowSize };
  static constexpr InfoEntry kInfos[] = {{kRewardSurvive, "reward_survive"}};
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList().Int("frame_skip", 2, 1, 1000).Float("reset_noise_scale", 0.01, 0.0);
  }
  static Spec MakeSpec(const Params&) {
    Spec spec("InvertedPendulum-v5");
    spec.Observation(Box({4}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000)
        .RewardThreshold(950.0);
    return DeclareInfos(spec, kInfos);
  }
  explicit InvertedPendulum(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        noise_(p.Float("reset_noise_scale")) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = rng.Uniform(-noise_, noise_);
    });
    sim_.GetState(obs);
    info[kRewardSurvive] = kNaN;  // gymnasium's reset info is empty
  }

  StepResult Step(const float* action, double* obs, double* info) {
    sim_.Step(action);
    sim_.GetState(obs);
    bool finite = true;
    for (int k = 0; k < 4; ++k) finite = finite && std::isfinite(obs[k]);
    const bool terminated = !finite || std::fabs(obs[1]) > 0.2;
    info[kRewardSurvive] = terminated ? 0.0 : 1.0;
    return {info[kRewardSurvive], terminated};
  }
  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  Sim sim_;
  double noise_;
};

class InvertedDoublePendulum {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "inverted_double_pendulum.xml";
  static constexpr int64_t kStateSize = 6;
  // gymnasium defines a DEFAULT_CAMERA_CONFIG for this env but passes None: none applies.
  static constexpr CameraConfig kCamera{};

  enum InfoRow : int { kRewardSurvive, kDistancePenalty, kVelocityPenalty, kInfoRowSize };
  static constexpr InfoEntry kInfos[] = {
      {kRewardSurvive, "reward_survive"},
      {kDistancePenalty, "distance_penalty"},
      {kVelocityPenalty, "velocity_penalty"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList()
        .Int("frame_skip", 5, 1, 1000)
        .Float("healthy_reward", 10.0)
        .Float("reset_noise_scale", 0.1, 0.0);
  }
  static Spec MakeSpec(const Params&) {
    Spec spec("InvertedDoublePendulum-v5");
    spec.Observation(Box({9}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000)
        .RewardThreshold(9100.0);
    return DeclareInfos(spec, kInfos);
  }
  explicit InvertedDoublePendulum(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        healthy_reward_(p.Float("healthy_reward")),
        noise_(p.Float("reset_noise_scale")) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = rng.StandardNormal() * noise_;
    });
    WriteObs(obs);
    MarkAbsent(info, kRewardSurvive, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    sim_.Step(action);
    const double x = sim_.d()->site_xpos[0], y = sim_.d()->site_xpos[2];
    WriteObs(obs);
    const bool terminated = y <= 1;
    const double v1 = sim_.qvel()[1], v2 = sim_.qvel()[2];
    const double dist_penalty = 0.01 * (x * x) + (y - 2) * (y - 2);
    const double vel_penalty = 1e-3 * (v1 * v1) + 5e-3 * (v2 * v2);
    const double alive = healthy_reward_ * (terminated ? 0 : 1);
    info[kRewardSurvive] = alive;
    info[kDistancePenalty] = -dist_penalty;
    info[kVelocityPenalty] = -vel_penalty;
    return {alive - dist_penalty - vel_penalty, terminated};
  }
  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  void WriteObs(double* obs) const {
    const double* qpos = sim_.qpos();
    obs[0] = qpos[0];
    obs[1] = std::sin(qpos[1]);
    obs[2] = std::sin(qpos[2]);
    obs[3] = std::cos(qpos[1]);
    obs[4] = std::cos(qpos[2]);
    obs = CopyClipped(sim_.qvel(), 3, -10.0, 10.0, obs + 5);
    CopyClipped(sim_.d()->qfrc_constraint, 1, -10.0, 10.0, obs);
  }

  Sim sim_;
  double healthy_reward_, noise_;
};

class Reacher {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "reacher.xml";
  static constexpr int64_t kStateSize = 8;
  static constexpr CameraConfig kCamera{};  // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int { kRewardDist, kRewardCtrl, kInfoRowSize };
  static constexpr InfoEntry kInfos[] = {
      {kRewardDist, "reward_dist"},
      {kRewardCtrl, "reward_ctrl"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList()
        .Int("frame_skip", 2, 1, 1000)
        .Float("reward_dist_weight", 1.0)
        .Float("reward_control_weight", 1.0);
  }
  static Spec MakeSpec(const Params&) {
    Spec spec("Reacher-v5");
    spec.Observation(Box({10}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(50)
        .RewardThreshold(-3.75);
    return DeclareInfos(spec, kInfos);
  }
  explicit Reacher(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        dist_weight_(p.Float("reward_dist_weight")),
        ctrl_weight_(static_cast<float>(p.Float("reward_control_weight"))),
        fingertip_(BodyId(sim_, "fingertip")),
        target_(BodyId(sim_, "target")) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      const int nq = sim_.nq(), nv = sim_.nv();
      for (int k = 0; k < nq; ++k) qpos[k] = rng.Uniform(-0.1, 0.1) + sim_.init_qpos()[k];
      double gx, gy;
      do {
        gx = rng.Uniform(-0.2, 0.2);
        gy = rng.Uniform(-0.2, 0.2);
      } while (!(std::sqrt(gx * gx + gy * gy) < 0.2));
      qpos[nq - 2] = gx;
      qpos[nq - 1] = gy;
      for (int k = 0; k < nv; ++k) qvel[k] = rng.Uniform(-0.005, 0.005);
      qvel[nv - 2] = qvel[nv - 1] = 0.0;
    });
    WriteObs(obs);
    MarkAbsent(info, kRewardDist, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    sim_.Step(action);
    WriteObs(obs);
    const double dist = -Norm3(BodyPos(sim_, fingertip_), BodyPos(sim_, target_)) * dist_weight_;
    const float ctrl = -SquaredSum(action, sim_.nu()) * ctrl_weight_;
    info[kRewardDist] = dist;
    info[kRewardCtrl] = static_cast<double>(ctrl);
    return {dist + static_cast<double>(ctrl), false};
  }
  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  void WriteObs(double* obs) const {
    const double* qpos = sim_.qpos();
    obs[0] = std::cos(qpos[0]);
    obs[1] = std::cos(qpos[1]);
    obs[2] = std::sin(qpos[0]);
    obs[3] = std::sin(qpos[1]);
    obs = Copy(qpos + 2, sim_.nq() - 2, obs + 4);
    obs = Copy(sim_.qvel(), 2, obs);
    const double* tip = BodyPos(sim_, fingertip_);
    const double* target = BodyPos(sim_, target_);
    obs[0] = tip[0] - target[0];
    obs[1] = tip[1] - target[1];
  }

  Sim sim_;
  double dist_weight_;
  float ctrl_weight_;
  int fingertip_, target_;
};

class Pusher {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = "pusher_v5.xml";
  static constexpr int64_t kStateSize = 22;
  static constexpr CameraConfig kCamera{4.0};  // DEFAULT_CAMERA_CONFIG

  enum InfoRow : int { kRewardDist, kRewardCtrl, kRewardNear, kInfoRowSize };
  static constexpr InfoEntry kInfos[] = {
      {kRewardDist, "reward_dist"},
      {kRewardCtrl, "reward_ctrl"},
      {kRewardNear, "reward_near"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));

  static ParamList DeclareParams() {
    return ParamList()
        .Int("frame_skip", 5, 1, 1000)
        .Float("reward_near_weight", 0.5)
        .Float("reward_dist_weight", 1.0)
        .Float("reward_control_weight", 0.1);
  }
  static Spec MakeSpec(const Params&) {
    Spec spec("Pusher-v5");
    spec.Observation(Box({23}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(100)
        .RewardThreshold(0.0);
    return DeclareInfos(spec, kInfos);
  }
  explicit Pusher(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), false, kStateSize),
        near_weight_(p.Float("reward_near_weight")),
        dist_weight_(p.Float("reward_dist_weight")),
        ctrl_weight_(static_cast<float>(p.Float("reward_control_weight"))),
        tips_(BodyId(sim_, "tips_arm")),
        object_(BodyId(sim_, "object")),
        goal_(BodyId(sim_, "goal")) {}

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      const int nq = sim_.nq(), nv = sim_.nv();
      for (int k = 0; k < nq; ++k) qpos[k] = sim_.init_qpos()[k];
      double cx, cy;
      do {
        cx = rng.Uniform(-0.3, 0.0);
        cy = rng.Uniform(-0.2, 0.2);
      } while (!(std::sqrt(cx * cx + cy * cy) > 0.17));
      qpos[nq - 4] = cx;
      qpos[nq - 3] = cy;
      qpos[nq - 2] = qpos[nq - 1] = 0.0;
      for (int k = 0; k < nv; ++k) qvel[k] = rng.Uniform(-0.005, 0.005);
      for (int k = nv - 4; k < nv; ++k) qvel[k] = 0.0;
    });
    WriteObs(obs);
    MarkAbsent(info, kRewardDist, kInfoRowSize);
  }

  StepResult Step(const float* action, double* obs, double* info) {
    sim_.Step(action);
    WriteObs(obs);
    const double* object = BodyPos(sim_, object_);
    const double near = -Norm3(object, BodyPos(sim_, tips_)) * near_weight_;
    const double dist = -Norm3(object, BodyPos(sim_, goal_)) * dist_weight_;
    const float ctrl = -SquaredSum(action, sim_.nu()) * ctrl_weight_;
    info[kRewardDist] = dist;
    info[kRewardCtrl] = static_cast<double>(ctrl);
    info[kRewardNear] = near;
    return {dist + static_cast<double>(ctrl) + near, false};
  }
  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  void WriteObs(double* obs) const {
    obs = Copy(sim_.qpos(), 7, obs);
    obs = Copy(sim_.qvel(), 7, obs);
    obs = Copy(BodyPos(sim_, tips_), 3, obs);
    obs = Copy(BodyPos(sim_, object_), 3, obs);
    Copy(BodyPos(sim_, goal_), 3, obs);
  }

  Sim sim_;
  double near_weight_, dist_weight_;
  float ctrl_weight_;
  int tips_, object_, goal_;
};

}  // namespace fastbatch::mujoco

#endif  // FASTBATCH_MUJOCO_CLASSIC_H_

// Humanoid-v5 and HumanoidStandup-v5, matching gymnasium 1.x `envs/mujoco/humanoid_v5.py` and
// `humanoidstandup_v5.py` on `humanoid.xml` / `humanoidstandup.xml`: the observation (qpos
// without x, y; qvel; and, each switchable, the bodies' com inertia, com velocity, actuator forces
// and external contact forces, the world body left out), the rewards (Humanoid: the velocity of
// the mass centre, health by torso z, control cost over data.ctrl, clipped contact cost;
// HumanoidStandup: the torso's height per timestep, control and clipped impact costs, +1),
// uniform reset noise, info keys (tendon length and velocity as 2-vectors) and kwargs (range
// kwargs as `<name>_low`/`<name>_high` params).
#ifndef FASTBATCH_MUJOCO_HUMANOID_H_
#define FASTBATCH_MUJOCO_HUMANOID_H_

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "sim.h"

namespace fastbatch::mujoco {

// The fixed tendons of humanoid.xml and humanoidstandup.xml: the tendon infos are 2-vectors.
inline constexpr int kHumanoidTendons = 2;

// Humanoid-v5's info row: gymnasium puts the tendon infos right after y.
struct HumanoidInfos {
  enum InfoRow : int {
    kXPosition,
    kYPosition,
    kTendonLength,
    kTendonVelocity = kTendonLength + kHumanoidTendons,
    kDistanceFromOrigin = kTendonVelocity + kHumanoidTendons,
    kXVelocity,
    kYVelocity,
    kRewardSurvive,
    kRewardForward,
    kRewardCtrl,
    kRewardContact,
    kInfoRowSize
  };
  static constexpr InfoEntry kInfos[] = {
      {kXPosition, "x_position"},
      {kYPosition, "y_position"},
      {kTendonLength, "tendon_length", kHumanoidTendons},
      {kTendonVelocity, "tendon_velocity", kHumanoidTendons},
      {kDistanceFromOrigin, "distance_from_origin"},
      {kXVelocity, "x_velocity"},
      {kYVelocity, "y_velocity"},
      {kRewardSurvive, "reward_survive"},
      {kRewardForward, "reward_forward"},
      {kRewardCtrl, "reward_ctrl"},
      {kRewardContact, "reward_contact"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));
};

// HumanoidStandup-v5's info row.
struct HumanoidStandupInfos {
  enum InfoRow : int {
    kXPosition,
    kYPosition,
    kZDistanceFromOrigin,
    kTendonLength,
    kTendonVelocity = kTendonLength + kHumanoidTendons,
    kRewardLinup = kTendonVelocity + kHumanoidTendons,
    kRewardQuadctrl,
    kRewardImpact,
    kInfoRowSize
  };
  static constexpr InfoEntry kInfos[] = {
      {kXPosition, "x_position"},
      {kYPosition, "y_position"},
      {kZDistanceFromOrigin, "z_distance_from_origin"},
      {kTendonLength, "tendon_length", kHumanoidTendons},
      {kTendonVelocity, "tendon_velocity", kHumanoidTendons},
      {kRewardLinup, "reward_linup"},
      {kRewardQuadctrl, "reward_quadctrl"},
      {kRewardImpact, "reward_impact"},
  };
  static_assert(IsInfoLayout(kInfos, kInfoRowSize));
};

template <bool kStandup>
class HumanoidBase {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = kStandup ? "humanoidstandup.xml" : "humanoid.xml";
  static constexpr int64_t kStateSize = 47;  // nq 24 + nv 23
  static constexpr CameraConfig kCamera{
      4.0, {0.0, 0.0, kStandup ? 0.8925 : 2.0}, -20.0};  // DEFAULT_CAMERA_CONFIG
  // The info row's layout: Reset and Step write at Row's offsets.
  using Row = std::conditional_t<kStandup, HumanoidStandupInfos, HumanoidInfos>;

  static ParamList DeclareParams() {
    ParamList list;
    list.Int("frame_skip", 5, 1, 1000);
    if (kStandup) {
      list.Float("uph_cost_weight", 1.0)
          .Float("ctrl_cost_weight", 0.1)
          .Float("impact_cost_weight", 0.5e-6)
          .Float("impact_cost_range_low", -kInf)
          .Float("impact_cost_range_high", 10.0);
    } else {
      list.Float("forward_reward_weight", 1.25)
          .Float("ctrl_cost_weight", 0.1)
          .Float("contact_cost_weight", 5e-7)
          .Float("contact_cost_range_low", -kInf)
          .Float("contact_cost_range_high", 10.0)
          .Float("healthy_reward", 5.0)
          .Bool("terminate_when_unhealthy", true)
          .Float("healthy_z_range_low", 1.0)
          .Float("healthy_z_range_high", 2.0);
    }
    return list.Float("reset_noise_scale", 1e-2, 0.0)
        .Bool("exclude_current_positions_from_observation", true)
        .Bool("include_cinert_in_observation", true)
        .Bool("include_cvel_in_observation", true)
        .Bool("include_qfrc_actuator_in_observation", true)
        .Bool("include_cfrc_ext_in_observation", true);
  }
  static Spec MakeSpec(const Params& p) {
    const auto m = LoadModel(kFile);
    const int64_t bodies = m->nbody - 1;
    int64_t size = m->nq + m->nv - 2 * p.Bool("exclude_current_positions_from_observation");
    size += p.Bool("include_cinert_in_observation") * bodies * 10;
    size += p.Bool("include_cvel_in_observation") * bodies * 6;
    size += p.Bool("include_qfrc_actuator_in_observation") * (m->nv - 6);
    size += p.Bool("include_cfrc_ext_in_observation") * bodies * 6;
    Spec spec(kStandup ? "HumanoidStandup-v5" : "Humanoid-v5");
    spec.Observation(Box({size}, -kInf, kInf))
        .Action(Sim::ActionSpace(kFile))
        .MaxEpisodeSteps(1000);
    CheckTendons(*m);
    return DeclareInfos(spec, Row::kInfos);
  }

  explicit HumanoidBase(const Params& p)
      : sim_(kFile, static_cast<int>(p.Int("frame_skip")), true, kStateSize),
        noise_(p.Float("reset_noise_scale")),
        skip_(p.Bool("exclude_current_positions_from_observation") ? 2 : 0),
        cinert_(p.Bool("include_cinert_in_observation")),
        cvel_(p.Bool("include_cvel_in_observation")),
        qfrc_(p.Bool("include_qfrc_actuator_in_observation")),
        cfrc_(p.Bool("include_cfrc_ext_in_observation")),
        ctrl_weight_(p.Float("ctrl_cost_weight")) {
    if (kStandup) {
      weight_ = p.Float("uph_cost_weight");
      contact_weight_ = p.Float("impact_cost_weight");
      contact_low_ = p.Float("impact_cost_range_low");
      contact_high_ = p.Float("impact_cost_range_high");
    } else {
      weight_ = p.Float("forward_reward_weight");
      contact_weight_ = p.Float("contact_cost_weight");
      contact_low_ = p.Float("contact_cost_range_low");
      contact_high_ = p.Float("contact_cost_range_high");
      healthy_reward_ = p.Float("healthy_reward");
      terminate_ = p.Bool("terminate_when_unhealthy");
      z_low_ = p.Float("healthy_z_range_low");
      z_high_ = p.Float("healthy_z_range_high");
    }
    CheckTendons(*sim_.m());
    for (int b = 0; b < sim_.m()->nbody; ++b) total_mass_ += sim_.m()->body_mass[b];
  }

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = rng.Uniform(-noise_, noise_);
    });
    WriteObs(obs);
    WritePositions(info);
    if constexpr (kStandup) {
      MarkAbsent(info, Row::kRewardLinup, Row::kInfoRowSize);
    } else {
      info[Row::kDistanceFromOrigin] = Distance();
      MarkAbsent(info, Row::kXVelocity, Row::kInfoRowSize);
    }
  }

  StepResult Step(const float* action, double* obs, double* info) {
    double x_before = 0.0, y_before = 0.0;
    if (!kStandup) MassCenter(&x_before, &y_before);
    sim_.Step(action);
    WriteObs(obs);
    const mjData* d = sim_.d();
    const double ctrl_cost = ctrl_weight_ * SquaredSum(d->ctrl, sim_.nu());
    const double contact_cost =
        std::clamp(contact_weight_ * SquaredSum(d->cfrc_ext, sim_.m()->nbody * 6), contact_low_,
                   contact_high_);
    WritePositions(info);
    if constexpr (kStandup) {
      const double uph_cost = (sim_.qpos()[2] - 0) / sim_.m()->opt.timestep;
      info[Row::kRewardLinup] = uph_cost;
      info[Row::kRewardQuadctrl] = -ctrl_cost;
      info[Row::kRewardImpact] = -contact_cost;
      return {uph_cost - ctrl_cost - contact_cost + 1, false};  // v5 ignores uph_cost_weight
    } else {
      double x_after, y_after;
      MassCenter(&x_after, &y_after);
      const double x_velocity = (x_after - x_before) / sim_.dt();
      const double y_velocity = (y_after - y_before) / sim_.dt();
      const double z = sim_.qpos()[2];
      const bool healthy = z_low_ < z && z < z_high_;
      const double survive = healthy ? healthy_reward_ : 0.0;
      const double forward = weight_ * x_velocity;
      info[Row::kDistanceFromOrigin] = Distance();
      info[Row::kXVelocity] = x_velocity;
      info[Row::kYVelocity] = y_velocity;
      info[Row::kRewardSurvive] = survive;
      info[Row::kRewardForward] = forward;
      info[Row::kRewardCtrl] = -ctrl_cost;
      info[Row::kRewardContact] = -contact_cost;
      return {(forward + survive) - (ctrl_cost + contact_cost), !healthy && terminate_};
    }
  }

  void GetState(double* out) const { sim_.GetState(out); }
  Sim& sim() { return sim_; }  // for drawing (frames.h)

 private:
  // The tendon infos are declared kHumanoidTendons long; `model` must have that many tendons.
  static void CheckTendons(const mjModel& model) {
    if (model.ntendon != kHumanoidTendons) {
      throw std::runtime_error(std::string(kFile) + " has " + std::to_string(model.ntendon) +
                               " tendons, not the " + std::to_string(kHumanoidTendons) +
                               " this env expects");
    }
  }

  double Distance() const {
    const double x = sim_.qpos()[0], y = sim_.qpos()[1];
    return std::sqrt(x * x + y * y);
  }

  // The infos both envs write alike: x, y (and HumanoidStandup's z above the initial z), and the
  // tendon lengths and velocities.
  void WritePositions(double* info) const {
    const mjData* d = sim_.d();
    info[Row::kXPosition] = sim_.qpos()[0];
    info[Row::kYPosition] = sim_.qpos()[1];
    if constexpr (kStandup) info[Row::kZDistanceFromOrigin] = sim_.qpos()[2] - sim_.init_qpos()[2];
    Copy(d->ten_length, kHumanoidTendons, info + Row::kTendonLength);
    Copy(d->ten_velocity, kHumanoidTendons, info + Row::kTendonVelocity);
  }

  // gymnasium's mass_center: sum over bodies of mass * xipos, divided by the total mass (x, y).
  void MassCenter(double* x, double* y) const {
    double sx = 0.0, sy = 0.0;
    for (int b = 0; b < sim_.m()->nbody; ++b) {
      sx += sim_.m()->body_mass[b] * sim_.d()->xipos[3 * b];
      sy += sim_.m()->body_mass[b] * sim_.d()->xipos[3 * b + 1];
    }
    *x = sx / total_mass_;
    *y = sy / total_mass_;
  }

  void WriteObs(double* obs) const {
    const mjModel* m = sim_.m();
    const mjData* d = sim_.d();
    const int64_t bodies = m->nbody - 1;
    obs = Copy(sim_.qpos() + skip_, sim_.nq() - skip_, obs);
    obs = Copy(sim_.qvel(), sim_.nv(), obs);
    if (cinert_) obs = Copy(d->cinert + 10, bodies * 10, obs);
    if (cvel_) obs = Copy(d->cvel + 6, bodies * 6, obs);
    if (qfrc_) obs = Copy(d->qfrc_actuator + 6, m->nv - 6, obs);
    if (cfrc_) Copy(d->cfrc_ext + 6, bodies * 6, obs);
  }

  Sim sim_;
  double noise_;
  int skip_;
  bool cinert_, cvel_, qfrc_, cfrc_;
  double ctrl_weight_;
  double weight_ =
      0.0;  // forward_reward_weight (Humanoid); uph_cost_weight (read, unused as in v5)
  double contact_weight_ = 0.0, contact_low_ = 0.0, contact_high_ = 0.0;
  double healthy_reward_ = 0.0;
  bool terminate_ = false;
  double z_low_ = 0.0, z_high_ = 0.0;
  double total_mass_ = 0.0;
};

using Humanoid = HumanoidBase<false>;
using HumanoidStandup = HumanoidBase<true>;

}  // namespace fastbatch::mujoco

#endif  // FASTBATCH_MUJOCO_HUMANOID_H_

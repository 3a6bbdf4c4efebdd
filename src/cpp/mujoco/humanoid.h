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

#include "sim.h"

namespace fastbatch::mujoco {

template <bool kStandup>
class HumanoidBase {
 public:
  using ObsType = double;
  using ActionType = float;
  static constexpr const char* kFile = kStandup ? "humanoidstandup.xml" : "humanoid.xml";
  static constexpr int64_t kStateSize = 47;  // nq 24 + nv 23

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
    const int32_t tendons = m->ntendon;
    if (kStandup) {
      return spec.Info("x_position")
          .Info("y_position")
          .Info("z_distance_from_origin")
          .Info("tendon_length", tendons)
          .Info("tendon_velocity", tendons)
          .Info("reward_linup")
          .Info("reward_quadctrl")
          .Info("reward_impact");
    }
    return spec.Info("x_position")
        .Info("y_position")
        .Info("tendon_length", tendons)
        .Info("tendon_velocity", tendons)
        .Info("distance_from_origin")
        .Info("x_velocity")
        .Info("y_velocity")
        .Info("reward_survive")
        .Info("reward_forward")
        .Info("reward_ctrl")
        .Info("reward_contact");
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
    for (int b = 0; b < sim_.m()->nbody; ++b) total_mass_ += sim_.m()->body_mass[b];
  }

  void Reset(Rng& rng, double* obs, double* info) {
    sim_.Reset([&](double* qpos, double* qvel) {
      for (int k = 0; k < sim_.nq(); ++k)
        qpos[k] = sim_.init_qpos()[k] + rng.Uniform(-noise_, noise_);
      for (int k = 0; k < sim_.nv(); ++k) qvel[k] = rng.Uniform(-noise_, noise_);
    });
    WriteObs(obs);
    double* rest = WritePositions(info);
    const double* end = info + InfoRow();
    if (!kStandup) *rest++ = Distance();
    while (rest != end) *rest++ = kNaN;
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
    double* rest = WritePositions(info);
    if (kStandup) {
      const double uph_cost = (sim_.qpos()[2] - 0) / sim_.m()->opt.timestep;
      rest[0] = uph_cost;
      rest[1] = -ctrl_cost;
      rest[2] = -contact_cost;
      return {uph_cost - ctrl_cost - contact_cost + 1, false};  // v5 ignores uph_cost_weight
    }
    double x_after, y_after;
    MassCenter(&x_after, &y_after);
    const double x_velocity = (x_after - x_before) / sim_.dt();
    const double y_velocity = (y_after - y_before) / sim_.dt();
    const double z = sim_.qpos()[2];
    const bool healthy = z_low_ < z && z < z_high_;
    const double survive = healthy ? healthy_reward_ : 0.0;
    const double forward = weight_ * x_velocity;
    rest[0] = Distance();
    rest[1] = x_velocity;
    rest[2] = y_velocity;
    rest[3] = survive;
    rest[4] = forward;
    rest[5] = -ctrl_cost;
    rest[6] = -contact_cost;
    return {(forward + survive) - (ctrl_cost + contact_cost), !healthy && terminate_};
  }

  void GetState(double* out) const { sim_.GetState(out); }

 private:
  int64_t InfoRow() const { return (kStandup ? 6 : 9) + 2 * sim_.m()->ntendon; }

  double Distance() const {
    const double x = sim_.qpos()[0], y = sim_.qpos()[1];
    return std::sqrt(x * x + y * y);
  }

  // x, y (and HumanoidStandup's z above the initial z), then the tendon lengths and velocities
  // (Humanoid's info order puts them right after y); returns the next free entry.
  double* WritePositions(double* info) const {
    const mjData* d = sim_.d();
    *info++ = sim_.qpos()[0];
    *info++ = sim_.qpos()[1];
    if (kStandup) *info++ = sim_.qpos()[2] - sim_.init_qpos()[2];
    info = Copy(d->ten_length, sim_.m()->ntendon, info);
    return Copy(d->ten_velocity, sim_.m()->ntendon, info);
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

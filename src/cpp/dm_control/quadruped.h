// dm_control's quadruped domain (suite/quadruped.py): walk and run on flat ground. dm_control
// generates their model (`make_model(floor_size)`: the floor sized to the task, without the
// walls, ball, terrain and rangefinders); `fastbatch.dm_control` does the same, as
// "quadruped_walk.xml" and "quadruped_run.xml".
//
// force_torque is np.arcsinh of the force and torque sensors: libm's asinh here, which numpy's
// AVX-512 build (its own SIMD arcsinh) differs from in the last bit now and then (as `touch`'s
// log1p, docs/envs.md); nothing else reads it.
#ifndef FASTBATCH_DM_CONTROL_QUADRUPED_H_
#define FASTBATCH_DM_CONTROL_QUADRUPED_H_

#include <cmath>
#include <stdexcept>
#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

// Sensor ids of the given types, in id order (quadruped's `_get_sensor_names`).
inline std::vector<int> SensorsOfType(const mjModel* m, int type_a, int type_b) {
  std::vector<int> ids;
  for (int s = 0; s < m->nsensor; ++s) {
    if (m->sensor_type[s] == type_a || m->sensor_type[s] == type_b) ids.push_back(s);
  }
  return ids;
}

inline int64_t SensorValues(const mjModel* m, const std::vector<int>& ids) {
  int64_t size = 0;
  for (int s : ids) size += m->sensor_dim[s];
  return size;
}

template <bool kRun>
struct QuadrupedMove {
  static constexpr const char* kId =
      kRun ? "dm_control/quadruped-run-v0" : "dm_control/quadruped-walk-v0";
  static constexpr const char* kFile = kRun ? "quadruped_run.xml" : "quadruped_walk.xml";
  static constexpr double kTimeLimit = 20;
  static constexpr double kControlTimestep = .02;
  static constexpr bool kPrivateModel = false;
  static constexpr double kSpeed = kRun ? 5 : 0.5;

  static std::vector<int> Hinges(const mjModel* m) {
    std::vector<int> hinges;
    for (int j = 0; j < m->njnt; ++j) {
      if (m->jnt_type[j] == mjJNT_HINGE) hinges.push_back(j);
    }
    return hinges;
  }

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    const int64_t hinges = static_cast<int64_t>(Hinges(m).size());
    return {{"egocentric_state", 2 * hinges + m->na},
            {"torso_velocity", 3},
            {"torso_upright", 1},
            {"imu", SensorValues(m, SensorsOfType(m, mjSENS_GYRO, mjSENS_ACCELEROMETER))},
            {"force_torque", SensorValues(m, SensorsOfType(m, mjSENS_FORCE, mjSENS_TORQUE))}};
  }

  explicit QuadrupedMove(const Physics& physics)
      : torso_(physics.Id(mjOBJ_BODY, "torso")),
        root_(physics.QposAdr("root")),
        velocimeter_(physics.SensorAdr("velocimeter")),
        hinges_(Hinges(physics.m())),
        imu_(SensorsOfType(physics.m(), mjSENS_GYRO, mjSENS_ACCELEROMETER)),
        force_torque_(SensorsOfType(physics.m(), mjSENS_FORCE, mjSENS_TORQUE)) {}

  // A random orientation, then the lowest height (in 1 cm steps up from the floor) at which the
  // body touches nothing, each try from a fresh reset.
  void Initialize(Physics& physics, RandomState& random) const {
    double orientation[4];
    for (double& q : orientation) q = random.StandardNormal();
    const double norm = Norm(orientation, 4);
    for (double& q : orientation) q /= norm;
    double z = 0.0;
    int attempts = 0;
    int contacts = 1;
    while (contacts > 0) {
      physics.Reset();
      double* root = physics.d()->qpos + root_;
      root[0] = 0.0;
      root[1] = 0.0;
      root[2] = z;
      for (int k = 0; k < 4; ++k) root[3 + k] = orientation[k];
      physics.AfterReset(false);  // dm_control catches the PhysicsError of this loop
      contacts = physics.d()->ncon;
      z += 0.01;
      if (++attempts > 10000)
        throw std::runtime_error("Failed to find a non-contacting configuration.");
    }
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    const mjModel* m = physics.m();
    for (int j : hinges_) *obs++ = d->qpos[m->jnt_qposadr[j]];
    for (int j : hinges_) *obs++ = d->qvel[m->jnt_dofadr[j]];
    for (int k = 0; k < m->na; ++k) *obs++ = d->act[k];
    for (int k = 0; k < 3; ++k) *obs++ = d->sensordata[velocimeter_ + k];
    *obs++ = d->xmat[9 * torso_ + kZZ];
    for (int s : imu_) {
      for (int k = 0; k < m->sensor_dim[s]; ++k) *obs++ = d->sensordata[m->sensor_adr[s] + k];
    }
    for (int s : force_torque_) {
      for (int k = 0; k < m->sensor_dim[s]; ++k)
        *obs++ = std::asinh(d->sensordata[m->sensor_adr[s] + k]);
    }
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const double move =
        Tolerance{kSpeed, kInf, kSpeed, Sigmoid::kLinear, 0.5}(d->sensordata[velocimeter_]);
    const double deviation = std::cos(0.0);  // np.cos(np.deg2rad(0))
    const double upright =
        Tolerance{deviation, kInf, 1 + deviation, Sigmoid::kLinear, 0}(d->xmat[9 * torso_ + kZZ]);
    return upright * move;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int torso_, root_, velocimeter_;
  std::vector<int> hinges_, imu_, force_torque_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_QUADRUPED_H_

// dm_control's swimmer domain (suite/swimmer.py): swimmer6 and swimmer15, whose models
// dm_control generates (`_make_model(n)`: a chain of n bodies with a motor, a velocimeter and a
// gyro each); `fastbatch.dm_control` generates the same XML and hands it over as
// "swimmer<n>.xml". The target is placed per episode by editing the model (a private copy).
#ifndef FASTBATCH_DM_CONTROL_SWIMMER_H_
#define FASTBATCH_DM_CONTROL_SWIMMER_H_

#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <int kBodies>
struct Swimmer {
  static constexpr const char* kId =
      kBodies == 6 ? "dm_control/swimmer-swimmer6-v0" : "dm_control/swimmer-swimmer15-v0";
  static constexpr const char* kFile = kBodies == 6 ? "swimmer6.xml" : "swimmer15.xml";
  static constexpr double kTimeLimit = 30;
  static constexpr double kControlTimestep = .03;
  static constexpr bool kPrivateModel = true;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {
        {"joints", m->nq - 3}, {"to_target", 2}, {"body_velocities", (m->nsensordata - 12) / 2}};
  }

  explicit Swimmer(const Physics& physics)
      : target_(physics.Id(mjOBJ_GEOM, "target")),
        nose_(physics.Id(mjOBJ_GEOM, "nose")),
        head_(physics.Id(mjOBJ_BODY, "head")),
        light_(physics.Id(mjOBJ_LIGHT, "target_light")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    RandomizeLimitedAndRotationalJoints(physics, random);
    const bool close_target = random.RandomSample() < .2;
    const double box = close_target ? .3 : 2;
    const double x = random.Uniform(-box, box);
    const double y = random.Uniform(-box, box);
    mjModel* m = physics.mutable_m();
    m->geom_pos[3 * target_] = x;
    m->geom_pos[3 * target_ + 1] = y;
    m->light_pos[3 * light_] = x;
    m->light_pos[3 * light_ + 1] = y;
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    const mjModel* m = physics.m();
    for (int k = 3; k < m->nq; ++k) *obs++ = d->qpos[k];
    double to_target[3];
    NoseToTarget(d, to_target);
    *obs++ = to_target[0];
    *obs++ = to_target[1];
    for (int row = 12; row + 6 <= m->nsensordata; row += 6) {
      *obs++ = d->sensordata[row];
      *obs++ = d->sensordata[row + 1];
      *obs++ = d->sensordata[row + 5];
    }
  }

  double Reward(const Physics& physics) const {
    double to_target[3];
    NoseToTarget(physics.d(), to_target);
    const double size = physics.m()->geom_size[3 * target_];
    return Tolerance{0, size, 5 * size, Sigmoid::kLongTail}(Norm(to_target, 2));
  }

  double Discount(const Physics&) const { return kNoDiscount; }

 private:
  void NoseToTarget(const mjData* d, double* out) const {
    double global[3];
    for (int k = 0; k < 3; ++k)
      global[k] = d->geom_xpos[3 * target_ + k] - d->geom_xpos[3 * nose_ + k];
    VecMat3(global, d->xmat + 9 * head_, out);
  }

  int target_, nose_, head_, light_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_SWIMMER_H_

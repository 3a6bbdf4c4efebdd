// dm_control's cheetah domain (suite/cheetah.py): run.
#ifndef FASTBATCH_DM_CONTROL_CHEETAH_H_
#define FASTBATCH_DM_CONTROL_CHEETAH_H_

#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

struct CheetahRun {
  static constexpr const char* kId = "dm_control/cheetah-run-v0";
  static constexpr const char* kFile = "cheetah.xml";
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"position", m->nq - 1}, {"velocity", m->nv}};
  }

  explicit CheetahRun(const Physics& physics) : speed_(physics.SensorAdr("torso_subtreelinvel")) {
    if (physics.m()->nq != physics.m()->njnt) throw std::runtime_error("cheetah: nq != njnt");
  }

  // Limited joints uniform in their ranges, then 200 physics steps to settle, the clock at 0.
  void Initialize(Physics& physics, RandomState& random) const {
    const mjModel* m = physics.m();
    for (int j = 0; j < m->njnt; ++j) {
      if (m->jnt_limited[j] == 1) {
        physics.d()->qpos[j] = random.Uniform(m->jnt_range[2 * j], m->jnt_range[2 * j + 1]);
      }
    }
    physics.Step(200);
    physics.d()->time = 0;
  }

  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    for (int k = 1; k < physics.m()->nq; ++k) *obs++ = d->qpos[k];
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    return Tolerance{10, kInf, 10, Sigmoid::kLinear, 0}(physics.d()->sensordata[speed_]);
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int speed_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_CHEETAH_H_

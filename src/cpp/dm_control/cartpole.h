// dm_control's cartpole domain (suite/cartpole.py): balance, balance_sparse, swingup and
// swingup_sparse with one pole on the cart; two_poles and three_poles (swing up a chain of
// poles), whose models dm_control generates (`_make_model(n)`) and `fastbatch.dm_control`
// generates alike, as "cartpole_<n>.xml".
#ifndef FASTBATCH_DM_CONTROL_CARTPOLE_H_
#define FASTBATCH_DM_CONTROL_CARTPOLE_H_

#include <vector>

#include "suite_env.h"

namespace fastbatch::dm_control {

template <bool kSwingUp, bool kSparse, int kPoles = 1>
struct Cartpole {
  static constexpr const char* kId =
      kPoles == 2   ? "dm_control/cartpole-two_poles-v0"
      : kPoles == 3 ? "dm_control/cartpole-three_poles-v0"
      : kSwingUp
          ? (kSparse ? "dm_control/cartpole-swingup_sparse-v0" : "dm_control/cartpole-swingup-v0")
          : (kSparse ? "dm_control/cartpole-balance_sparse-v0" : "dm_control/cartpole-balance-v0");
  static constexpr const char* kFile =
      kPoles == 1 ? "cartpole.xml" : (kPoles == 2 ? "cartpole_2.xml" : "cartpole_3.xml");
  static constexpr double kTimeLimit = 10;
  static constexpr double kControlTimestep = 0;
  static constexpr bool kPrivateModel = false;

  static std::vector<ObsKey> ObsKeys(const mjModel* m) {
    return {{"position", 1 + 2 * (m->nbody - 2)}, {"velocity", m->nv}};
  }

  explicit Cartpole(const Physics& physics)
      : slider_(physics.QposAdr("slider")), hinge_(physics.QposAdr("hinge_1")) {}

  void Initialize(Physics& physics, RandomState& random) const {
    const int nv = physics.m()->nv;
    double* qpos = physics.d()->qpos;
    if (kSwingUp) {
      qpos[slider_] = .01 * random.StandardNormal();
      qpos[hinge_] = kPi + .01 * random.StandardNormal();
      for (int k = 2; k < nv; ++k) qpos[k] = .1 * random.StandardNormal();
    } else {
      qpos[slider_] = random.Uniform(-.1, .1);
      for (int k = 1; k < nv; ++k) qpos[k] = random.Uniform(-.034, .034);
    }
    for (int k = 0; k < nv; ++k) physics.d()->qvel[k] = 0.01 * random.StandardNormal();
  }

  // position: the cart's x, then each pole's xmat zz and xz; velocity: qvel.
  void Observe(const Physics& physics, double* obs) const {
    const mjData* d = physics.d();
    *obs++ = d->qpos[slider_];
    for (int b = 2; b < physics.m()->nbody; ++b) {
      *obs++ = d->xmat[9 * b + kZZ];
      *obs++ = d->xmat[9 * b + kXZ];
    }
    for (int k = 0; k < physics.m()->nv; ++k) *obs++ = d->qvel[k];
  }

  double Reward(const Physics& physics) const {
    const mjData* d = physics.d();
    const int poles = physics.m()->nbody - 2;
    const double cart = d->qpos[slider_];
    if (kSparse) {
      const double cart_in_bounds = Tolerance{-.25, .25}(cart);
      double angle_in_bounds = 1.0;
      for (int b = 2; b < 2 + poles; ++b) {
        angle_in_bounds *= Tolerance{.995, 1}(d->xmat[9 * b + kZZ], Input::kElement);
      }
      return cart_in_bounds * angle_in_bounds;
    }
    double upright_values[8];
    for (int b = 2; b < 2 + poles; ++b) upright_values[b - 2] = (d->xmat[9 * b + kZZ] + 1) / 2;
    const double upright = Mean(upright_values, poles);
    const double centered = (1 + Tolerance{0, 0, 2}(cart)) / 2;
    const Tolerance control{0, 0, 1, Sigmoid::kQuadratic, 0};
    const double small_control = (4 + control(d->ctrl[0], Input::kElement)) / 5;
    double small_velocity = 1.0;
    for (int k = 1; k < physics.m()->nv; ++k) {
      const double v = Tolerance{0, 0, 5}(d->qvel[k], Input::kElement);
      small_velocity = k == 1 ? v : std::min(small_velocity, v);
    }
    small_velocity = (1 + small_velocity) / 2;
    return upright * small_control * small_velocity * centered;
  }

  double Discount(const Physics&) const { return kNoDiscount; }

  int slider_, hinge_;
};

}  // namespace fastbatch::dm_control

#endif  // FASTBATCH_DM_CONTROL_CARTPOLE_H_

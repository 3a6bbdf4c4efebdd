// The partially observed ("NoVel") classic-control envs of rl-baselines3-zoo
// (`rl_zoo3/wrappers.py`, MaskVelocityWrapper; ids registered in `rl_zoo3/import_envs.py`): the
// full env's dynamics, rewards and time limit, with the velocity columns taken out of the
// observation. The zoo multiplies those columns by zero and keeps the full shape; here they are
// dropped, so the observation holds exactly what the agent may see (the same information).
//   CartPoleNoVel-v1: (cart position, pole angle) of CartPole-v1's (x, x_dot, theta, theta_dot)
//   PendulumNoVel-v1: (cos theta, sin theta) of Pendulum-v1's (cos, sin, theta_dot)
// GetState and SetState are the full env's, so lockstep tests compare the hidden velocities too.
#ifndef FASTBATCH_ENVS_NO_VELOCITY_H_
#define FASTBATCH_ENVS_NO_VELOCITY_H_

#include "cartpole.h"
#include "fastbatch/env.h"
#include "pendulum.h"

namespace fastbatch::envs {

// `Full` with only the observation columns that `Columns` names (Columns::kKept, in order).
// `Columns::MakeSpec()` gives the spec: the full env's, with its own id and observation space.
template <typename Full, typename Columns>
class NoVelocity {
 public:
  using ObsType = typename Full::ObsType;
  using ActionType = typename Full::ActionType;

  static Spec MakeSpec() { return Columns::MakeSpec(); }

  explicit NoVelocity(const Params& params) : env_(params) {}

  void Reset(Rng& rng, ObsType* obs) {
    env_.Reset(rng, full_);
    Select(obs);
  }

  // `action` as the full env takes it (a Discrete value or a pointer to a Box row).
  template <typename Action>
  StepResult Step(Action action, ObsType* obs) {
    const StepResult result = env_.Step(action, full_);
    Select(obs);
    return result;
  }

  static constexpr int64_t kStateSize = Full::kStateSize;
  void GetState(double* out) const { env_.GetState(out); }
  void SetState(const double* state) { env_.SetState(state); }

 private:
  void Select(ObsType* obs) const {
    for (int k = 0; k < Columns::kCount; ++k) obs[k] = full_[Columns::kKept[k]];
  }

  Full env_;
  ObsType full_[Columns::kFullSize] = {};
};

struct CartPoleNoVelColumns {
  static constexpr int kFullSize = 4;
  static constexpr int kCount = 2;
  static constexpr int kKept[kCount] = {0, 2};
  static Spec MakeSpec() {
    const double x = CartPole::kXThreshold * 2, theta = CartPole::kThetaThreshold * 2;
    return Spec("CartPoleNoVel-v1")
        .Observation(Box({2}, {-x, -theta}, {x, theta}))
        .Action(Discrete(2))
        .MaxEpisodeSteps(500)
        .RewardThreshold(475.0)
        .BoolParam("sutton_barto_reward", false);  // gymnasium's kwarg is a bool
  }
};

struct PendulumNoVelColumns {
  static constexpr int kFullSize = 3;
  static constexpr int kCount = 2;
  static constexpr int kKept[kCount] = {0, 1};
  static Spec MakeSpec() {
    return Spec("PendulumNoVel-v1")
        .Observation(Box({2}, {-1.0, -1.0}, {1.0, 1.0}))
        .Action(Box({1}, -Pendulum::kMaxTorque, Pendulum::kMaxTorque))
        .MaxEpisodeSteps(200)
        .Param("g", 10.0);
  }
};

using CartPoleNoVel = NoVelocity<CartPole, CartPoleNoVelColumns>;
using PendulumNoVel = NoVelocity<Pendulum, PendulumNoVelColumns>;

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_NO_VELOCITY_H_

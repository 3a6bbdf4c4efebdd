// Spread-v0: a cooperative particle task in the spirit of MPE's simple_spread (PettingZoo/mpe2),
// and fastbatch's built-in multi-agent env (ABI version 6). Its Python twin, a PettingZoo
// ParallelEnv computing the same numbers in the same order, is fastbatch.agents.spread; the
// tests step both in lockstep, bit for bit.
//
// `agents` agents (param, 1 to 8, default 3) and as many landmarks on a plane. Reset draws, with
// the env's generator and in this order, each agent's position (x then y, uniform in [-1, 1]),
// then each landmark's (uniform in [-0.9, 0.9]); velocities start at 0.
//
// Actions: Discrete(5) per agent, MPE's order: 0 stay, 1 left (-x), 2 right (+x), 3 down (-y),
// 4 up (+y). A step pushes each agent with force 5 along its action's axis; then, agent by
// agent, velocity = velocity * (1 - 0.25) + force * 0.1 (damping 0.25, mass 1, dt 0.1) and
// position = position + velocity * 0.1. Agents do not push each other (MPE's soft contact
// forces are left out).
//
// Observation of agent i (float32, 4 + 2 * agents + 2 * (agents - 1) values): its velocity and
// position (vx, vy, x, y), every landmark's position relative to it (landmark order), then every
// other agent's position relative to it (agent order, skipping i). MPE also sends a zero
// communication channel, which is left out.
//
// Reward of agent i, after the move: (1 - local_ratio) * shared + local_ratio * own, where shared
// = -(sum over landmarks of the distance to the nearest agent) and own = -(the number of other
// agents closer than 0.3, two agent radii, to agent i). MPE counts each agent as colliding with
// itself too (a constant -1 in own); here it does not. local_ratio is a param (default 0.5).
//
// Episodes: no agent terminates; the time limit truncates every agent after 25 steps (MPE's
// max_cycles).
#ifndef FASTBATCH_ENVS_SPREAD_H_
#define FASTBATCH_ENVS_SPREAD_H_

#include <cmath>
#include <cstdint>

#include "fastbatch/env.h"

namespace fastbatch::envs {

class Spread {
 public:
  using ObsType = float;
  using ActionType = int64_t;
  static constexpr int64_t kMaxAgents = 8;

  static ParamList DeclareParams() {
    return ParamList().Int("agents", 3, 1, kMaxAgents).Float("local_ratio", 0.5, 0.0, 1.0);
  }
  static Spec MakeSpec(const Params& p) {
    const int64_t n = p.Int("agents");
    return Spec("Spread-v0")
        .Observation(Box({4 + 2 * n + 2 * (n - 1)}, -kInf, kInf))
        .Action(Discrete(5))
        .MaxEpisodeSteps(25)
        .Agents(static_cast<int32_t>(n));
  }

  explicit Spread(const Params& p) : n_(p.Int("agents")), local_ratio_(p.Float("local_ratio")) {}

  void Reset(Rng& rng, float* obs) {
    for (int64_t i = 0; i < n_; ++i) {
      agent_x_[i] = rng.Uniform(-1.0, 1.0);
      agent_y_[i] = rng.Uniform(-1.0, 1.0);
      vel_x_[i] = 0.0;
      vel_y_[i] = 0.0;
    }
    for (int64_t l = 0; l < n_; ++l) {
      mark_x_[l] = rng.Uniform(-0.9, 0.9);
      mark_y_[l] = rng.Uniform(-0.9, 0.9);
    }
    Observe(obs);
  }

  void Step(const int64_t* actions, float* obs, const AgentResults& out) {
    for (int64_t i = 0; i < n_; ++i) {
      const int64_t a = actions[i];
      const double force_x = a == 1 ? -kForce : a == 2 ? kForce : 0.0;
      const double force_y = a == 3 ? -kForce : a == 4 ? kForce : 0.0;
      vel_x_[i] = vel_x_[i] * (1.0 - kDamping) + force_x * kDt;
      vel_y_[i] = vel_y_[i] * (1.0 - kDamping) + force_y * kDt;
      agent_x_[i] = agent_x_[i] + vel_x_[i] * kDt;
      agent_y_[i] = agent_y_[i] + vel_y_[i] * kDt;
    }
    double shared = 0.0;
    for (int64_t l = 0; l < n_; ++l) {
      double nearest = Distance(agent_x_[0] - mark_x_[l], agent_y_[0] - mark_y_[l]);
      for (int64_t i = 1; i < n_; ++i) {
        nearest = std::fmin(nearest, Distance(agent_x_[i] - mark_x_[l], agent_y_[i] - mark_y_[l]));
      }
      shared = shared - nearest;
    }
    for (int64_t i = 0; i < n_; ++i) {
      double own = 0.0;
      for (int64_t j = 0; j < n_; ++j) {
        if (j != i && Distance(agent_x_[j] - agent_x_[i], agent_y_[j] - agent_y_[i]) < kContact) {
          own = own - 1.0;
        }
      }
      out.reward[i] = static_cast<float>((1.0 - local_ratio_) * shared + local_ratio_ * own);
    }
    Observe(obs);
  }

 private:
  static constexpr double kForce = 5.0;  // MPE's agent sensitivity times a unit action
  static constexpr double kDamping = 0.25;
  static constexpr double kDt = 0.1;
  static constexpr double kContact = 0.3;  // two agent radii of 0.15

  static double Distance(double dx, double dy) { return std::sqrt(dx * dx + dy * dy); }

  void Observe(float* obs) const {
    for (int64_t i = 0; i < n_; ++i) {
      float* row = obs + i * (4 + 2 * n_ + 2 * (n_ - 1));
      *row++ = static_cast<float>(vel_x_[i]);
      *row++ = static_cast<float>(vel_y_[i]);
      *row++ = static_cast<float>(agent_x_[i]);
      *row++ = static_cast<float>(agent_y_[i]);
      for (int64_t l = 0; l < n_; ++l) {
        *row++ = static_cast<float>(mark_x_[l] - agent_x_[i]);
        *row++ = static_cast<float>(mark_y_[l] - agent_y_[i]);
      }
      for (int64_t j = 0; j < n_; ++j) {
        if (j == i) continue;
        *row++ = static_cast<float>(agent_x_[j] - agent_x_[i]);
        *row++ = static_cast<float>(agent_y_[j] - agent_y_[i]);
      }
    }
  }

  int64_t n_;
  double local_ratio_;
  double agent_x_[kMaxAgents] = {}, agent_y_[kMaxAgents] = {};
  double vel_x_[kMaxAgents] = {}, vel_y_[kMaxAgents] = {};
  double mark_x_[kMaxAgents] = {}, mark_y_[kMaxAgents] = {};
};

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_SPREAD_H_

// GoalCells-v0: a multi-agent env (ABI version 6). `agents` agents walk a size x size grid, each
// to its own goal cell; an agent that reaches its goal leaves the episode (terminated), and the
// episode ends when every agent has left or the time limit (4 * size steps) truncates the rest.
//
// Observation of agent k (float32, 4 + 2 * (agents - 1) values, divided by size): its cell
// (x, y), its goal relative to it (gx - x, gy - y), then every other agent's cell relative to it
// (agent order, skipping k; zeros for an agent that has left).
// Action: Discrete(5) per agent: stay, up (-y), down (+y), left (-x), right (+x); agents pass
// through each other, and a move off the grid stays.
// Reward of agent k: 1 on reaching its goal, minus 0.01 for every step it is still walking.
#include <cstdint>

#include "fastbatch/env.h"

class GoalCells {
 public:
  using ObsType = float;
  using ActionType = int64_t;
  static constexpr int64_t kMaxAgents = 8;

  static fastbatch::ParamList DeclareParams() {
    return fastbatch::ParamList().Int("agents", 2, 1, kMaxAgents).Int("size", 6, 2, 64);
  }

  // The agent count is the spec's: every array of the batch gets a row per agent.
  static fastbatch::Spec MakeSpec(const fastbatch::Params& p) {
    const int64_t agents = p.Int("agents"), size = p.Int("size");
    return fastbatch::Spec("GoalCells-v0")
        .Observation(fastbatch::Box({4 + 2 * (agents - 1)}, -1.0, 1.0))  // one agent's
        .Action(fastbatch::Discrete(5))                                  // one agent's
        .MaxEpisodeSteps(4 * size)
        .Agents(static_cast<int32_t>(agents));
  }

  explicit GoalCells(const fastbatch::Params& p) : agents_(p.Int("agents")), size_(p.Int("size")) {}

  // Writes every agent's first observation: obs holds `agents` rows, one after another.
  void Reset(fastbatch::Rng& rng, float* obs) {
    for (int64_t k = 0; k < agents_; ++k) {
      Agent& a = agent_[k];
      a.x = rng.Integers(size_), a.y = rng.Integers(size_);
      do {
        a.gx = rng.Integers(size_), a.gy = rng.Integers(size_);
      } while (a.gx == a.x && a.gy == a.y);
      a.in = true;
    }
    Observe(obs);
  }

  // One call steps every agent: actions[k] is agent k's; out.reward[k], out.terminated[k] and
  // out.truncated[k] (zero on entry) are its results. An agent that has left is not stepped (the
  // pool zeroes its rows and ignores its action until the env resets).
  void Step(const int64_t* actions, float* obs, const fastbatch::AgentResults& out) {
    static constexpr int64_t kDx[] = {0, 0, 0, -1, 1};
    static constexpr int64_t kDy[] = {0, -1, 1, 0, 0};
    for (int64_t k = 0; k < agents_; ++k) {
      Agent& a = agent_[k];
      if (!a.in) continue;
      const int64_t x = a.x + kDx[actions[k]], y = a.y + kDy[actions[k]];
      if (x >= 0 && y >= 0 && x < size_ && y < size_) a.x = x, a.y = y;
      const bool reached = a.x == a.gx && a.y == a.gy;
      out.reward[k] = reached ? 1.0f : -0.01f;
      out.terminated[k] = reached ? 1 : 0;
      a.in = !reached;
    }
    Observe(obs);
  }

 private:
  struct Agent {
    int64_t x = 0, y = 0, gx = 0, gy = 0;
    bool in = false;
  };

  void Observe(float* obs) const {
    const float scale = 1.0f / static_cast<float>(size_);
    const int64_t row = 4 + 2 * (agents_ - 1);
    for (int64_t k = 0; k < agents_; ++k) {
      const Agent& a = agent_[k];
      float* o = obs + k * row;
      *o++ = static_cast<float>(a.x) * scale;
      *o++ = static_cast<float>(a.y) * scale;
      *o++ = static_cast<float>(a.gx - a.x) * scale;
      *o++ = static_cast<float>(a.gy - a.y) * scale;
      for (int64_t j = 0; j < agents_; ++j) {
        if (j == k) continue;
        const Agent& b = agent_[j];
        *o++ = b.in ? static_cast<float>(b.x - a.x) * scale : 0.0f;
        *o++ = b.in ? static_cast<float>(b.y - a.y) * scale : 0.0f;
      }
    }
  }

  int64_t agents_, size_;
  Agent agent_[kMaxAgents];
};

FASTBATCH_EXPORT_ENV(GoalCells)

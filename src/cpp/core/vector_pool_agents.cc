// The bookkeeping of multi-agent envs after a step (vector_pool.h, "Multi-agent envs").
#include <algorithm>
#include <cstring>

#include "vector_pool.h"

namespace fastbatch {

int64_t VectorPool::AgentBooks(int64_t begin, int64_t end, const BatchOut& out, double* now_out) {
  const int64_t agents = num_agents_;
  const auto agent_bytes = static_cast<size_t>(frame_bytes_);
  auto* obs = static_cast<uint8_t*>(out.obs);
  const bool next_step = mode_ == AutoresetMode::kNextStep;
  double now = *now_out;
  int64_t ended = 0;
  for (int64_t i = begin; i < end; ++i) {
    const auto k = static_cast<size_t>(i);
    const int64_t first = i * agents;
    uint8_t* active = agent_active_.data() + first;
    uint8_t* alive = agent_alive_.data() + first;
    if (AutoresetBooks(i, next_step, obs, &now)) {  // every agent starts the new episode
      std::fill_n(active, agents, uint8_t{1});
      continue;
    }
    ++elapsed_[k];
    const bool limit = max_episode_steps_ > 0 && elapsed_[k] >= max_episode_steps_;
    bool any_left = false;
    for (int64_t a = 0; a < agents; ++a) {
      const int64_t r = first + a;
      active[a] = alive[a];
      if (!alive[a]) {  // gone: whatever the env wrote, its rows read zeros
        std::memset(obs + r * frame_bytes_, 0, agent_bytes);
        out.reward[r] = 0.0f;
        out.terminated[r] = 0;
        out.truncated[r] = 0;
        continue;
      }
      ep_return_[k] += static_cast<double>(out.reward[r]);
      const bool terminated = out.terminated[r] != 0;
      const bool truncated = out.truncated[r] != 0 || limit;
      out.terminated[r] = terminated ? 1 : 0;
      out.truncated[r] = truncated ? 1 : 0;
      if (terminated || truncated) {
        alive[a] = 0;
      } else {
        any_left = true;
      }
    }
    done_[k] = any_left ? 0 : 1;
    if (any_left) continue;
    ++ended;
    EndEpisode(i, obs, &now);
  }
  *now_out = now;
  return ended;
}

}  // namespace fastbatch

#include "bindings/rollout_abi.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>

using fastbatch::AutoresetMode;
using fastbatch::BatchOut;
using fastbatch::RolloutContext;
using fastbatch::VectorPool;

extern "C" int32_t FastbatchRolloutStep(void* context, int64_t t, const void* actions,
                                        void* next_obs, bool* done) {
  auto* ctx = static_cast<RolloutContext*>(context);
  try {
    if (t < 0 || t >= ctx->steps) throw std::out_of_range("rollout step index out of range");
    VectorPool& pool = *ctx->pool;
    const int64_t n = pool.num_envs();
    const int64_t row = pool.obs_row_bytes();
    BatchOut out;
    out.obs = ctx->obs + (t + 1) * n * row;
    out.reward = ctx->reward + t * n;
    out.terminated = ctx->terminated + t * n;
    out.truncated = ctx->truncated + t * n;
    const int64_t ended = pool.Step(actions, out);
    for (int64_t i = 0; i < n; ++i) done[i] = (out.terminated[i] | out.truncated[i]) != 0;
    if (ended > 0) {
      const uint8_t* ended_envs = pool.done();
      for (int64_t i = 0; i < n; ++i) {
        if (!ended_envs[i]) continue;
        ctx->episode_returns.push_back(pool.episode_return()[i]);
        ctx->episode_lengths.push_back(pool.episode_length()[i]);
        if (pool.autoreset_mode() == AutoresetMode::kSameStep) {
          std::memcpy(ctx->final_obs + (t * n + i) * row, pool.final_obs() + i * row,
                      static_cast<size_t>(row));
        }
      }
    }
    // Raw bytes of the storage dtype: next_obs is typed like the storage (the op's obs_dtype).
    if (next_obs != nullptr) std::memcpy(next_obs, out.obs, static_cast<size_t>(n * row));
    return 0;
  } catch (const fastbatch::EnvError& e) {
    ctx->error =
        (e.env_index() >= 0 ? "env " + std::to_string(e.env_index()) + ": " : "") + e.what();
  } catch (const std::exception& e) {
    ctx->error = e.what();
  }
  return -1;
}

extern "C" const char* FastbatchRolloutError(void* context) {
  return static_cast<RolloutContext*>(context)->error.c_str();
}

extern "C" double FastbatchRolloutLoopSeconds(void* context, int64_t steps, const void* actions) {
  auto* ctx = static_cast<RolloutContext*>(context);
  std::vector<uint8_t> done;
  try {
    done.resize(static_cast<size_t>(ctx->pool->num_envs()));
  } catch (const std::exception& e) {
    ctx->error = e.what();
    return -1.0;
  }
  auto* flags = reinterpret_cast<bool*>(done.data());
  const auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < steps; ++k) {
    if (FastbatchRolloutStep(context, k % ctx->steps, actions, nullptr, flags) != 0) return -1.0;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

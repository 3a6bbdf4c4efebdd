#include "bindings/native_loop.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "core/vector_pool.h"
#include "fastbatch/env.h"

namespace fastbatch {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t[], FreeDeleter>;

// `bytes` zeroed bytes at a 64-byte boundary, as the Python path's result slots are.
AlignedBuffer AlignedZeros(size_t bytes) {
  constexpr size_t kAlign = 64;
  const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return AlignedBuffer(static_cast<uint8_t*>(p));
}

}  // namespace

double NativeLoopSeconds(const fb_env_api* api, int64_t num_envs, int64_t steps, uint64_t seed,
                         int num_threads, const std::vector<float>& box_actions, int64_t batch_size,
                         const std::vector<double>& params, int64_t frame_stack) {
  PoolConfig config;
  config.num_envs = num_envs;
  config.num_threads = num_threads;
  config.max_episode_steps = -1;  // the env's own, for these params
  config.batch_size = batch_size;
  config.frame_stack = frame_stack;
  config.params = params;
  const fb_spec* defaults = api->spec();
  if (params.empty()) {
    for (int32_t i = 0; i < defaults->num_params; ++i) {
      config.params.push_back(defaults->params[i].default_value);
    }
  } else if (static_cast<int64_t>(params.size()) != defaults->num_params) {
    throw std::invalid_argument("params must hold one value per param of the env, in spec order");
  }
  VectorPool pool(api, config);
  const fb_spec* spec = &pool.spec();  // the spaces for these params
  for (int64_t i = 0; i < num_envs; ++i) pool.Seed(i, seed + static_cast<uint64_t>(i));
  int64_t act_size = 1;
  for (int32_t d = 0; d < spec->action.ndim; ++d) act_size *= spec->action.shape[d];
  const int64_t row = num_envs * act_size;
  const int64_t tables = box_actions.empty() ? 64 : static_cast<int64_t>(box_actions.size()) / row;
  if (!box_actions.empty() &&
      (spec->action.is_discrete || tables * row != int64_t(box_actions.size()) || tables == 0)) {
    throw std::invalid_argument(
        "box_actions must be a float32 [tables, num_envs, *action_shape] table of Box actions");
  }
  std::vector<int64_t> discrete(static_cast<size_t>(tables * row));
  std::vector<float> box(discrete.size());
  fb_rng state;
  Rng::Seed(&state, seed, 1);
  Rng rng(&state);
  for (size_t k = 0; k < discrete.size() && box_actions.empty(); ++k) {
    const size_t e = k % static_cast<size_t>(act_size);
    discrete[k] = spec->action.is_discrete
                      ? static_cast<int64_t>(rng.NextU64() % static_cast<uint64_t>(spec->action.n))
                      : 0;
    box[k] = spec->action.is_discrete
                 ? 0.0f
                 : static_cast<float>(rng.Uniform(spec->action.low[e], spec->action.high[e]));
  }
  if (!box_actions.empty()) box = box_actions;
  const auto n = static_cast<size_t>(num_envs);
  AlignedBuffer obs = AlignedZeros(n * static_cast<size_t>(pool.obs_row_bytes()));
  AlignedBuffer reward = AlignedZeros(n * sizeof(float));
  AlignedBuffer terminated = AlignedZeros(n), truncated = AlignedZeros(n);
  BatchOut out;
  out.obs = obs.get();
  out.reward = reinterpret_cast<float*>(reward.get());
  out.terminated = terminated.get();
  out.truncated = truncated.get();
  pool.Reset(nullptr, out.obs, nullptr);
  auto actions_at = [&](int64_t t) {
    const size_t offset = static_cast<size_t>((t % tables) * row);
    return spec->action.is_discrete ? static_cast<const void*>(discrete.data() + offset)
                                    : static_cast<const void*>(box.data() + offset);
  };
  // Async mode: every env is sent once; then each step is a recv of batch_size envs and a send
  // of the same ones (the first batch_size rows of the step's action table) back.
  std::vector<int64_t> env_ids(n);
  for (size_t i = 0; i < n; ++i) env_ids[i] = static_cast<int64_t>(i);
  if (pool.is_async()) pool.Send(env_ids.data(), num_envs, actions_at(0));
  const auto start = std::chrono::steady_clock::now();
  for (int64_t t = 0; t < steps; ++t) {
    if (pool.is_async()) {
      pool.Recv(out, env_ids.data());
      pool.Send(env_ids.data(), pool.batch_size(), actions_at(t));
    } else {
      pool.Step(actions_at(t), out);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace fastbatch

// The chunked scheduler seen through VectorPool: every env is stepped exactly once per batch for
// any thread count; when several envs fail in one step the lowest is reported whatever the
// chunking; envs that sleep inside their step (a stalled thread) change no result; async mode
// over the variable-cost env gives every env its sync trajectory for any thread count and
// batch size.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "core/vector_pool.h"
#include "envs/test_envs.h"
#include "fastbatch/env.h"

namespace fastbatch {
namespace {

struct Buffers {
  explicit Buffers(const VectorPool& pool, int64_t rows)
      : obs(static_cast<size_t>(rows * pool.obs_row_bytes())),
        reward(static_cast<size_t>(rows)),
        terminated(static_cast<size_t>(rows)),
        truncated(static_cast<size_t>(rows)),
        ids(static_cast<size_t>(rows)) {}
  BatchOut Out() { return {obs.data(), reward.data(), terminated.data(), truncated.data()}; }
  std::vector<uint8_t> obs;
  std::vector<float> reward;
  std::vector<uint8_t> terminated, truncated;
  std::vector<int64_t> ids;
};

PoolConfig Config(const fb_env_api* api, int64_t n, int threads, std::vector<double> params,
                  int64_t batch_size = 0) {
  PoolConfig config;
  config.num_envs = n;
  config.num_threads = threads;
  config.autoreset_mode = AutoresetMode::kNextStep;
  config.max_episode_steps = api->spec()->max_episode_steps;
  config.batch_size = batch_size;
  config.params = std::move(params);
  return config;
}

FB_TEST(EveryEnvIsSteppedExactlyOncePerBatch) {
  const fb_env_api* api = EnvApi<envs::TestCounter>();
  for (int64_t n : {1, 2, 5, 16, 37, 64, 100, 256, 1000, 4096}) {
    for (int threads = 1; threads <= 8; ++threads) {
      VectorPool pool(api, Config(api, n, threads, {0.0, 0.0, 0.0}));
      Buffers b(pool, n);
      pool.Reset(nullptr, b.obs.data(), nullptr);
      const std::vector<int64_t> actions(static_cast<size_t>(n), 1);
      int64_t wrong = 0;
      for (int t = 1; t <= 40; ++t) {
        pool.Step(actions.data(), b.Out());
        const auto* obs = reinterpret_cast<const float*>(b.obs.data());
        for (int64_t i = 0; i < n; ++i) wrong += obs[2 * i] != static_cast<float>(t);
      }
      FB_CHECK_MSG(wrong == 0, "n=" + std::to_string(n) + ", threads=" + std::to_string(threads));
      FB_CHECK(pool.active_threads() >= 1 && pool.active_threads() <= pool.num_threads());
    }
  }
}

FB_TEST(TheLowestFailingEnvIsReportedWhateverTheChunking) {
  const fb_env_api* api = EnvApi<envs::TestCounter>();
  for (int threads : {1, 2, 3, 7}) {
    // Envs 0..9 are reset one step later, so only envs 10.. reach step 2, the failing one.
    VectorPool pool(api, Config(api, 300, threads, {2.0, 0.0, 0.0}));
    Buffers b(pool, 300);
    pool.Reset(nullptr, b.obs.data(), nullptr);
    const std::vector<int64_t> actions(300, 0);
    pool.Step(actions.data(), b.Out());
    std::vector<uint8_t> mask(300, 0);
    std::fill(mask.begin(), mask.begin() + 10, 1);
    pool.Reset(mask.data(), b.obs.data(), b.obs.data());
    int64_t env = -1;
    try {
      pool.Step(actions.data(), b.Out());
    } catch (const EnvError& e) {
      env = e.env_index();
    }
    FB_CHECK_MSG(env == 10, "threads=" + std::to_string(threads) + ": " + std::to_string(env));
    pool.Reset(nullptr, b.obs.data(), nullptr);  // usable again after a full reset
    pool.Step(actions.data(), b.Out());
  }
}

// Every output of `steps` sync batch steps of the variable-cost env, as bytes.
std::vector<uint8_t> VariableCostTrace(int threads, int64_t n, int steps, double stall_prob) {
  const fb_env_api* api = EnvApi<envs::TestVariableCost>();
  VectorPool pool(api, Config(api, n, threads, {20.0, 8.0, stall_prob, 2000.0}));
  for (int64_t i = 0; i < n; ++i) pool.Seed(i, 77 + static_cast<uint64_t>(i));
  Buffers b(pool, n);
  pool.Reset(nullptr, b.obs.data(), nullptr);
  std::vector<uint8_t> trace(b.obs);
  std::vector<int64_t> actions(static_cast<size_t>(n));
  for (int t = 0; t < steps; ++t) {
    for (int64_t i = 0; i < n; ++i) actions[static_cast<size_t>(i)] = (i * 7 + t * 3) / 2 % 2;
    const int64_t ended = pool.Step(actions.data(), b.Out());
    const auto* e = reinterpret_cast<const uint8_t*>(&ended);
    trace.insert(trace.end(), e, e + sizeof ended);
    trace.insert(trace.end(), b.obs.begin(), b.obs.end());
    const auto* r = reinterpret_cast<const uint8_t*>(b.reward.data());
    trace.insert(trace.end(), r, r + b.reward.size() * sizeof(float));
    trace.insert(trace.end(), b.terminated.begin(), b.terminated.end());
    trace.insert(trace.end(), b.truncated.begin(), b.truncated.end());
    const auto* ret = reinterpret_cast<const uint8_t*>(pool.episode_return());
    trace.insert(trace.end(), ret, ret + n * static_cast<int64_t>(sizeof(double)));
  }
  return trace;
}

FB_TEST(StalledEnvsChangeNoResult) {
  const std::vector<uint8_t> reference = VariableCostTrace(1, 96, 120, 0.0);
  for (int threads : {2, 3, 7}) {
    FB_CHECK_MSG(VariableCostTrace(threads, 96, 120, 0.0) == reference,
                 "threads=" + std::to_string(threads));
    // About one step in 500 sleeps 2 ms, on whichever thread stepped it.
    FB_CHECK_MSG(VariableCostTrace(threads, 96, 120, 0.002) == reference,
                 "stalls, threads=" + std::to_string(threads));
  }
}

// Per env: its observation rows, rewards and flags, step by step.
using Trajectories = std::vector<std::vector<uint8_t>>;

void Append(std::vector<uint8_t>* row, const Buffers& b, int64_t j, int64_t obs_bytes) {
  row->insert(row->end(), b.obs.begin() + j * obs_bytes, b.obs.begin() + (j + 1) * obs_bytes);
  const auto* r = reinterpret_cast<const uint8_t*>(&b.reward[static_cast<size_t>(j)]);
  row->insert(row->end(), r, r + sizeof(float));
  row->push_back(b.terminated[static_cast<size_t>(j)]);
  row->push_back(b.truncated[static_cast<size_t>(j)]);
}

Trajectories Run(int threads, int64_t n, int64_t batch_size, int steps) {
  const fb_env_api* api = EnvApi<envs::TestVariableCost>();
  VectorPool pool(api, Config(api, n, threads, {20.0, 8.0, 0.0, 0.0}, batch_size));
  for (int64_t i = 0; i < n; ++i) pool.Seed(i, 5 + static_cast<uint64_t>(i));
  const int64_t row = pool.obs_row_bytes();
  Buffers all(pool, n);
  pool.Reset(nullptr, all.obs.data(), nullptr);
  Trajectories got(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    got[static_cast<size_t>(i)].assign(all.obs.begin() + i * row, all.obs.begin() + (i + 1) * row);
  }
  std::vector<int64_t> count(static_cast<size_t>(n), 0), actions(static_cast<size_t>(n));
  auto action = [&count](int64_t i) { return (i * 7 + count[static_cast<size_t>(i)] * 3) / 2 % 2; };
  if (!pool.is_async()) {
    for (int t = 0; t < steps; ++t) {
      for (int64_t i = 0; i < n; ++i) actions[static_cast<size_t>(i)] = action(i);
      pool.Step(actions.data(), all.Out());
      for (int64_t i = 0; i < n; ++i) {
        Append(&got[static_cast<size_t>(i)], all, i, row);
        ++count[static_cast<size_t>(i)];
      }
    }
    return got;
  }
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[static_cast<size_t>(i)] = i;
    actions[static_cast<size_t>(i)] = action(i);
  }
  pool.Send(ids.data(), n, actions.data());
  Buffers b(pool, batch_size);
  while (*std::min_element(count.begin(), count.end()) < steps) {
    pool.Recv(b.Out(), b.ids.data());
    for (int64_t j = 0; j < batch_size; ++j) {
      const int64_t i = b.ids[static_cast<size_t>(j)];
      Append(&got[static_cast<size_t>(i)], b, j, row);
      ++count[static_cast<size_t>(i)];
      actions[static_cast<size_t>(j)] = action(i);
    }
    pool.Send(b.ids.data(), batch_size, actions.data());
  }
  pool.Reset(nullptr, all.obs.data(), nullptr);  // drains what is still in flight
  const size_t per_step = static_cast<size_t>(row) + sizeof(float) + 2;
  for (auto& t : got) t.resize(static_cast<size_t>(row) + static_cast<size_t>(steps) * per_step);
  return got;
}

FB_TEST(AsyncEnvsFollowTheirSyncTrajectories) {
  const Trajectories sync = Run(1, 24, 0, 60);
  for (int threads : {1, 2, 3}) {
    for (int64_t batch : {1, 8, 12, 23}) {
      FB_CHECK_MSG(Run(threads, 24, batch, 60) == sync,
                   "threads=" + std::to_string(threads) + ", batch=" + std::to_string(batch));
    }
  }
}

FB_TEST(AsyncReportsTheLowestFailedEnvOfABatch) {
  const fb_env_api* api = EnvApi<envs::TestCounter>();
  for (int threads : {1, 2, 3}) {
    VectorPool pool(api, Config(api, 8, threads, {1.0, 0.0, 0.0}, 7));  // every step throws
    Buffers all(pool, 8);
    pool.Reset(nullptr, all.obs.data(), nullptr);
    const std::vector<int64_t> ids = {7, 6, 5, 4, 3, 2, 1, 0}, actions(8, 0);
    pool.Send(ids.data(), 8, actions.data());
    Buffers b(pool, 7);
    int64_t env = -1;
    try {
      pool.Recv(b.Out(), b.ids.data());
    } catch (const EnvError& e) {
      env = e.env_index();
    }
    const int64_t lowest = *std::min_element(b.ids.begin(), b.ids.end());
    FB_CHECK_MSG(env == lowest && env <= 1, std::to_string(env));
    pool.Reset(nullptr, all.obs.data(), nullptr);
  }
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()

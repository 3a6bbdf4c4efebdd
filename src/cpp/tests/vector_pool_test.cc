// VectorPool with the test env (envs/test_envs.h, TestCounter: obs = [steps since reset, last
// action], reward = action, terminates on action 3): the rows of every output and of the
// episode statistics in NEXT_STEP, SAME_STEP and DISABLED autoreset modes, time-limit
// truncation, env errors; and bit-identical results for 1 and several threads on real envs.
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "core/vector_pool.h"
#include "envs/cartpole.h"
#include "envs/pendulum.h"
#include "envs/test_envs.h"
#include "fastbatch/env.h"

namespace fastbatch {
namespace {

// One pool of TestCounter envs and its output buffers.
class CounterPool {
 public:
  CounterPool(int64_t num_envs, int threads, AutoresetMode mode, int64_t max_episode_steps,
              double terminate_at_step = 0.0, double throw_at_step = 0.0)
      : n_(num_envs),
        obs_(static_cast<size_t>(2 * num_envs), -1.0f),
        reward_(static_cast<size_t>(num_envs)),
        terminated_(static_cast<size_t>(num_envs)),
        truncated_(static_cast<size_t>(num_envs)) {
    PoolConfig config;
    config.num_envs = num_envs;
    config.num_threads = threads;
    config.autoreset_mode = mode;
    config.max_episode_steps = max_episode_steps;
    config.params = {throw_at_step, 0.0, terminate_at_step};
    pool_ = std::make_unique<VectorPool>(EnvApi<envs::TestCounter>(), config);
    out_.obs = obs_.data();
    out_.reward = reward_.data();
    out_.terminated = terminated_.data();
    out_.truncated = truncated_.data();
  }

  VectorPool& pool() { return *pool_; }
  void Reset(const std::vector<uint8_t>* mask = nullptr, const float* prev = nullptr) {
    pool_->Reset(mask ? mask->data() : nullptr, obs_.data(), prev);
  }
  int64_t Step(std::vector<int64_t> actions) { return pool_->Step(actions.data(), out_); }

  // Row i of the last output as {obs[0], obs[1], reward, terminated, truncated}.
  std::vector<double> Row(int64_t i) const {
    const auto k = static_cast<size_t>(i);
    return {obs_[2 * k], obs_[2 * k + 1], reward_[k], static_cast<double>(terminated_[k]),
            static_cast<double>(truncated_[k])};
  }
  // Row i of the episode statistics as {done, return, length}.
  std::vector<double> Stats(int64_t i) const {
    return {static_cast<double>(pool_->done()[i]), pool_->episode_return()[i],
            static_cast<double>(pool_->episode_length()[i])};
  }
  std::vector<float> FinalObs(int64_t i) const {
    const auto* p = reinterpret_cast<const float*>(pool_->final_obs()) + 2 * i;
    return {p[0], p[1]};
  }
  const std::vector<float>& obs() const { return obs_; }

 private:
  int64_t n_;
  std::unique_ptr<VectorPool> pool_;
  std::vector<float> obs_, reward_;
  std::vector<uint8_t> terminated_, truncated_;
  BatchOut out_;
};

using Row = std::vector<double>;

std::string Show(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

#define CHECK_ROW(actual, ...)                                                    \
  do {                                                                            \
    const Row fb_expected_ = __VA_ARGS__;                                         \
    const Row fb_actual_ = (actual);                                              \
    FB_CHECK_MSG(fb_actual_ == fb_expected_,                                      \
                 "got " + Show(fb_actual_) + ", expected " + Show(fb_expected_)); \
  } while (0)

// The scenario of the three mode tests (3 envs, time limit 3): env 1 terminates on step 1,
// envs 0 and 2 are truncated on step 3.
const std::vector<int64_t> kFirst = {1, 3, 2}, kThen = {1, 1, 2}, kLast = {0, 0, 0};

FB_TEST(NextStepAutoresetRowsAndStatistics) {
  for (int threads : {1, 3}) {
    CounterPool p(3, threads, AutoresetMode::kNextStep, 3);
    p.Reset();
    FB_CHECK(p.obs() == (std::vector<float>{0, 0, 0, 0, 0, 0}));

    FB_CHECK_EQ(p.Step(kFirst), 1);
    CHECK_ROW(p.Row(0), {1, 1, 1, 0, 0});
    CHECK_ROW(p.Row(1), {1, 3, 3, 1, 0});  // terminated: obs is the last one
    CHECK_ROW(p.Row(2), {1, 2, 2, 0, 0});
    CHECK_ROW(p.Stats(0), {0, 0, 0});
    CHECK_ROW(p.Stats(1), {1, 3, 1});
    CHECK_ROW(p.Stats(2), {0, 0, 0});
    FB_CHECK(p.pool().episode_time()[1] >= 0.0);

    FB_CHECK_EQ(p.Step(kThen), 0);
    CHECK_ROW(p.Row(0), {2, 1, 1, 0, 0});
    CHECK_ROW(p.Row(1), {0, 0, 0, 0, 0});  // the autoreset step: reset obs, reward 0, no flags
    CHECK_ROW(p.Row(2), {2, 2, 2, 0, 0});
    for (int64_t i = 0; i < 3; ++i) CHECK_ROW(p.Stats(i), {0, 0, 0});

    FB_CHECK_EQ(p.Step(kThen), 2);
    CHECK_ROW(p.Row(0), {3, 1, 1, 0, 1});  // time limit: truncated, not terminated
    CHECK_ROW(p.Row(1), {1, 1, 1, 0, 0});
    CHECK_ROW(p.Row(2), {3, 2, 2, 0, 1});
    CHECK_ROW(p.Stats(0), {1, 3, 3});
    CHECK_ROW(p.Stats(1), {0, 0, 0});
    CHECK_ROW(p.Stats(2), {1, 6, 3});
    FB_CHECK_EQ(p.pool().episode_time()[1], 0.0);

    FB_CHECK_EQ(p.Step(kLast), 0);
    CHECK_ROW(p.Row(0), {0, 0, 0, 0, 0});
    CHECK_ROW(p.Row(1), {2, 0, 0, 0, 0});
    CHECK_ROW(p.Row(2), {0, 0, 0, 0, 0});
  }
}

FB_TEST(SameStepAutoresetRowsFinalObsAndStatistics) {
  for (int threads : {1, 3}) {
    CounterPool p(3, threads, AutoresetMode::kSameStep, 3);
    p.Reset();

    FB_CHECK_EQ(p.Step(kFirst), 1);
    CHECK_ROW(p.Row(0), {1, 1, 1, 0, 0});
    CHECK_ROW(p.Row(1), {0, 0, 3, 1, 0});  // reset in the same step: the new episode's obs
    CHECK_ROW(p.Row(2), {1, 2, 2, 0, 0});
    FB_CHECK(p.FinalObs(1) == (std::vector<float>{1, 3}));
    CHECK_ROW(p.Stats(1), {1, 3, 1});
    CHECK_ROW(p.Stats(0), {0, 0, 0});

    FB_CHECK_EQ(p.Step(kThen), 0);
    CHECK_ROW(p.Row(0), {2, 1, 1, 0, 0});
    CHECK_ROW(p.Row(1), {1, 1, 1, 0, 0});  // no lost step: the new episode steps at once
    CHECK_ROW(p.Row(2), {2, 2, 2, 0, 0});
    for (int64_t i = 0; i < 3; ++i) CHECK_ROW(p.Stats(i), {0, 0, 0});

    FB_CHECK_EQ(p.Step(kThen), 2);
    CHECK_ROW(p.Row(0), {0, 0, 1, 0, 1});
    CHECK_ROW(p.Row(1), {2, 1, 1, 0, 0});
    CHECK_ROW(p.Row(2), {0, 0, 2, 0, 1});
    FB_CHECK(p.FinalObs(0) == (std::vector<float>{3, 1}));
    FB_CHECK(p.FinalObs(2) == (std::vector<float>{3, 2}));
    CHECK_ROW(p.Stats(0), {1, 3, 3});
    CHECK_ROW(p.Stats(1), {0, 0, 0});
    CHECK_ROW(p.Stats(2), {1, 6, 3});

    FB_CHECK_EQ(p.Step(kLast), 1);
    CHECK_ROW(p.Row(0), {1, 0, 0, 0, 0});
    CHECK_ROW(p.Row(1), {0, 0, 0, 0, 1});  // env 1's second episode hits the limit
    CHECK_ROW(p.Row(2), {1, 0, 0, 0, 0});
    FB_CHECK(p.FinalObs(1) == (std::vector<float>{3, 0}));
    CHECK_ROW(p.Stats(1), {1, 2, 3});
  }
}

FB_TEST(DisabledAutoresetRefusesEndedEnvsUntilAMaskedReset) {
  for (int threads : {1, 3}) {
    CounterPool p(3, threads, AutoresetMode::kDisabled, 3);
    p.Reset();
    FB_CHECK_EQ(p.Step(kFirst), 1);
    CHECK_ROW(p.Row(1), {1, 3, 3, 1, 0});
    CHECK_ROW(p.Stats(1), {1, 3, 1});

    std::string message;
    try {
      p.Step(kThen);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    FB_CHECK_MSG(message.rfind("env 1 has ended its episode", 0) == 0, message);

    // Rows outside the mask are copied from the observations the caller holds.
    const std::vector<float> held = p.obs();
    const std::vector<uint8_t> mask = {0, 1, 0};
    p.Reset(&mask, held.data());
    FB_CHECK(p.obs() == (std::vector<float>{1, 1, 0, 0, 1, 2}));

    FB_CHECK_EQ(p.Step(kThen), 0);
    CHECK_ROW(p.Row(0), {2, 1, 1, 0, 0});
    CHECK_ROW(p.Row(1), {1, 1, 1, 0, 0});
    CHECK_ROW(p.Row(2), {2, 2, 2, 0, 0});
    FB_CHECK_EQ(p.Step(kThen), 2);
    CHECK_ROW(p.Row(0), {3, 1, 1, 0, 1});
    CHECK_ROW(p.Row(2), {3, 2, 2, 0, 1});
    CHECK_ROW(p.Stats(0), {1, 3, 3});
    CHECK_ROW(p.Stats(2), {1, 6, 3});
    FB_CHECK_THROWS(p.Step(kThen), std::invalid_argument);
  }
}

FB_TEST(TerminationOnTheLastAllowedStepSetsBothFlags) {
  CounterPool p(1, 1, AutoresetMode::kNextStep, 2);
  p.Reset();
  FB_CHECK_EQ(p.Step({0}), 0);
  FB_CHECK_EQ(p.Step({3}), 1);
  CHECK_ROW(p.Row(0), {2, 3, 3, 1, 1});
  CHECK_ROW(p.Stats(0), {1, 3, 2});
}

FB_TEST(NoTimeLimitWhenMaxEpisodeStepsIsZero) {
  CounterPool p(2, 1, AutoresetMode::kNextStep, 0, /*terminate_at_step=*/50);
  p.Reset();
  for (int t = 1; t < 50; ++t) {
    FB_CHECK_EQ(p.Step({1, 2}), 0);
    FB_CHECK_EQ(p.Row(0)[4], 0.0);
  }
  FB_CHECK_EQ(p.Step({1, 2}), 2);
  CHECK_ROW(p.Row(1), {50, 2, 2, 1, 0});
  CHECK_ROW(p.Stats(0), {1, 50, 50});
  CHECK_ROW(p.Stats(1), {1, 100, 50});
}

FB_TEST(AnEnvErrorNamesTheEnvAndBlocksSteppingUntilAFullReset) {
  CounterPool p(4, 2, AutoresetMode::kNextStep, 0, 0.0, /*throw_at_step=*/2);
  p.Reset();
  FB_CHECK_EQ(p.Step({0, 0, 0, 0}), 0);
  int64_t env = -2;
  std::string message;
  try {
    p.Step({0, 0, 0, 0});
  } catch (const EnvError& e) {
    env = e.env_index();
    message = e.what();
  }
  FB_CHECK_EQ(env, 0);
  FB_CHECK_MSG(message == "test env: step 2 failed", message);
  FB_CHECK_THROWS(p.Step({0, 0, 0, 0}), std::logic_error);
  const std::vector<uint8_t> mask = {1, 0, 0, 0};
  FB_CHECK_THROWS(p.Reset(&mask), std::logic_error);
  p.Reset();
  FB_CHECK_EQ(p.Step({1, 1, 1, 1}), 0);
  CHECK_ROW(p.Row(3), {1, 1, 1, 0, 0});
}

// Every output of `steps` batch steps of `Env` with seeded resets and a fixed action
// sequence, as bytes (obs, reward, flags, statistics rows, SAME_STEP final obs).
// `params`: the env's param values (empty: its defaults); `chunk_size` (if given): the pool's
// chunk size after the steps.
template <typename Env>
std::vector<uint8_t> Trace(int threads, AutoresetMode mode, int64_t num_envs, int steps,
                           std::vector<double> params = {}, int64_t* chunk_size = nullptr) {
  const fb_env_api* api = EnvApi<Env>();
  const fb_spec* spec = api->spec();
  PoolConfig config;
  config.num_envs = num_envs;
  config.num_threads = threads;
  config.autoreset_mode = mode;
  config.max_episode_steps = spec->max_episode_steps;
  config.params = std::move(params);
  for (int32_t i = 0; config.params.empty() && i < spec->num_params; ++i) {
    config.params.push_back(spec->params[i].default_value);
  }
  VectorPool pool(api, config);
  FB_CHECK_EQ(pool.num_threads(), threads);
  for (int64_t i = 0; i < num_envs; ++i) pool.Seed(i, 1234 + static_cast<uint64_t>(i));
  const auto n = static_cast<size_t>(num_envs);
  std::vector<uint8_t> obs(n * static_cast<size_t>(pool.obs_row_bytes()));
  std::vector<float> reward(n);
  std::vector<uint8_t> terminated(n), truncated(n);
  BatchOut out{obs.data(), reward.data(), terminated.data(), truncated.data()};
  std::vector<uint8_t> trace;
  auto append = [&trace](const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    trace.insert(trace.end(), b, b + bytes);
  };
  pool.Reset(nullptr, obs.data(), nullptr);
  append(obs.data(), obs.size());
  fb_rng state;
  Rng::Seed(&state, 99, 0);
  Rng rng(&state);
  std::vector<int64_t> discrete(n);
  std::vector<float> box(n);
  for (int t = 0; t < steps; ++t) {
    for (size_t i = 0; i < n; ++i) {
      discrete[i] = static_cast<int64_t>(rng.NextU64() % 2);
      box[i] = static_cast<float>(rng.Uniform(-2.0, 2.0));
    }
    const void* actions = spec->action.is_discrete ? static_cast<const void*>(discrete.data())
                                                   : static_cast<const void*>(box.data());
    const int64_t ended = pool.Step(actions, out);
    append(&ended, sizeof ended);
    append(obs.data(), obs.size());
    append(reward.data(), n * sizeof(float));
    append(terminated.data(), n);
    append(truncated.data(), n);
    append(pool.done(), n);
    append(pool.episode_return(), n * sizeof(double));
    append(pool.episode_length(), n * sizeof(int64_t));
    if (mode == AutoresetMode::kSameStep) {
      append(pool.final_obs(), n * static_cast<size_t>(pool.obs_row_bytes()));
    }
  }
  if (chunk_size != nullptr) *chunk_size = pool.chunk_size();
  return trace;
}

template <typename Env>
void CheckThreadsAgree(const char* name) {
  for (AutoresetMode mode : {AutoresetMode::kNextStep, AutoresetMode::kSameStep}) {
    const std::vector<uint8_t> one = Trace<Env>(1, mode, 37, 450);
    for (int threads : {2, 3, 7}) {
      FB_CHECK_MSG(Trace<Env>(threads, mode, 37, 450) == one,
                   std::string(name) + " with " + std::to_string(threads) + " threads, mode " +
                       std::to_string(static_cast<int>(mode)));
    }
  }
}

FB_TEST(ResultsDoNotDependOnTheNumberOfThreads) {
  CheckThreadsAgree<envs::CartPole>("CartPole");  // Discrete, random resets, terminations
  CheckThreadsAgree<envs::Pendulum>("Pendulum");  // Box actions, time-limit truncations
}

// Envs whose step costs microseconds get one env a chunk after the first sync steps (the threads
// then balance uneven steps env by env); cheap envs keep chunks on cache-line borders. Either
// way the results are those of one thread, the switch mid-run included.
FB_TEST(CostlyEnvsGetOneEnvAChunkWithTheSameResults) {
  // TestVariableCost: max_cost 20, work_unit 2000 (about 3 us a unit), no stalls.
  const std::vector<double> costly = {20.0, 2000.0, 0.0, 1000.0};
  int64_t chunk = 0;
  const std::vector<uint8_t> one =
      Trace<envs::TestVariableCost>(1, AutoresetMode::kNextStep, 37, 40, costly, &chunk);
  FB_CHECK_EQ(chunk, 37);
  for (int threads : {2, 3}) {
    FB_CHECK_MSG(Trace<envs::TestVariableCost>(threads, AutoresetMode::kNextStep, 37, 40, costly,
                                               &chunk) == one,
                 std::to_string(threads) + " threads");
    FB_CHECK_EQ(chunk, 1);
  }
  Trace<envs::CartPole>(2, AutoresetMode::kNextStep, 37, 40, {}, &chunk);
  FB_CHECK_EQ(chunk, ChunkSize(37, 2));
}

// Frame stacking, k = 3, on two TestCounter envs (obs [steps, last action]): the stacked spec,
// the pad at reset, the shift by one a step, the pad at an autoreset (NEXT_STEP: on the step
// after the end; SAME_STEP: at once, the final observation stacked), a masked reset; the
// output arrays alternate, so the history must come from the pool.
FB_TEST(FrameStackShiftsByOneAndPadsAtEpisodeStarts) {
  using Frames = std::vector<float>;  // env 0's row, then env 1's: 3 frames of 2 each
  for (AutoresetMode mode : {AutoresetMode::kNextStep, AutoresetMode::kSameStep}) {
    PoolConfig config;
    config.num_envs = 2;
    config.num_threads = 2;
    config.autoreset_mode = mode;
    config.params = {0.0, 0.0, 0.0};
    config.frame_stack = 3;
    VectorPool pool(EnvApi<envs::TestCounter>(), config);
    const fb_space& raw = EnvApi<envs::TestCounter>()->spec()->observation;
    const fb_space& space = pool.spec().observation;
    FB_CHECK_EQ(space.ndim, 2);
    FB_CHECK_EQ(space.shape[0], int64_t{3});
    FB_CHECK_EQ(space.shape[1], int64_t{2});
    for (int f = 0; f < 3; ++f) {
      for (int j = 0; j < 2; ++j) {
        FB_CHECK_EQ(space.low[2 * f + j], raw.low[j]);
        FB_CHECK_EQ(space.high[2 * f + j], raw.high[j]);
      }
    }
    FB_CHECK_EQ(pool.obs_row_bytes(), int64_t{24});
    FB_CHECK_EQ(pool.frame_bytes(), int64_t{8});
    Frames buffers[2] = {Frames(12, -1.0f), Frames(12, -1.0f)};
    std::vector<float> reward(2);
    std::vector<uint8_t> terminated(2), truncated(2);
    int call = 0;
    auto step = [&](std::vector<int64_t> actions) -> const Frames& {
      Frames& obs = buffers[++call % 2];
      std::fill(obs.begin(), obs.end(), -1.0f);
      pool.Step(actions.data(),
                BatchOut{obs.data(), reward.data(), terminated.data(), truncated.data()});
      return obs;
    };
    pool.Reset(nullptr, buffers[0].data(), nullptr);
    FB_CHECK(buffers[0] == Frames(12, 0.0f));
    FB_CHECK(step({1, 2}) == (Frames{0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 2}));
    FB_CHECK(step({1, 2}) == (Frames{0, 0, 1, 1, 2, 1, 0, 0, 1, 2, 2, 2}));
    const Frames ended = step({1, 3});  // env 1 terminates
    FB_CHECK(terminated[1] == 1);
    const Frames last1 = {1, 2, 2, 2, 3, 3};
    if (mode == AutoresetMode::kNextStep) {
      FB_CHECK(ended == (Frames{1, 1, 2, 1, 3, 1, 1, 2, 2, 2, 3, 3}));
      FB_CHECK(step({1, 1}) == (Frames{2, 1, 3, 1, 4, 1, 0, 0, 0, 0, 0, 0}));  // autoreset
    } else {
      FB_CHECK(ended == (Frames{1, 1, 2, 1, 3, 1, 0, 0, 0, 0, 0, 0}));  // the new episode's
      const auto* final = reinterpret_cast<const float*>(pool.final_obs()) + 6;
      FB_CHECK(Frames(final, final + 6) == last1);
      FB_CHECK(step({1, 1}) == (Frames{2, 1, 3, 1, 4, 1, 0, 0, 0, 0, 1, 1}));
    }
    const Frames before = buffers[call % 2];
    const std::vector<uint8_t> mask = {1, 0};
    Frames& out = buffers[++call % 2];
    pool.Reset(mask.data(), out.data(), before.data());
    FB_CHECK(Frames(out.begin(), out.begin() + 6) == Frames(6, 0.0f));
    FB_CHECK(Frames(out.begin() + 6, out.end()) == Frames(before.begin() + 6, before.end()));
    const float steps1 = mode == AutoresetMode::kNextStep ? 1.0f : 2.0f;  // env 1's, after it
    const Frames shifted = {before[8], before[9], before[10], before[11], steps1, 2};
    const Frames& next = step({2, 2});
    FB_CHECK(Frames(next.begin(), next.begin() + 6) == (Frames{0, 0, 0, 0, 1, 2}));
    FB_CHECK(Frames(next.begin() + 6, next.end()) == shifted);
  }
  PoolConfig config;
  config.params = {0.0, 0.0, 0.0};
  config.frame_stack = 0;
  FB_CHECK_THROWS(VectorPool(EnvApi<envs::TestCounter>(), config), std::invalid_argument);
}

// Send queues a run of envs ring by ring from FirstHomedOn, not env by env through HomeRing:
// both must draw the same blocks.
FB_TEST(AsyncHomeBlocksStartWhereHomeRingChanges) {
  for (int64_t n = 1; n <= 70; ++n) {
    for (int rings = 1; rings <= 9; ++rings) {
      FB_CHECK_EQ(FirstHomedOn(0, rings, n), int64_t{0});
      FB_CHECK_EQ(FirstHomedOn(rings, rings, n), n);
      for (int64_t env = 0; env < n; ++env) {
        const int r = HomeRing(env, rings, n);
        FB_CHECK_MSG(r >= 0 && r < rings && FirstHomedOn(r, rings, n) <= env &&
                         env < FirstHomedOn(r + 1, rings, n),
                     "env " + std::to_string(env) + " of " + std::to_string(n) + ", " +
                         std::to_string(rings) + " rings");
      }
    }
  }
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()

// The per-env random states a pool hands each table (core/env_seeds.h): the fb_rng layout of the
// table's ABI version (40-byte states with PCG64's 32-bit buffer from version 5, 32-byte ones
// before), seeded as numpy seeds PCG64; and VectorPool::SetState over the optional set_state
// entry (ABI version 5).
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "check.h"
#include "core/env_seeds.h"
#include "core/vector_pool.h"
#include "envs/cartpole.h"
#include "envs/test_envs.h"
#include "fastbatch/env.h"

namespace fastbatch {
namespace {

// numpy: np.random.PCG64(seed).state for seeds 5, 6, 7 as {state low, state high, inc low,
// inc high}.
constexpr uint64_t kPcg64Words[3][4] = {
    {0xd973b921e554efeeull, 0xe500c1d129ce9183ull, 0x4f020b7b2d10234dull, 0xaf6f7b8c936ab4a4ull},
    {0x0221da5fecc3221cull, 0xf9e9d9de00cec02cull, 0xc94be043bd69356bull, 0x2422da21591a8d02ull},
    {0x9ae2415a6b292038ull, 0x9d0aecc4e7b18891ull, 0x66887f5ac070d959ull, 0xc4751896ce8acebfull}};

// Version 5: fb_rng as abi.h declares it, the buffer empty after seeding.
FB_TEST(Version5StatesCarryTheBuffer) {
  EnvSeeds seeds(3, 5);
  for (int64_t i = 0; i < 3; ++i) seeds.Seed(i, 5 + static_cast<uint64_t>(i));
  for (int64_t i = 0; i < 3; ++i) {
    const fb_rng& state = seeds.states()[i];
    for (int k = 0; k < 4; ++k) FB_CHECK_EQ(state.s[k], kPcg64Words[i][k]);
    FB_CHECK_EQ(state.has_uint32, 0u);
  }
  Rng(&seeds.states()[1]).Integers(7);  // leaves a half in the buffer
  FB_CHECK_EQ(seeds.states()[1].has_uint32, 1u);
  seeds.Seed(1, 6);
  FB_CHECK_EQ(seeds.states()[1].has_uint32, 0u);
}

// Versions 1-4: 32-byte states, one after another (PCG64 words for version 4).
FB_TEST(OlderTablesGetThirtyTwoByteStates) {
  EnvSeeds seeds(3, 4);
  for (int64_t i = 0; i < 3; ++i) seeds.Seed(i, 5 + static_cast<uint64_t>(i));
  const auto* bytes = reinterpret_cast<const unsigned char*>(seeds.states());
  for (int64_t i = 0; i < 3; ++i) {
    uint64_t words[4];
    std::memcpy(words, bytes + 32 * i, sizeof(words));
    for (int k = 0; k < 4; ++k) FB_CHECK_EQ(words[k], kPcg64Words[i][k]);
  }
}

// A table of ABI version 4 (the current adapter's, cut to version 4's size) whose reset writes
// the 32 bytes of each env's state, read with version 4's layout, as its uint8 observation.
class StateBytes {
 public:
  using ObsType = uint8_t;
  using ActionType = int64_t;
  static Spec MakeSpec() {
    return Spec("_StateBytes-v0").Observation(Box({32}, 0.0, 255.0)).Action(Discrete(1));
  }
  explicit StateBytes(const Params&) {}
  void Reset(Rng&, uint8_t*) {}
  StepResult Step(int64_t, uint8_t*) { return {0.0, false}; }
};

int32_t ResetAsVersion4(void*, int64_t begin, int64_t end, const fb_batch* batch, fb_error*) {
  const auto* states = reinterpret_cast<const unsigned char*>(batch->rngs);
  for (int64_t i = begin; i < end; ++i) {
    std::memcpy(static_cast<uint8_t*>(batch->obs) + 32 * i, states + 32 * i, 32);
  }
  return 0;
}

const fb_env_api* Version4Api() {
  static fb_env_api api = [] {
    fb_env_api table = *EnvApi<StateBytes>();
    table.abi_version = 4;
    table.struct_size = offsetof(fb_env_api, set_state);
    table.reset = &ResetAsVersion4;
    return table;
  }();
  return &api;
}

FB_TEST(APoolHandsAVersion4TableItsLayout) {
  PoolConfig config;
  config.num_envs = 3;
  VectorPool pool(Version4Api(), config);
  for (int64_t i = 0; i < 3; ++i) pool.Seed(i, 5 + static_cast<uint64_t>(i));
  std::vector<uint8_t> obs(3 * 32);
  pool.Reset(nullptr, obs.data(), nullptr);
  for (int64_t i = 0; i < 3; ++i) {
    uint64_t words[4];
    std::memcpy(words, obs.data() + 32 * i, sizeof(words));
    for (int k = 0; k < 4; ++k) FB_CHECK_EQ(words[k], kPcg64Words[i][k]);
  }
  FB_CHECK(!pool.can_set_state());  // version 4 has no set_state
}

PoolConfig TwoEnvs() {
  PoolConfig config;
  config.num_envs = 2;
  config.params = {0.0};  // CartPole's sutton_barto_reward; TestCounter takes three
  return config;
}

FB_TEST(SetStateReplacesOneEnvsStateAndRefusesAWrongSize) {
  VectorPool pool(EnvApi<envs::CartPole>(), TwoEnvs());
  std::vector<float> obs(2 * 4);
  pool.Reset(nullptr, obs.data(), nullptr);
  double before[4];
  pool.GetState(0, before, 4);
  FB_CHECK(pool.can_set_state());
  const double state[4] = {0.5, -1.0, 0.125, 2.0};
  pool.SetState(1, state, 4);
  double after[4];
  FB_CHECK_EQ(pool.GetState(1, after, 4), 4);
  for (int k = 0; k < 4; ++k) FB_CHECK_EQ(after[k], state[k]);
  pool.GetState(0, after, 4);
  for (int k = 0; k < 4; ++k) FB_CHECK_EQ(after[k], before[k]);  // env 0 untouched
  FB_CHECK_THROWS(pool.SetState(1, state, 3), std::invalid_argument);
  // The next step starts from the state set: x + tau * x_dot.
  std::vector<float> reward(2);
  std::vector<uint8_t> terminated(2), truncated(2);
  const int64_t actions[2] = {1, 1};
  pool.Step(actions, BatchOut{obs.data(), reward.data(), terminated.data(), truncated.data()});
  FB_CHECK_EQ(obs[4], static_cast<float>(0.5 + 0.02 * -1.0));
}

FB_TEST(AnEnvWithoutSetStateHasNoEntry) {
  PoolConfig config = TwoEnvs();
  config.params = {0.0, 0.0, 0.0};
  VectorPool pool(EnvApi<envs::TestCounter>(), config);
  FB_CHECK(EnvApi<envs::TestCounter>()->set_state == nullptr);
  FB_CHECK(!pool.can_set_state());
  const double state[2] = {0.0, 0.0};
  FB_CHECK_THROWS(pool.SetState(0, state, 2), std::logic_error);
}

}  // namespace
}  // namespace fastbatch

FB_TEST_MAIN()

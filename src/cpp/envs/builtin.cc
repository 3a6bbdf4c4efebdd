#include "builtin.h"

#include "acrobot.h"
#include "cartpole.h"
#include "fastbatch/env.h"
#include "mountain_car.h"
#include "no_velocity.h"
#include "pendulum.h"
#include "spread.h"
#include "test_envs.h"

namespace fastbatch::envs {

const std::vector<const fb_env_api*>& BuiltinEnvs() {
  static const std::vector<const fb_env_api*> envs = {
      EnvApi<CartPole>(),         EnvApi<Pendulum>(),
      EnvApi<MountainCar>(),      EnvApi<MountainCarContinuous>(),
      EnvApi<Acrobot>(),          EnvApi<TestCounter>(),
      EnvApi<CartPoleNoVel>(),    EnvApi<PendulumNoVel>(),
      EnvApi<TestVariableCost>(), EnvApi<TestImage>(),
      EnvApi<Spread>(),           EnvApi<TestAgents>(),
  };
  return envs;
}

}  // namespace fastbatch::envs

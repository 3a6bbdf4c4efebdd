// fastbatch's built-in CartPole-v1, exported as a plugin (see CMakeLists.txt beside this file).
#include "envs/cartpole.h"

FASTBATCH_EXPORT_ENV(fastbatch::envs::CartPole)

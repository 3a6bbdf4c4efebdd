// The env types compiled into fastbatch. They reach the pool through the same fb_env_api table
// as out-of-tree plugins.
#ifndef FASTBATCH_ENVS_BUILTIN_H_
#define FASTBATCH_ENVS_BUILTIN_H_

#include <utility>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch::envs {

// (api) of every built-in env, in a stable order. Ids starting with '_' are test envs.
const std::vector<const fb_env_api*>& BuiltinEnvs();

}  // namespace fastbatch::envs

#endif  // FASTBATCH_ENVS_BUILTIN_H_

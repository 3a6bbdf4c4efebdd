#include "plugin_loader.h"

#include <dlfcn.h>

#include <cstddef>
#include <set>

#include "dtype.h"

namespace fastbatch {
namespace {

// Table size up to and including `step`, the last required member of version 1.
constexpr size_t kRequiredApiSize = offsetof(fb_env_api, step) + sizeof(fb_env_api::step);

void CheckBox(const fb_space& s, const std::string& what, const std::string& origin, bool action) {
  if (!IsKnownDType(s.dtype)) {
    throw PluginError(origin + ": " + what + " has an unsupported dtype (unknown dtype code " +
                      std::to_string(s.dtype) +
                      "); expected float32, float64, int32, int64 or uint8");
  }
  if (action && s.dtype != FB_FLOAT32 && s.dtype != FB_FLOAT64) {
    throw PluginError(origin + ": a Box action space must be float32 or float64, got " +
                      DTypeName(s.dtype));
  }
  if (s.ndim < 1 || s.ndim > FASTBATCH_MAX_NDIM) {
    throw PluginError(origin + ": " + what + " must have 1 to " +
                      std::to_string(FASTBATCH_MAX_NDIM) + " dimensions, got " +
                      std::to_string(s.ndim) + (s.ndim == 0 ? " (an empty shape)" : ""));
  }
  for (int32_t d = 0; d < s.ndim; ++d) {
    if (s.shape[d] <= 0) {
      throw PluginError(origin + ": " + what + " has a non-positive dimension " +
                        std::to_string(s.shape[d]));
    }
  }
  if (s.low == nullptr || s.high == nullptr) {
    throw PluginError(origin + ": " + what + " has no low/high bounds");
  }
}

}  // namespace

void ValidateApi(const fb_env_api* api, const std::string& origin) {
  if (api == nullptr) throw PluginError(origin + ": the entry point returned no table (NULL)");
  if (api->abi_version != FASTBATCH_ABI_VERSION) {
    throw PluginError(origin + ": built for fastbatch ABI version " +
                      std::to_string(api->abi_version) + ", but this fastbatch speaks version " +
                      std::to_string(FASTBATCH_ABI_VERSION) +
                      "; rebuild the plugin against this fastbatch's headers");
  }
  if (api->struct_size < kRequiredApiSize) {
    throw PluginError(origin + ": its table is " + std::to_string(api->struct_size) +
                      " bytes, smaller than ABI version 1 requires (" +
                      std::to_string(kRequiredApiSize) + ")");
  }
  if (api->spec == nullptr || api->create == nullptr || api->destroy == nullptr ||
      api->reset == nullptr || api->step == nullptr) {
    throw PluginError(origin + ": its table is missing a required function");
  }
  const fb_spec* spec = api->spec();
  if (spec == nullptr || spec->id == nullptr || spec->id[0] == '\0') {
    throw PluginError(origin + ": its spec has no id");
  }
  if (spec->observation.is_discrete) {
    throw PluginError(origin + ": the observation space must be a Box");
  }
  CheckBox(spec->observation, "the observation space", origin, false);
  if (spec->action.is_discrete) {
    if (spec->action.n <= 0) {
      throw PluginError(origin + ": Discrete(n) actions need n > 0, got " +
                        std::to_string(spec->action.n));
    }
  } else {
    CheckBox(spec->action, "the action space", origin, true);
  }
  if (spec->max_episode_steps < 0) throw PluginError(origin + ": max_episode_steps is negative");
  if (spec->num_params < 0 || (spec->num_params > 0 && spec->params == nullptr)) {
    throw PluginError(origin + ": its spec declares params but gives none");
  }
  std::set<std::string> names;
  for (int32_t i = 0; i < spec->num_params; ++i) {
    const char* name = spec->params[i].name;
    if (name == nullptr || name[0] == '\0' || !names.insert(name).second) {
      throw PluginError(origin + ": param " + std::to_string(i) + " has an empty or repeated name");
    }
  }
}

const fb_env_api* LoadPluginLibrary(const std::string& path, const std::string& symbol) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw PluginError("cannot load plugin library " + path + ": " + (why ? why : "unknown error"));
  }
  dlerror();
  void* entry = dlsym(handle, symbol.c_str());
  if (entry == nullptr) {
    throw PluginError("plugin library " + path + " does not export '" + symbol +
                      "' (an env class is exported with FASTBATCH_EXPORT_ENV(YourEnv))");
  }
  const fb_env_api* api = reinterpret_cast<fb_get_env_api_fn>(entry)();
  ValidateApi(api, "plugin " + path);
  return api;
}

}  // namespace fastbatch

#include "plugin_loader.h"

#include <dlfcn.h>

#include <cmath>
#include <cstddef>
#include <set>

#include "dtype.h"

namespace fastbatch {
namespace {

// Table size up to and including `step`, the last required member of version 1; and the size
// of a version-2 table (whose appended members may then be read).
constexpr size_t kRequiredApiSize = offsetof(fb_env_api, step) + sizeof(fb_env_api::step);
constexpr size_t kV2ApiSize = offsetof(fb_env_api, spec_error) + sizeof(fb_env_api::spec_error);

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

bool HasV2Fields(const fb_env_api* api) {
  return api->abi_version >= 2 && api->struct_size >= kV2ApiSize;
}

SetStateFn SetStateOf(const fb_env_api* api) {
  constexpr size_t kV5ApiSize = offsetof(fb_env_api, set_state) + sizeof(fb_env_api::set_state);
  return api->abi_version >= 5 && api->struct_size >= kV5ApiSize ? api->set_state : nullptr;
}

RenderFn RenderOf(const fb_env_api* api) {
  constexpr size_t kV7ApiSize = offsetof(fb_env_api, render) + sizeof(fb_env_api::render);
  return api->abi_version >= 7 && api->struct_size >= kV7ApiSize ? api->render : nullptr;
}

FrameSize FrameOf(const fb_spec* spec, uint32_t abi_version) {
  if (abi_version < 7 || spec->render_height <= 0 || spec->render_width <= 0) return {};
  return {spec->render_height, spec->render_width, spec->render_fps};
}

size_t SpecBytes(uint32_t abi_version) {
  if (abi_version >= 7) return sizeof(fb_spec);
  if (abi_version >= 6) return offsetof(fb_spec, render_height);
  if (abi_version >= 3) return offsetof(fb_spec, num_agents);
  if (abi_version >= 2) return offsetof(fb_spec, num_infos);
  return offsetof(fb_spec, param_info);
}

int64_t InfoRowSize(const fb_spec* spec, uint32_t abi_version) {
  if (abi_version < 3) return 0;
  int64_t row = 0;
  for (int32_t k = 0; k < spec->num_infos; ++k) row += spec->info_sizes[k];
  return row;
}

void ValidateSpec(const fb_spec* spec, uint32_t abi_version, const std::string& where) {
  if (spec == nullptr || spec->id == nullptr || spec->id[0] == '\0') {
    throw PluginError(where + ": its spec has no id");
  }
  const std::string origin = where + ": env " + spec->id;  // every message names the env
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
    if (abi_version < 2 || spec->param_info == nullptr) continue;
    const fb_param_info& info = spec->param_info[i];
    const std::string what = origin + ": param '" + name + "'";
    if (info.kind < FB_PARAM_FLOAT || info.kind > FB_PARAM_CHOICE) {
      throw PluginError(what + " has an unknown kind " + std::to_string(info.kind));
    }
    if (info.kind == FB_PARAM_CHOICE && (info.num_choices <= 0 || info.choices == nullptr ||
                                         info.high != static_cast<double>(info.num_choices - 1))) {
      throw PluginError(what + " declares no choices");
    }
    if (!(info.low <= spec->params[i].default_value &&
          spec->params[i].default_value <= info.high)) {
      throw PluginError(what + " has a default outside its range");
    }
  }
  if (abi_version < 3) return;
  if (spec->num_infos < 0 ||
      (spec->num_infos > 0 && (spec->info_names == nullptr || spec->info_sizes == nullptr))) {
    throw PluginError(origin + ": its spec declares infos but gives none");
  }
  std::set<std::string> infos;
  for (int32_t k = 0; k < spec->num_infos; ++k) {
    const char* name = spec->info_names[k];
    if (name == nullptr || name[0] == '\0' || name[0] == '_' || !infos.insert(name).second) {
      throw PluginError(origin + ": info " + std::to_string(k) +
                        " has an empty, repeated or '_'-prefixed name");
    }
    if (spec->info_sizes[k] < 1) {
      throw PluginError(origin + ": info '" + name + "' has a size below 1");
    }
  }
  if (abi_version < 6) return;
  if (spec->num_agents < 0 || spec->num_agents > FASTBATCH_MAX_AGENTS) {
    throw PluginError(origin + ": num_agents must be 0 to " + std::to_string(FASTBATCH_MAX_AGENTS) +
                      ", got " + std::to_string(spec->num_agents));
  }
  if (spec->num_agents > 1 && spec->num_infos > 0) {
    throw PluginError(origin + ": a multi-agent env cannot declare infos yet");
  }
  if (abi_version < 7) return;
  const bool none = spec->render_height == 0 && spec->render_width == 0;
  const bool sized = spec->render_height > 0 && spec->render_width > 0 &&
                     spec->render_height <= FASTBATCH_MAX_FRAME_SIDE &&
                     spec->render_width <= FASTBATCH_MAX_FRAME_SIDE;
  if (!(none || sized) || !(spec->render_fps >= 0.0) || std::isinf(spec->render_fps)) {
    throw PluginError(origin + ": its frame must be 0 x 0 (none) or 1 to " +
                      std::to_string(FASTBATCH_MAX_FRAME_SIDE) + " pixels a side at " +
                      "a finite fps >= 0, got " + std::to_string(spec->render_height) + " x " +
                      std::to_string(spec->render_width) + " at " +
                      std::to_string(spec->render_fps));
  }
}

int64_t NumAgents(const fb_spec* spec, uint32_t abi_version) {
  return abi_version >= 6 && spec->num_agents > 1 ? spec->num_agents : 1;
}

void ValidateApi(const fb_env_api* api, const std::string& origin) {
  if (api == nullptr) throw PluginError(origin + ": the entry point returned no table (NULL)");
  if (api->abi_version < FASTBATCH_ABI_MIN_VERSION || api->abi_version > FASTBATCH_ABI_VERSION) {
    throw PluginError(origin + ": built for fastbatch ABI version " +
                      std::to_string(api->abi_version) + ", but this fastbatch speaks versions " +
                      std::to_string(FASTBATCH_ABI_MIN_VERSION) + " to " +
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
  if (spec == nullptr) {
    const char* why = HasV2Fields(api) && api->spec_error != nullptr ? api->spec_error() : nullptr;
    throw PluginError(origin + ": its spec could not be built: " +
                      (why != nullptr && why[0] != '\0' ? why : "no reason given"));
  }
  ValidateSpec(spec, HasV2Fields(api) ? api->abi_version : 1, origin);
  ValidateFrame(api, spec, origin);
}

void ValidateFrame(const fb_env_api* api, const fb_spec* spec, const std::string& origin) {
  const bool draws = FrameOf(spec, api->abi_version).height > 0;
  if (api->abi_version >= 7 && draws != (RenderOf(api) != nullptr)) {
    throw PluginError(origin + ": env " + spec->id +
                      (draws ? ": its spec declares a frame but its table has no render"
                             : ": its table has render but its spec declares no frame"));
  }
}

std::vector<const fb_env_api*> LoadPluginLibrary(const std::string& path,
                                                 const std::string& symbol) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw PluginError("cannot load plugin library " + path + ": " + (why ? why : "unknown error"));
  }
  std::vector<const fb_env_api*> apis;
  void* many = symbol.empty() ? dlsym(handle, FASTBATCH_ENTRIES_SYMBOL) : nullptr;
  if (many != nullptr) {
    int32_t count = 0;
    const fb_env_api* const* tables = reinterpret_cast<fb_get_env_apis_fn>(many)(&count);
    if (tables == nullptr || count <= 0) {
      throw PluginError("plugin library " + path +
                        ": '" FASTBATCH_ENTRIES_SYMBOL "' returned no env");
    }
    apis.assign(tables, tables + count);
  } else {
    const std::string name = symbol.empty() ? FASTBATCH_ENTRY_SYMBOL : symbol;
    dlerror();
    void* entry = dlsym(handle, name.c_str());
    if (entry == nullptr) {
      throw PluginError("plugin library " + path + " does not export '" + name +
                        "' (env classes are exported with FASTBATCH_EXPORT_ENVS(YourEnv, ...))");
    }
    apis.push_back(reinterpret_cast<fb_get_env_api_fn>(entry)());
  }
  for (const fb_env_api* api : apis) ValidateApi(api, "plugin " + path);
  return apis;
}

}  // namespace fastbatch

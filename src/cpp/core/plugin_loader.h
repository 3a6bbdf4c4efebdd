// Loading and checking env implementations that come from outside fastbatch: a shared library
// exporting FASTBATCH_ENTRIES_SYMBOL (several envs) or FASTBATCH_ENTRY_SYMBOL (one), or a table
// pointer handed over in a capsule. Tables of ABI versions FASTBATCH_ABI_MIN_VERSION to
// FASTBATCH_ABI_VERSION are accepted (see abi.h, "Versions").
//
// Libraries are opened with RTLD_NOW | RTLD_LOCAL and never closed: an env type may be in use
// until the process ends, and unloading code that live objects point into is not safe.
// Threading: called with the GIL held, one thread at a time.
#ifndef FASTBATCH_CORE_PLUGIN_LOADER_H_
#define FASTBATCH_CORE_PLUGIN_LOADER_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

// A plugin could not be loaded or its table or spec break the ABI contract.
class PluginError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Opens `path` and returns its tables, each checked by ValidateApi: every env the library
// exports (FASTBATCH_ENTRIES_SYMBOL, else FASTBATCH_ENTRY_SYMBOL), or the one table `symbol`
// returns when `symbol` is not empty. Throws PluginError.
std::vector<const fb_env_api*> LoadPluginLibrary(const std::string& path,
                                                 const std::string& symbol);

// Checks the ABI version, the table's size and functions, and its default spec (which declares
// a frame exactly when the table has render). `origin` names
// the source in error messages. Throws PluginError.
void ValidateApi(const fb_env_api* api, const std::string& origin);

// Checks one spec (spaces, dtypes, shapes, params; param kinds and ranges from version 2 on;
// infos from version 3 on; agents from 6 on; the frame from 7 on)
// of a table of ABI version `abi_version`. Throws PluginError, its message `origin: env <id>: ...`.
void ValidateSpec(const fb_spec* spec, uint32_t abi_version, const std::string& origin);

// Checks that `spec` (the default spec or a block's) declares a frame exactly when `api` has
// render (ABI version 7; nothing to check before). Throws PluginError.
void ValidateFrame(const fb_env_api* api, const fb_spec* spec, const std::string& origin);

// True when a field appended in ABI version 2 may be read from `api`.
bool HasV2Fields(const fb_env_api* api);
// The table's set_state (ABI version 5), or NULL when it has none or predates it.
using SetStateFn = int32_t (*)(void*, int64_t, const double*, int64_t, fb_error*);
SetStateFn SetStateOf(const fb_env_api* api);

// The table's render (ABI version 7), or NULL when it has none or predates it.
using RenderFn = int32_t (*)(void*, int64_t, uint8_t*, fb_error*);
RenderFn RenderOf(const fb_env_api* api);

// The RGB frame a spec declares (ABI version 7): height x width x 3 bytes; {0, 0, 0} when it
// declares none or its table is older.
struct FrameSize {
  int64_t height = 0;
  int64_t width = 0;
  double fps = 0.0;
  int64_t bytes() const { return height * width * 3; }
};
FrameSize FrameOf(const fb_spec* spec, uint32_t abi_version);

// The bytes of an `fb_spec` as a table of ABI version `abi_version` lays it out (a prefix of
// today's struct): what may be copied from its specs.
size_t SpecBytes(uint32_t abi_version);

// Doubles in one env's info row of `spec` (ABI version 3; 0 for older tables or no infos).
int64_t InfoRowSize(const fb_spec* spec, uint32_t abi_version);

// Agents per env of `spec` (ABI version 6; 1 for older tables and single-agent envs).
int64_t NumAgents(const fb_spec* spec, uint32_t abi_version);

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_PLUGIN_LOADER_H_

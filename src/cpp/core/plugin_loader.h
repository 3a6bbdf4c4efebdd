// Loading and checking env implementations that come from outside fastbatch: a shared library
// exporting FASTBATCH_ENTRY_SYMBOL, or a table pointer handed over in a capsule.
//
// Libraries are opened with RTLD_NOW | RTLD_LOCAL and never closed: an env type may be in use
// until the process ends, and unloading code that live objects point into is not safe.
#ifndef FASTBATCH_CORE_PLUGIN_LOADER_H_
#define FASTBATCH_CORE_PLUGIN_LOADER_H_

#include <stdexcept>
#include <string>

#include "fastbatch/abi.h"

namespace fastbatch {

// A plugin could not be loaded or its table or spec break the ABI contract.
class PluginError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Opens `path` and returns the table its `symbol` (default FASTBATCH_ENTRY_SYMBOL) gives,
// after ValidateApi. Throws PluginError.
const fb_env_api* LoadPluginLibrary(const std::string& path, const std::string& symbol);

// Checks the ABI version, the table's size and functions, and the spec (spaces, dtypes,
// shapes, params). `origin` names the source in error messages. Throws PluginError.
void ValidateApi(const fb_env_api* api, const std::string& origin);

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_PLUGIN_LOADER_H_

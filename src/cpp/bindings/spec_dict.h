// An env type as the extension hands it to Python (`_EnvType`), and its fb_spec as a Python
// dict: the one conversion from ABI dtype codes and spaces to numpy dtypes, shapes and bounds.
//
// Threading: every function here touches Python objects, so it is called with the GIL held.
// Ownership: an EnvType does not own its table; `keep_alive` holds whatever keeps the table's
// code loaded (a capsule), or None for built-in and plugin-library tables, which live for the
// process. The returned dicts and arrays are fresh copies owned by the caller.
#ifndef FASTBATCH_BINDINGS_SPEC_DICT_H_
#define FASTBATCH_BINDINGS_SPEC_DICT_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

namespace py = pybind11;

// The numpy dtype of an fb_dtype code (by its name in core/dtype.h). Throws
// std::invalid_argument for an unknown code.
py::dtype NumpyDType(int32_t code);

// A Box space's shape, and its element count (the product of the shape; 1 for Discrete).
std::vector<py::ssize_t> SpaceShape(const fb_space& space);
int64_t SpaceSize(const fb_space& space);

// {"kind": "discrete", "n"} or {"kind": "box", "dtype", "shape", "low", "high"}.
py::dict SpaceDict(const fb_space& space);

// {"id", "observation", "action", "max_episode_steps", "reward_threshold" (None when unset),
//  "params": {name: {"default", "kind" ("float", "int", "bool", "choice"), "low", "high",
//  "choices"}}, "infos": {name: size}, "num_agents", "render" ((height, width, fps) of the RGB
// frame the env draws, or None)}. `abi_version`: the version of the table the spec comes from
// (param kinds are read from version 2 on, infos from version 3 on, agents from version 6 on: 1
// before, the frame from version 7 on: None before).
py::dict SpecDict(const fb_spec& spec, uint32_t abi_version);

// An env type: its ABI table, plus whatever keeps the implementation loaded.
struct EnvType {
  const fb_env_api* api;
  py::object keep_alive;

  py::dict Spec() const;  // the default params' spec
  std::string Id() const { return api->spec()->id; }
  uint32_t AbiVersion() const { return api->abi_version; }
};

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_SPEC_DICT_H_

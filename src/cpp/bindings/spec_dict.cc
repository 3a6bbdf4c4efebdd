#include "bindings/spec_dict.h"

#include <pybind11/stl.h>

#include <cmath>
#include <stdexcept>

#include "core/dtype.h"
#include "core/plugin_loader.h"

namespace fastbatch {

py::dtype NumpyDType(int32_t code) {
  const char* name = DTypeName(code);
  if (name == nullptr) {
    throw std::invalid_argument("unsupported dtype code " + std::to_string(code));
  }
  return py::dtype(name);
}

std::vector<py::ssize_t> SpaceShape(const fb_space& space) {
  std::vector<py::ssize_t> shape;
  for (int32_t d = 0; d < space.ndim; ++d)
    shape.push_back(static_cast<py::ssize_t>(space.shape[d]));
  return shape;
}

int64_t SpaceSize(const fb_space& space) {
  int64_t n = 1;
  for (int32_t d = 0; d < space.ndim; ++d) n *= space.shape[d];
  return n;
}

py::dict SpaceDict(const fb_space& space) {
  py::dict d;
  if (space.is_discrete) {
    d["kind"] = "discrete";
    d["n"] = space.n;
    return d;
  }
  d["kind"] = "box";
  d["dtype"] = NumpyDType(space.dtype);
  d["shape"] = py::tuple(py::cast(SpaceShape(space)));
  const int64_t n = SpaceSize(space);
  d["low"] = py::array_t<double>(n, space.low);
  d["high"] = py::array_t<double>(n, space.high);
  return d;
}

py::dict EnvType::Spec() const {
  return SpecDict(*api->spec(), HasV2Fields(api) ? api->abi_version : 1);
}

py::dict SpecDict(const fb_spec& spec, uint32_t abi_version) {
  const bool v2 = abi_version >= 2;
  static const char* const kKinds[] = {"float", "int", "bool", "choice"};
  py::dict d;
  d["id"] = spec.id;
  d["observation"] = SpaceDict(spec.observation);
  d["action"] = SpaceDict(spec.action);
  d["max_episode_steps"] = spec.max_episode_steps;
  d["reward_threshold"] = spec.has_reward_threshold ? py::cast(spec.reward_threshold) : py::none();
  py::dict params;
  for (int32_t i = 0; i < spec.num_params; ++i) {
    const bool typed = v2 && spec.param_info != nullptr;
    const fb_param_info info =
        typed ? spec.param_info[i] : fb_param_info{FB_PARAM_FLOAT, -INFINITY, INFINITY, 0, nullptr};
    py::dict p;
    p["default"] = spec.params[i].default_value;
    p["kind"] = kKinds[info.kind];
    p["low"] = info.low;
    p["high"] = info.high;
    py::list choices;
    for (int32_t k = 0; k < info.num_choices; ++k) choices.append(info.choices[k]);
    p["choices"] = choices;
    params[spec.params[i].name] = p;
  }
  d["params"] = params;
  py::dict infos;
  for (int32_t k = 0; abi_version >= 3 && k < spec.num_infos; ++k) {
    infos[spec.info_names[k]] = spec.info_sizes[k];
  }
  d["infos"] = infos;
  d["num_agents"] = abi_version >= 6 && spec.num_agents > 1 ? spec.num_agents : 1;
  const FrameSize frame = FrameOf(&spec, abi_version);
  if (frame.height > 0) {
    d["render"] = py::make_tuple(frame.height, frame.width, frame.fps);
  } else {
    d["render"] = py::none();
  }
  return d;
}

}  // namespace fastbatch

// An env's description as its author writes it (public, header-only; included by env.h):
// spaces (`Box`, `Discrete`), typed constructor params (`ParamList`), the `Spec` builder, and
// `Params`, the values an env is constructed with.
//
// Ownership: a Spec owns everything it declares; `View()` returns a C view (abi.h) that points
// into the Spec and stays valid while the Spec lives unchanged. A Params refers to a ParamList
// and a value array owned by the caller (the adapter), valid for the call that receives it.
//
// Errors: a declaration that cannot be right (bounds that do not match the shape, a default
// outside its range, a repeated param name, a choice default that is not a choice) throws
// std::invalid_argument naming the field when the spec is built; the ABI adapter turns that into
// an error fastbatch reports at registration, before any env exists.
#ifndef FASTBATCH_SPEC_H_
#define FASTBATCH_SPEC_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A Box declared without an element type takes the env's ObsType / ActionType (see env.h).
inline constexpr int32_t kDTypeFromEnv = -1;

// The element types of the ABI: byte size and numpy name. The one place that maps an fb_dtype
// code to anything (the pool, the loader's checks and the bindings read it too).
struct DTypeInfo {
  int64_t size;      // bytes per element; 0 for an unknown code
  const char* name;  // numpy's name ("float32", ...); nullptr for an unknown code
};

constexpr DTypeInfo LookupDType(int32_t code) {
  switch (code) {
    case FB_FLOAT32: return {4, "float32"};
    case FB_FLOAT64: return {8, "float64"};
    case FB_INT32: return {4, "int32"};
    case FB_INT64: return {8, "int64"};
    case FB_UINT8: return {1, "uint8"};
    default: return {0, nullptr};
  }
}

constexpr bool IsKnownDType(int32_t code) { return LookupDType(code).name != nullptr; }
constexpr int64_t DTypeSize(int32_t code) { return LookupDType(code).size; }
constexpr const char* DTypeName(int32_t code) { return LookupDType(code).name; }

template <typename T>
constexpr fb_dtype DTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return FB_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return FB_FLOAT64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return FB_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return FB_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return FB_UINT8;
  else
    static_assert(sizeof(T) == 0, "element types are float, double, int32_t, int64_t, uint8_t");
}

// A space as the author declares it: Box(...) or Discrete(n).
struct Space {
  bool is_discrete = false;
  int32_t dtype = kDTypeFromEnv;  // an fb_dtype code, or kDTypeFromEnv
  std::vector<int64_t> shape;
  int64_t n = 0;
  std::vector<double> low, high;  // prod(shape) values each, row-major
};

// Box with per-element bounds (row-major, prod(shape) values each); the element type is the
// env's ObsType or ActionType.
inline Space Box(std::vector<int64_t> shape, std::vector<double> low, std::vector<double> high) {
  Space s;
  s.shape = std::move(shape);
  s.low = std::move(low);
  s.high = std::move(high);
  return s;
}

// Box with the same bounds for every element.
inline Space Box(std::vector<int64_t> shape, double low, double high) {
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  const auto count = static_cast<size_t>(size < 0 ? 0 : size);
  return Box(std::move(shape), std::vector<double>(count, low), std::vector<double>(count, high));
}

// Version-1 spelling with an explicit element type: it must equal the env's ObsType/ActionType
// (checked when the spec is built). Prefer Box(...), which cannot disagree.
template <typename T>
Space Box(std::vector<int64_t> shape, std::vector<double> low, std::vector<double> high) {
  Space s = Box(std::move(shape), std::move(low), std::move(high));
  s.dtype = DTypeOf<T>();
  return s;
}
template <typename T>
Space Box(std::vector<int64_t> shape, double low, double high) {
  Space s = Box(std::move(shape), low, high);
  s.dtype = DTypeOf<T>();
  return s;
}

inline Space Discrete(int64_t n) {
  Space s;
  s.is_discrete = true;
  s.dtype = FB_INT64;
  s.n = n;
  return s;
}

// One declared constructor param.
struct ParamDecl {
  std::string name;
  double default_value = 0.0;
  fb_param_kind kind = FB_PARAM_FLOAT;
  double low = -kInf, high = kInf;   // FLOAT/INT, inclusive
  std::vector<std::string> choices;  // CHOICE
};

// Typed constructor params with defaults and accepted ranges. fastbatch checks every value a
// user passes to make() against them (TypeError/ValueError naming the param) before any env is
// created, so an env only ever sees values it declared acceptable.
class ParamList {
 public:
  ParamList& Float(std::string name, double default_value, double low = -kInf, double high = kInf) {
    return Add({std::move(name), default_value, FB_PARAM_FLOAT, low, high, {}});
  }
  ParamList& Int(std::string name, int64_t default_value,
                 int64_t low = std::numeric_limits<int64_t>::min(),
                 int64_t high = std::numeric_limits<int64_t>::max()) {
    const double lo = low == std::numeric_limits<int64_t>::min() ? -kInf : double(low);
    const double hi = high == std::numeric_limits<int64_t>::max() ? kInf : double(high);
    return Add({std::move(name), double(default_value), FB_PARAM_INT, lo, hi, {}});
  }
  ParamList& Bool(std::string name, bool default_value) {
    return Add({std::move(name), default_value ? 1.0 : 0.0, FB_PARAM_BOOL, 0.0, 1.0, {}});
  }
  ParamList& Choice(std::string name, std::vector<std::string> choices,
                    const std::string& default_value) {
    double index = -1.0;
    for (size_t k = 0; k < choices.size(); ++k) {
      if (choices[k] == default_value) index = double(k);
    }
    if (index < 0) {
      throw std::invalid_argument("param '" + name + "': the default '" + default_value +
                                  "' is not one of its choices");
    }
    const double high = double(choices.size()) - 1.0;
    return Add({std::move(name), index, FB_PARAM_CHOICE, 0.0, high, std::move(choices)});
  }

  const std::vector<ParamDecl>& decls() const { return decls_; }
  bool empty() const { return decls_.empty(); }
  // The index of `name`, or -1.
  int64_t Find(const std::string& name) const {
    for (size_t i = 0; i < decls_.size(); ++i) {
      if (decls_[i].name == name) return static_cast<int64_t>(i);
    }
    return -1;
  }

 private:
  ParamList& Add(ParamDecl decl) {
    if (decl.name.empty()) throw std::invalid_argument("a param needs a name");
    if (Find(decl.name) >= 0) {
      throw std::invalid_argument("param '" + decl.name + "' is declared twice");
    }
    if (!(decl.low <= decl.default_value && decl.default_value <= decl.high)) {
      throw std::invalid_argument("param '" + decl.name + "': the default is outside its range");
    }
    decls_.push_back(std::move(decl));
    return *this;
  }

  std::vector<ParamDecl> decls_;
};

// The values an env is constructed with, in declaration order, each checked against its
// declaration by fastbatch. Reading an undeclared param, or a param as another kind than it
// was declared, throws std::invalid_argument.
class Params {
 public:
  Params(const ParamList* list, const double* values) : list_(list), values_(values) {}

  double Get(const std::string& name) const { return values_[Index(name)]; }  // any kind
  double Float(const std::string& name) const { return values_[Index(name, FB_PARAM_FLOAT)]; }
  int64_t Int(const std::string& name) const {
    return static_cast<int64_t>(values_[Index(name, FB_PARAM_INT)]);
  }
  bool Bool(const std::string& name) const { return values_[Index(name, FB_PARAM_BOOL)] != 0.0; }
  const std::string& Choice(const std::string& name) const {
    const size_t i = Index(name, FB_PARAM_CHOICE);
    return list_->decls()[i].choices[static_cast<size_t>(values_[i])];
  }

 private:
  size_t Index(const std::string& name, int kind = -1) const {
    const int64_t i = list_->Find(name);
    if (i < 0) throw std::invalid_argument("env reads undeclared param '" + name + "'");
    if (kind >= 0 && list_->decls()[static_cast<size_t>(i)].kind != kind) {
      throw std::invalid_argument("env reads param '" + name + "' as another kind than declared");
    }
    return static_cast<size_t>(i);
  }

  const ParamList* list_;
  const double* values_;
};

// A named per-step info entry (ABI version 3): `size` float64 values in each env's info row.
struct InfoDecl {
  std::string name;
  int32_t size = 1;
};

// An env's description: id, spaces, time limit, reward threshold, params, infos, agents, frame.
class Spec {
 public:
  explicit Spec(std::string id) : id_(std::move(id)) {}
  Spec& Observation(Space s) {
    observation_ = std::move(s);
    return *this;
  }
  Spec& Action(Space s) {
    action_ = std::move(s);
    return *this;
  }
  // Truncation after `steps` steps, applied by the pool (0: none).
  Spec& MaxEpisodeSteps(int64_t steps) {
    max_episode_steps_ = steps;
    return *this;
  }
  Spec& RewardThreshold(double threshold) {
    has_reward_threshold_ = true;
    reward_threshold_ = threshold;
    return *this;
  }
  // Params (see ParamList). Param(name, default) is version 1's unbounded float param.
  Spec& Param(std::string name, double default_value) {
    return FloatParam(std::move(name), default_value);
  }
  Spec& FloatParam(std::string name, double default_value, double low = -kInf, double high = kInf) {
    params_.Float(std::move(name), default_value, low, high);
    return *this;
  }
  Spec& IntParam(std::string name, int64_t default_value,
                 int64_t low = std::numeric_limits<int64_t>::min(),
                 int64_t high = std::numeric_limits<int64_t>::max()) {
    params_.Int(std::move(name), default_value, low, high);
    return *this;
  }
  Spec& BoolParam(std::string name, bool default_value) {
    params_.Bool(std::move(name), default_value);
    return *this;
  }
  Spec& ChoiceParam(std::string name, std::vector<std::string> choices,
                    const std::string& default_value) {
    params_.Choice(std::move(name), std::move(choices), default_value);
    return *this;
  }
  // A numeric info entry the env writes with every reset and step: `size` float64 values (1: a
  // scalar) in its info row, after the entries declared before it. See env.h, "Infos".
  Spec& Info(std::string name, int32_t size = 1) {
    if (name.empty() || name[0] == '_') {
      throw std::invalid_argument(id_ + ": an info name must be non-empty and not start with '_'");
    }
    if (size < 1) throw std::invalid_argument(id_ + ": info '" + name + "' needs a size >= 1");
    for (const InfoDecl& d : infos_) {
      if (d.name == name)
        throw std::invalid_argument(id_ + ": info '" + name + "' is declared twice");
    }
    infos_.push_back({std::move(name), size});
    return *this;
  }
  // A multi-agent env (ABI version 6): `count` agents per env, each with the observation and
  // action spaces declared here (env.h, "Multi-agent envs"). 1: a single-agent env.
  Spec& Agents(int32_t count) {
    num_agents_ = count;
    return *this;
  }
  // The RGB frame the env draws (ABI version 7; env.h, "Rendering"): `height` x `width` x 3
  // uint8, meant to be shown at `fps` frames a second (0: unknown).
  Spec& Render(int32_t height, int32_t width, double fps = 0.0) {
    render_height_ = height;
    render_width_ = width;
    render_fps_ = fps;
    return *this;
  }
  // Replaces every declared param (the adapter installs an env's DeclareParams() this way).
  Spec& SetParams(ParamList list) {
    params_ = std::move(list);
    return *this;
  }

  const std::string& id() const { return id_; }
  int32_t num_agents() const { return num_agents_; }
  bool renders() const { return render_height_ != 0 || render_width_ != 0; }
  const ParamList& params() const { return params_; }
  const std::vector<InfoDecl>& infos() const { return infos_; }
  // Doubles in one env's info row: the sizes of every info entry, summed.
  int64_t info_row() const {
    int64_t row = 0;
    for (const InfoDecl& d : infos_) row += d.size;
    return row;
  }
  Space& observation() { return observation_; }
  Space& action() { return action_; }

  // Throws std::invalid_argument naming the field if a space is malformed.
  void Check() const {
    CheckSpace(observation_, "observation");
    CheckSpace(action_, "action");
    if (max_episode_steps_ < 0) throw std::invalid_argument(id_ + ": max_episode_steps < 0");
    if (num_agents_ < 1 || num_agents_ > kMaxAgents) {
      throw std::invalid_argument(id_ + ": Agents(count) needs 1 to " + std::to_string(kMaxAgents) +
                                  " agents, got " + std::to_string(num_agents_));
    }
    if (num_agents_ > 1 && !infos_.empty()) {
      throw std::invalid_argument(id_ + ": a multi-agent env cannot declare infos yet");
    }
    if (renders() &&
        (render_height_ < 1 || render_width_ < 1 || render_height_ > kMaxFrameSide ||
         render_width_ > kMaxFrameSide || !(render_fps_ >= 0.0) || std::isinf(render_fps_))) {
      throw std::invalid_argument(
          id_ + ": Render(height, width, fps) needs 1 to " + std::to_string(kMaxFrameSide) +
          " pixels a side and a finite fps >= 0, got " + std::to_string(render_height_) + " x " +
          std::to_string(render_width_) + " at " + std::to_string(render_fps_));
    }
  }
  // The longest side of a rendered frame.
  static constexpr int32_t kMaxFrameSide = FASTBATCH_MAX_FRAME_SIDE;
  // The most agents one env may hold.
  static constexpr int32_t kMaxAgents = FASTBATCH_MAX_AGENTS;

  // The C view; valid while this Spec lives unchanged.
  const fb_spec* View() {
    params_view_.clear();
    info_view_.clear();
    choice_view_.clear();
    for (const ParamDecl& d : params_.decls()) {
      params_view_.push_back(fb_param{d.name.c_str(), d.default_value});
      std::vector<const char*> choices;
      for (const std::string& c : d.choices) choices.push_back(c.c_str());
      choice_view_.push_back(std::move(choices));
    }
    for (size_t i = 0; i < params_.decls().size(); ++i) {
      const ParamDecl& d = params_.decls()[i];
      info_view_.push_back(fb_param_info{
          d.kind, d.low, d.high, static_cast<int32_t>(d.choices.size()), choice_view_[i].data()});
    }
    view_.id = id_.c_str();
    view_.observation = SpaceView(observation_);
    view_.action = SpaceView(action_);
    view_.max_episode_steps = max_episode_steps_;
    view_.has_reward_threshold = has_reward_threshold_ ? 1 : 0;
    view_.reward_threshold = reward_threshold_;
    view_.num_params = static_cast<int32_t>(params_view_.size());
    view_.params = params_view_.data();
    view_.param_info = info_view_.data();
    info_names_view_.clear();
    info_sizes_view_.clear();
    for (const InfoDecl& d : infos_) {
      info_names_view_.push_back(d.name.c_str());
      info_sizes_view_.push_back(d.size);
    }
    view_.num_infos = static_cast<int32_t>(infos_.size());
    view_.info_names = info_names_view_.data();
    view_.info_sizes = info_sizes_view_.data();
    view_.num_agents = num_agents_;
    view_.render_height = render_height_;
    view_.render_width = render_width_;
    view_.render_fps = render_fps_;
    return &view_;
  }

 private:
  void CheckSpace(const Space& s, const char* what) const {
    if (s.is_discrete) {
      if (s.n <= 0)
        throw std::invalid_argument(id_ + ": " + what + " space Discrete(n) needs n > 0");
      return;
    }
    int64_t size = 1;
    for (int64_t d : s.shape) size *= d;
    if (s.shape.empty() || s.shape.size() > FASTBATCH_MAX_NDIM || size <= 0) {
      throw std::invalid_argument(id_ + ": " + what + " space needs 1 to " +
                                  std::to_string(FASTBATCH_MAX_NDIM) + " positive dimensions");
    }
    if (static_cast<int64_t>(s.low.size()) != size || static_cast<int64_t>(s.high.size()) != size) {
      throw std::invalid_argument(id_ + ": " + what + " space has " + std::to_string(s.low.size()) +
                                  " low and " + std::to_string(s.high.size()) +
                                  " high bounds for a shape of " + std::to_string(size) +
                                  " elements");
    }
  }

  static fb_space SpaceView(const Space& s) {
    fb_space v{};
    v.is_discrete = s.is_discrete ? 1 : 0;
    v.dtype = s.dtype;
    v.ndim = static_cast<int32_t>(s.shape.size());
    for (size_t i = 0; i < s.shape.size() && i < FASTBATCH_MAX_NDIM; ++i) v.shape[i] = s.shape[i];
    v.n = s.n;
    v.low = s.low.data();
    v.high = s.high.data();
    return v;
  }

  std::string id_;
  Space observation_, action_;
  int64_t max_episode_steps_ = 0;
  bool has_reward_threshold_ = false;
  double reward_threshold_ = 0.0;
  int32_t num_agents_ = 1;
  int32_t render_height_ = 0, render_width_ = 0;
  double render_fps_ = 0.0;
  ParamList params_;
  std::vector<InfoDecl> infos_;
  std::vector<fb_param> params_view_;
  std::vector<const char*> info_names_view_;
  std::vector<int32_t> info_sizes_view_;
  std::vector<fb_param_info> info_view_;
  std::vector<std::vector<const char*>> choice_view_;
  fb_spec view_{};
};

}  // namespace fastbatch

#endif  // FASTBATCH_SPEC_H_

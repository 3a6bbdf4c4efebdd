// How the adapter (adapter.h) sees env class E's spec (public, header-only; included by
// adapter.h): the class's types and optional parts checked at compile time, its declared params,
// the spec for given params with its element types resolved from ObsType/ActionType (or, for an
// ObsType of void, named by the spec) and the contract's mismatches refused, and the default spec
// built once, whose error names the class. Internal linkage on purpose, as in adapter.h.
#ifndef FASTBATCH_ADAPTER_SPEC_H_
#define FASTBATCH_ADAPTER_SPEC_H_

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#if defined(__GNUG__)
#include <cxxabi.h>
#endif

#include "fastbatch/abi.h"
#include "fastbatch/env_traits.h"
#include "fastbatch/spec.h"

namespace fastbatch {
namespace {
namespace detail {

// Env class E's spec, as the adapter builds and checks it. One instance of the static state
// per E.
template <typename E>
struct EnvSpecs {
  using Obs = typename E::ObsType;
  using Act = typename E::ActionType;
  static_assert(std::is_same_v<Obs, float> || std::is_same_v<Obs, double> ||
                    std::is_same_v<Obs, int32_t> || std::is_same_v<Obs, int64_t> ||
                    std::is_same_v<Obs, uint8_t> || std::is_void_v<Obs>,
                "ObsType must be float, double, int32_t, int64_t or uint8_t, or void (the "
                "spec's Box<T> then names the type, which may depend on the params)");
  static_assert((std::is_integral_v<Act> && !std::is_same_v<Act, bool>) ||
                    std::is_same_v<Act, float> || std::is_same_v<Act, double>,
                "ActionType must be an integer type (Discrete actions) or float/double (Box)");
  static constexpr bool kDiscrete = std::is_integral_v<Act>;
  static constexpr bool kSpecFromParams = TakesParams<E>::value;
  static constexpr bool kWritesInfo = WritesInfo<E>::value;
  static constexpr bool kStepsAgents = StepsAgents<E>::value;
  static_assert(!(kStepsAgents && kWritesInfo),
                "a multi-agent env (Step(actions, obs, AgentResults)) cannot write infos yet");
  static_assert(!HasSetState<E>::value || HasState<E>::value,
                "an env with SetState(const double*) also declares kStateSize and "
                "GetState(double*) const: SetState reads what GetState writes");
  static_assert(!kSpecFromParams || DeclaresParams<E>::value,
                "an env whose MakeSpec(const fastbatch::Params&) reads params declares them in "
                "`static fastbatch::ParamList DeclareParams()`");

  // The declared params: DeclareParams() for a spec built from params, else the spec's own.
  static const ParamList& Declared() {
    static const ParamList list = [] {
      if constexpr (kSpecFromParams) {
        return E::DeclareParams();
      } else {
        return E::MakeSpec().params();
      }
    }();
    return list;
  }

  // The spec for `params`, with element types resolved and checked. Throws on a bad spec.
  static Spec Build(const Params& params) {
    Spec spec = [&] {
      if constexpr (kSpecFromParams) {
        Spec s = E::MakeSpec(params);
        if (!s.params().empty()) {
          throw std::invalid_argument(s.id() + ": declare params in DeclareParams() only");
        }
        s.SetParams(Declared());
        return s;
      } else {
        (void)params;
        return E::MakeSpec();
      }
    }();
    if (spec.observation().is_discrete) {
      throw std::invalid_argument(spec.id() + ": the observation space must be a Box");
    }
    if constexpr (std::is_void_v<Obs>) {
      if (spec.observation().dtype == kDTypeFromEnv) {
        throw std::invalid_argument(spec.id() +
                                    ": the env's ObsType is void, so its observation space "
                                    "names the element type: Box<T>(shape, low, high)");
      }
    } else {
      Resolve(spec.observation(), DTypeOf<Obs>(), spec.id() + ": the observation space", "ObsType");
    }
    if (spec.action().is_discrete && !kDiscrete) {
      throw std::invalid_argument(spec.id() +
                                  ": a Discrete action space needs an integer "
                                  "ActionType (int64_t)");
    }
    if constexpr (kDiscrete) {
      if (!spec.action().is_discrete) {
        throw std::invalid_argument(spec.id() +
                                    ": an integer ActionType needs a Discrete "
                                    "action space (Box actions are float or double)");
      }
    } else {
      Resolve(spec.action(), DTypeOf<Act>(), spec.id() + ": the action space", "ActionType");
    }
    if (!spec.infos().empty() && !kWritesInfo) {
      throw std::invalid_argument(spec.id() +
                                  ": the spec declares infos, so the env writes them: "
                                  "Reset(rng, obs, info) and Step(action, obs, info)");
    }
    if (spec.infos().empty() && kWritesInfo) {
      throw std::invalid_argument(spec.id() +
                                  ": Reset/Step take an info row but the spec declares no "
                                  "Info(name)");
    }
    if (spec.renders() != HasRender<E>::value) {
      throw std::invalid_argument(
          spec.id() + (spec.renders() ? ": the spec declares a frame (Render(height, width)) but "
                                        "the env has no `void Render(uint8_t* rgb)`"
                                      : ": the env has `Render(uint8_t* rgb)` but the spec "
                                        "declares no frame: Spec::Render(height, width, fps)"));
    }
    if (spec.num_agents() > 1 && !kStepsAgents) {
      throw std::invalid_argument(
          spec.id() + ": the spec declares " + std::to_string(spec.num_agents()) +
          " agents but the env steps one; a multi-agent env steps all of them in "
          "`void Step(const ActionType* actions, ObsType* obs, const fastbatch::AgentResults&)`");
    }
    spec.Check();
    return spec;
  }

  // Gives a Box declared without a type the env's type `code`; refuses a declared one that
  // differs.
  static void Resolve(Space& s, int32_t code, const std::string& what, const char* type_name) {
    if (s.dtype == kDTypeFromEnv) {
      s.dtype = code;
    } else if (s.dtype != code) {
      const char* declared = IsKnownDType(s.dtype) ? DTypeName(s.dtype) : "an unknown type";
      throw std::invalid_argument(what + " is declared as Box<" + declared + "> but the env's " +
                                  type_name + " is " + DTypeName(code) +
                                  ": declare it as Box(shape, low, high) to take the type from " +
                                  type_name);
    }
  }

  // The default spec, built once; nullptr (and SpecError()) if it cannot be built.
  struct Default {
    std::unique_ptr<Spec> spec;
    std::string error;
    const fb_spec* view = nullptr;
  };
  static Default& Defaults() {
    static Default d = [] {
      Default out;
      const ParamList* declared = nullptr;
      try {  // the params come before the spec's id: the error names the class instead
        declared = &Declared();
      } catch (const std::exception& e) {
        out.error = ClassName() + ": " + e.what();
        return out;
      } catch (...) {
        out.error = ClassName() + ": unknown C++ exception while declaring the params";
        return out;
      }
      try {
        const ParamList& list = *declared;
        std::vector<double> values;
        for (const ParamDecl& p : list.decls()) values.push_back(p.default_value);
        out.spec = std::make_unique<Spec>(Build(Params(&list, values.data())));
        out.view = out.spec->View();
      } catch (const std::exception& e) {
        out.error = e.what();
      } catch (...) {
        out.error = "unknown C++ exception while building the spec";
      }
      return out;
    }();
    return d;
  }
  // "env class <E>", demangled where the compiler can.
  static std::string ClassName() {
#if defined(__GNUG__)
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> name(
        abi::__cxa_demangle(typeid(E).name(), nullptr, nullptr, &status), std::free);
    if (status == 0 && name != nullptr) return std::string("env class ") + name.get();
#endif
    return std::string("env class ") + typeid(E).name();
  }
  static const fb_spec* GetSpec() { return Defaults().view; }
  static const char* SpecError() { return Defaults().error.c_str(); }
};

}  // namespace detail
}  // namespace
}  // namespace fastbatch

#endif  // FASTBATCH_ADAPTER_SPEC_H_

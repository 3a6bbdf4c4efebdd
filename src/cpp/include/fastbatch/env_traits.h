// What an env class gives the adapter (adapter.h) and how the adapter sees it (public,
// header-only; included by adapter.h): the result types Step returns or writes, and the traits
// that detect which optional parts of the contract in env.h a class offers (params, infos,
// several agents, state, rendering). Internal linkage on purpose, as in adapter.h.
#ifndef FASTBATCH_ENV_TRAITS_H_
#define FASTBATCH_ENV_TRAITS_H_

#include <cstdint>
#include <type_traits>
#include <utility>

#include "fastbatch/rng.h"
#include "fastbatch/spec.h"

namespace fastbatch {

// What Step returns. `truncated`: the env ended the episode itself without terminating (its own
// limit); the pool's time limit (Spec::MaxEpisodeSteps) is applied on top.
struct StepResult {
  double reward;
  bool terminated;
  bool truncated = false;
};

// What a multi-agent env's Step writes (ABI version 6; env.h, "Multi-agent envs"): one entry
// per agent, each zero when Step is called. `truncated`: the agent's episode ended by the env's
// own limit.
struct AgentResults {
  float* reward;
  uint8_t* terminated;
  uint8_t* truncated;
};

namespace {
namespace detail {

template <typename E, typename = void>
struct TakesParams : std::false_type {};
template <typename E>
struct TakesParams<E, std::void_t<decltype(E::MakeSpec(std::declval<const Params&>()))>>
    : std::true_type {};

template <typename E, typename = void>
struct DeclaresParams : std::false_type {};
template <typename E>
struct DeclaresParams<E, std::void_t<decltype(E::DeclareParams())>> : std::true_type {};

// An env that writes infos (ABI version 3) takes an info row in Reset and Step.
template <typename E, typename = void>
struct WritesInfo : std::false_type {};
template <typename E>
struct WritesInfo<
    E, std::void_t<decltype(std::declval<E&>().Reset(
           std::declval<Rng&>(), std::declval<typename E::ObsType*>(), std::declval<double*>()))>>
    : std::true_type {};

// A multi-agent env (ABI version 6) steps all its agents in one
// `void Step(const ActionType* actions, ObsType* obs, const AgentResults& out)`.
template <typename E, typename = void>
struct StepsAgents : std::false_type {};
template <typename E>
struct StepsAgents<E,
                   std::void_t<decltype(std::declval<E&>().Step(
                       std::declval<const typename E::ActionType*>(),
                       std::declval<typename E::ObsType*>(), std::declval<const AgentResults&>()))>>
    : std::true_type {};

template <typename E, typename = void>
struct HasState : std::false_type {};
template <typename E>
struct HasState<E, std::void_t<decltype(E::kStateSize)>> : std::true_type {};

// An env whose state can be set (ABI version 5) has `void SetState(const double* state)`.
template <typename E, typename = void>
struct HasSetState : std::false_type {};
template <typename E>
struct HasSetState<
    E, std::void_t<decltype(std::declval<E&>().SetState(std::declval<const double*>()))>>
    : std::true_type {};

// An env that draws itself (ABI version 7) has `void Render(uint8_t* rgb)` (const or not).
template <typename E, typename = void>
struct HasRender : std::false_type {};
template <typename E>
struct HasRender<E, std::void_t<decltype(std::declval<E&>().Render(std::declval<uint8_t*>()))>>
    : std::true_type {};

}  // namespace detail
}  // namespace
}  // namespace fastbatch

#endif  // FASTBATCH_ENV_TRAITS_H_

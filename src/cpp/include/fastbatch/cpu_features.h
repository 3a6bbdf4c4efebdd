// Turning a CPU-dispatched fast path off by hand: FASTBATCH_DISABLE_CPU_FEATURES names the CPU
// features (as Linux's /proc/cpuinfo spells them: avx512vbmi, avx512_bf16, ...) that fastbatch
// and its plugins must not use even where the CPU has them, separated by commas, or "all". A test
// forces each portable path with it on any machine, and a user can rule out a fast path when
// hunting a bug. fastbatch.cpu reads the same variable by the same rule for the Python side.
#ifndef FASTBATCH_CPU_FEATURES_H_
#define FASTBATCH_CPU_FEATURES_H_

#include <cstdlib>
#include <cstring>

namespace fastbatch {

inline constexpr const char* kDisableCpuFeaturesVariable = "FASTBATCH_DISABLE_CPU_FEATURES";

// Whether `feature` is switched off by FASTBATCH_DISABLE_CPU_FEATURES (read at each call: callers
// cache the answer with the CPU's own, as they do for __builtin_cpu_supports).
inline bool CpuFeatureDisabled(const char* feature) {
  const char* list = std::getenv(kDisableCpuFeaturesVariable);
  if (list == nullptr) return false;
  const size_t length = std::strlen(feature);
  for (const char* item = list; *item != '\0';) {
    while (*item == ',' || *item == ' ') ++item;
    const char* end = item;
    while (*end != '\0' && *end != ',' && *end != ' ') ++end;
    const size_t size = static_cast<size_t>(end - item);
    if ((size == 3 && std::strncmp(item, "all", 3) == 0) ||
        (size == length && std::strncmp(item, feature, length) == 0)) {
      return true;
    }
    item = end;
  }
  return false;
}

}  // namespace fastbatch

#endif  // FASTBATCH_CPU_FEATURES_H_

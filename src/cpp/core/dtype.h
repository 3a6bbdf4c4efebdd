// The element types of the ABI (fb_dtype): byte size and numpy name. The one place that maps a
// dtype code to anything; the pool, the plugin checks and the bindings all read it from here.
//
// Threading: pure functions, callable from any thread. Ownership: the returned names are
// string literals (static storage).
#ifndef FASTBATCH_CORE_DTYPE_H_
#define FASTBATCH_CORE_DTYPE_H_

#include <cstdint>

#include "fastbatch/abi.h"

namespace fastbatch {

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

}  // namespace fastbatch

#endif  // FASTBATCH_CORE_DTYPE_H_

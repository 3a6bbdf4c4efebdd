// The element types of the ABI (fb_dtype): byte size and numpy name. The table itself is public
// (fastbatch/spec.h: LookupDType, DTypeSize, DTypeName, IsKnownDType) so that env authors' code
// and the core read the same one; the pool, the plugin checks and the bindings include it here.
#ifndef FASTBATCH_CORE_DTYPE_H_
#define FASTBATCH_CORE_DTYPE_H_

#include "fastbatch/spec.h"

#endif  // FASTBATCH_CORE_DTYPE_H_

// Cross-process signalling for the process backend (python/fastbatch/_process_worker.py and
// process.py): futex-backed words in shared memory.
//
// A "word" is a 4-byte-aligned uint32 in a shared mapping, addressed by its integer address; the
// uint32 right after it counts the processes asleep on it, so that a store wakes (a syscall)
// only when someone sleeps. Futexes are process-shared (no FUTEX_PRIVATE_FLAG).
//
// Ownership: the caller guarantees the mapping outlives every call. Threading: any thread of any
// process that maps the word; no function touches Python, so WaitWord is bound to run with the
// GIL released. A bad address (null or misaligned) throws std::invalid_argument.
#ifndef FASTBATCH_BINDINGS_SHARED_WORD_H_
#define FASTBATCH_BINDINGS_SHARED_WORD_H_

#include <cstdint>

namespace fastbatch {

// Waits until the word differs from `old`: spins for `spin_us` microseconds (yielding the core
// between checks when `yield` is set, for when processes outnumber cores), then sleeps on the
// futex. Returns the new value, or `old` when `timeout_s` passed first (the caller then checks
// on its peers).
uint32_t WaitWord(uintptr_t address, uint32_t old, double timeout_s, double spin_us, bool yield);

// Stores `value` and wakes the sleepers, if any.
void StoreWord(uintptr_t address, uint32_t value);

// Adds `delta`, wakes the sleepers, if any, and returns the new value.
uint32_t AddWord(uintptr_t address, uint32_t delta);

// The word's value (acquire).
uint32_t LoadWord(uintptr_t address);

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_SHARED_WORD_H_

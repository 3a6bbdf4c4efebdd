// Result buffers of `_VectorPool.reset/step/recv`: each slot is one 64-byte-aligned allocation
// holding a full set of batch arrays (obs [rows, *obs_shape], reward [rows] float32,
// terminated and truncated [rows] bool; for recv also env_ids int64, one per env: [rows /
// num_agents]), handed to Python as numpy views.
//
// Reuse contract: a slot is written again only when none of its arrays is referenced outside
// its ResultSlots (every refcount is 1), so an array the caller holds never changes behind its
// back, and a steady loop that drops its arrays allocates nothing. A free slot one of whose
// arrays the caller made read-only is replaced by a new one. Ownership: the
// memory belongs to a capsule that every view references, so an array outlives its slot, its
// ResultSlots and the pool.
//
// Threading: Python objects throughout, so every call holds the GIL. The pool writes into a
// slot's memory with the GIL released, through the raw pointers of `Out()`, while the caller's
// call guard keeps the slot in use.
#ifndef FASTBATCH_BINDINGS_RESULT_SLOTS_H_
#define FASTBATCH_BINDINGS_RESULT_SLOTS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/vector_pool.h"
#include "fastbatch/abi.h"

namespace fastbatch {

namespace py = pybind11;

inline constexpr size_t kAlign = 64;  // bytes; also what step_into requires of caller arrays

inline bool IsAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlign == 0; }

struct Slot {
  py::array obs, reward, terminated, truncated;
  py::object env_ids;  // recv slots only (else null)
  BatchOut out;        // the arrays' memory, which the slot owns (whatever their flags say)
  int64_t* env_ids_out = nullptr;

  // True when the caller holds none of the arrays.
  bool Free() const {
    return obs.ref_count() == 1 && reward.ref_count() == 1 && terminated.ref_count() == 1 &&
           truncated.ref_count() == 1 && (!env_ids || env_ids.ref_count() == 1);
  }
  // False when a caller made one of the arrays read-only (the slot is then replaced, not
  // handed out read-only again).
  bool Writeable() const {
    return obs.writeable() && reward.writeable() && terminated.writeable() &&
           truncated.writeable() &&
           (!env_ids || py::reinterpret_borrow<py::array>(env_ids).writeable());
  }
  // Raw pointers for the pool.
  BatchOut Out() const { return out; }
};

// The slots of one row count (num_envs * num_agents for reset/step, batch_size * num_agents for
// recv, whose slots also hold `env_ids` ids: batch_size; 0 for reset/step).
class ResultSlots {
 public:
  ResultSlots(int64_t rows, const fb_spec& spec, int64_t env_ids = 0);

  // A slot nobody else references; allocates one (zeroed) when every slot is held. At most
  // kMaxSlots are kept for reuse; older ones live on only through the caller's arrays.
  Slot& Acquire();
  // Drops every slot (close); arrays the caller holds stay valid.
  void Clear() { slots_.clear(); }

 private:
  static constexpr size_t kMaxSlots = 4;
  Slot Make() const;

  int64_t rows_;
  int64_t env_ids_;
  int64_t obs_row_bytes_;
  std::vector<py::ssize_t> obs_shape_;  // [rows, *obs_shape]
  py::dtype obs_dtype_, reward_dtype_, flag_dtype_;
  std::vector<Slot> slots_;
};

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_RESULT_SLOTS_H_

// Checks of Python-facing arguments, made once at the boundary, before the GIL is released:
// actions (ActionChecker, also bound as `_core._ActionChecker` so the process backend applies
// the same rules and messages), reset masks, env ids, the caller-owned output arrays of
// `_VectorPool.step_into` and the states of `_VectorPool.set_state`. Each raises TypeError (wrong
// kind of value or dtype) or ValueError (wrong shape, out of range, NaN) naming the expected form.
//
// Threading: Python objects throughout, so every call holds the GIL. Ownership: the returned
// arrays are new references; they are the input itself whenever it already has the right dtype
// and layout (the common case copies nothing).
#ifndef FASTBATCH_BINDINGS_CHECKS_H_
#define FASTBATCH_BINDINGS_CHECKS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fastbatch/abi.h"

namespace fastbatch {

namespace py = pybind11;

using Int64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using BoolArray = py::array_t<bool, py::array::c_style | py::array::forcecast>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

// A shape as Python prints a tuple: "(8,)", "(7, 2)", "()".
std::string ShapeString(std::span<const py::ssize_t> shape);
inline std::span<const py::ssize_t> ShapeOf(const py::array& a) {
  return {a.shape(), static_cast<size_t>(a.ndim())};
}

// Validates the actions of `rows` envs for one space and returns them as a C-contiguous array
// of the action dtype (int64 for Discrete). Errors, in the order checked:
// - not array-like: TypeError "actions must be a numpy array (or convertible to one)";
// - Discrete, non-integer dtype: TypeError "actions for a Discrete(4) space must be integers,
//   got dtype float64"; Box, non-real dtype: TypeError "actions for a Box space must be real
//   numbers, got dtype bool";
// - shape other than (rows, *row_shape): ValueError "actions must have shape (8,), got (7,)";
// - Discrete, outside [start, start + n): ValueError "action 9 for env 3 is outside Discrete(4)";
// - Box, NaN: ValueError "action for env 2 is NaN; continuous actions must be numbers (...)".
// "env X" is env_ids[j] when env ids are given, else the row j. Discrete(n, start=s) is named so
// in messages when s != 0. Box values outside the bounds pass (envs clip them, as gymnasium's).
class ActionChecker {
 public:
  // Discrete(n, start) when `discrete` (then `row_shape` must be empty; actions are int64 and
  // `dtype` is not used), else a Box of `row_shape` and `dtype` (a real dtype). Throws
  // std::invalid_argument for an impossible space.
  ActionChecker(bool discrete, int64_t n, int64_t start, std::vector<py::ssize_t> row_shape,
                py::dtype dtype);
  // The checker of an ABI action space (Discrete start 0).
  static ActionChecker ForSpace(const fb_space& action);

  // `env_ids`: null, or `rows` ids named in messages instead of row numbers.
  py::array Check(py::handle actions, int64_t rows, const int64_t* env_ids = nullptr) const;

 private:
  enum class Floats { kNone, kFloat32, kFloat64, kOther };  // what the NaN check reads

  std::string DiscreteName() const;
  int64_t EnvId(int64_t row, const int64_t* env_ids) const { return env_ids ? env_ids[row] : row; }
  bool HasShape(const py::array& a, int64_t rows) const;
  [[noreturn]] void ThrowShape(const py::array& a, int64_t rows) const;
  // `a` is C-contiguous float32/float64 as `floats` says, or anything real for kOther.
  void CheckNotNaN(const py::array& a, Floats floats, const int64_t* env_ids) const;

  bool discrete_;
  int64_t n_, start_;
  std::vector<py::ssize_t> row_shape_;
  py::ssize_t row_size_ = 1;  // elements per env
  py::dtype dtype_;           // of the returned array
  Floats floats_ = Floats::kNone;
};

// Env ids for `_VectorPool.send`: a 1-D integer array, returned as C-contiguous int64. Raises
// TypeError "env_ids must be a 1-D array of integers". Range and duplicates are the pool's check.
Int64Array CheckEnvIds(py::handle env_ids);

// A reset mask for `num_envs` envs: a bool ndarray of shape (num_envs,) (TypeError for another
// dtype, ValueError for another shape); returned C-contiguous.
BoolArray CheckResetMask(const py::array& mask, int64_t num_envs);

// An env state for set_state: a numpy array of dtype float64 (TypeError "state must be a
// float64 numpy array of shape (4,), got ..." for another dtype or a list: nothing is converted)
// of shape (size,) (ValueError; size < 0: any 1-D shape); returned C-contiguous.
DoubleArray CheckState(py::handle state, int64_t size);

// An output array of step_into: exactly `dtype` (TypeError), exactly `shape` (ValueError),
// writeable and C-contiguous, 64-byte aligned (ValueError). `name` starts each message.
void CheckOutArray(const char* name, const py::array& a, const py::dtype& dtype,
                   std::span<const py::ssize_t> shape);

}  // namespace fastbatch

#endif  // FASTBATCH_BINDINGS_CHECKS_H_

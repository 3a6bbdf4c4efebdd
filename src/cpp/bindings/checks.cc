#include "bindings/checks.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "bindings/result_slots.h"
#include "bindings/spec_dict.h"

namespace fastbatch {
namespace {

std::string DTypeString(const py::dtype& dtype) { return py::str(dtype).cast<std::string>(); }

// `a` as a C-contiguous array of `dtype` (a copy, cast as numpy's astype does).
py::array FromAny(const py::array& a, const py::dtype& dtype) {
  auto& api = py::detail::npy_api::get();
  PyObject* out = api.PyArray_FromAny_(
      a.ptr(), dtype.inc_ref().ptr(), 0, 0,  // PyArray_FromAny steals the dtype reference
      py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_FORCECAST_,
      nullptr);
  if (out == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(out);
}

}  // namespace

std::string ShapeString(std::span<const py::ssize_t> shape) {
  std::string s = "(";
  for (size_t d = 0; d < shape.size(); ++d) {
    s += std::to_string(shape[d]);
    if (shape.size() == 1 || d + 1 < shape.size()) s += ",";
    if (d + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

ActionChecker::ActionChecker(bool discrete, int64_t n, int64_t start,
                             std::vector<py::ssize_t> row_shape, py::dtype dtype)
    : discrete_(discrete),
      n_(n),
      start_(start),
      row_shape_(std::move(row_shape)),
      dtype_(discrete ? py::dtype::of<int64_t>() : std::move(dtype)) {
  if (discrete_) {
    if (n_ <= 0) throw std::invalid_argument("Discrete(n) needs n > 0, got " + std::to_string(n_));
    if (!row_shape_.empty()) {
      throw std::invalid_argument("a Discrete space has shape (), got " + ShapeString(row_shape_));
    }
    return;
  }
  for (py::ssize_t d : row_shape_) {
    if (d < 0)
      throw std::invalid_argument("a Box shape has no negative dimension, got " +
                                  ShapeString(row_shape_));
    row_size_ *= d;
  }
  const char kind = dtype_.kind();
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    throw std::invalid_argument("a Box action space must have a real dtype, got dtype " +
                                DTypeString(dtype_));
  }
  if (dtype_.equal(py::dtype::of<float>())) {
    floats_ = Floats::kFloat32;
  } else if (dtype_.equal(py::dtype::of<double>())) {
    floats_ = Floats::kFloat64;
  } else if (kind == 'f') {
    floats_ = Floats::kOther;  // float16, long double, non-native byte order
  }
}

ActionChecker ActionChecker::ForSpace(const fb_space& action) {
  if (action.is_discrete) return ActionChecker(true, action.n, 0, {}, py::dtype::of<int64_t>());
  return ActionChecker(false, 0, 0, SpaceShape(action), NumpyDType(action.dtype));
}

std::string ActionChecker::DiscreteName() const {
  std::string name = "Discrete(" + std::to_string(n_);
  if (start_ != 0) name += ", start=" + std::to_string(start_);
  return name + ")";
}

bool ActionChecker::HasShape(const py::array& a, int64_t rows) const {
  if (a.ndim() != static_cast<py::ssize_t>(row_shape_.size()) + 1 || a.shape(0) != rows) {
    return false;
  }
  for (size_t d = 0; d < row_shape_.size(); ++d) {
    if (a.shape(static_cast<py::ssize_t>(d) + 1) != row_shape_[d]) return false;
  }
  return true;
}

void ActionChecker::ThrowShape(const py::array& a, int64_t rows) const {
  std::vector<py::ssize_t> expected{static_cast<py::ssize_t>(rows)};
  expected.insert(expected.end(), row_shape_.begin(), row_shape_.end());
  if (a.ndim() == 0) {  // gymnasium's vector envs raise TypeError for a non-batch too
    throw py::type_error("actions must be a batch, an array of shape " + ShapeString(expected) +
                         ", got a scalar");
  }
  throw py::value_error("actions must have shape " + ShapeString(expected) + ", got " +
                        ShapeString(ShapeOf(a)));
}

void ActionChecker::CheckNotNaN(const py::array& a, Floats floats, const int64_t* env_ids) const {
  if (floats == Floats::kOther) {
    CheckNotNaN(FromAny(a, py::dtype::of<double>()), Floats::kFloat64, env_ids);
    return;
  }
  const py::ssize_t size = a.size();
  auto scan = [&](const auto* p) {
    for (py::ssize_t i = 0; i < size; ++i) {
      if (std::isnan(p[i])) {
        throw py::value_error("action for env " + std::to_string(EnvId(i / row_size_, env_ids)) +
                              " is NaN; continuous actions must be numbers (values outside the "
                              "bounds are clipped as in gymnasium, NaN is refused)");
      }
    }
  };
  if (floats == Floats::kFloat32) scan(static_cast<const float*>(a.data()));
  if (floats == Floats::kFloat64) scan(static_cast<const double*>(a.data()));
}

py::array ActionChecker::Check(py::handle in, int64_t rows, const int64_t* env_ids) const {
  py::array a =
      py::isinstance<py::array>(in) ? py::reinterpret_borrow<py::array>(in) : py::array::ensure(in);
  if (!a) {
    PyErr_Clear();
    throw py::type_error("actions must be a numpy array (or convertible to one)");
  }
  const py::dtype dtype = a.dtype();
  const char kind = dtype.kind();
  if (discrete_) {
    if (kind != 'i' && kind != 'u') {
      throw py::type_error("actions for a " + DiscreteName() +
                           " space must be integers, got dtype " + DTypeString(dtype));
    }
    if (!HasShape(a, rows)) ThrowShape(a, rows);
    // An int64 C-contiguous array (the usual) as it is: ensure() would go through FromAny.
    auto ints = py::isinstance<Int64Array>(a) ? py::reinterpret_borrow<Int64Array>(a)
                                              : Int64Array::ensure(a);
    if (!ints) throw py::error_already_set();
    const int64_t* p = ints.data();
    const int64_t end = start_ + n_;
    for (py::ssize_t i = 0; i < ints.size(); ++i) {
      if (p[i] < start_ || p[i] >= end) {
        throw py::value_error("action " + std::to_string(p[i]) + " for env " +
                              std::to_string(EnvId(i, env_ids)) + " is outside " + DiscreteName());
      }
    }
    return ints;
  }
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    throw py::type_error("actions for a Box space must be real numbers, got dtype " +
                         DTypeString(dtype));
  }
  if (!HasShape(a, rows)) ThrowShape(a, rows);
  // An integer dtype cannot hold NaN: refuse it before the cast would turn it into a number.
  if (kind == 'f' && floats_ == Floats::kNone) CheckNotNaN(a, Floats::kOther, env_ids);
  const bool same_dtype = dtype.is(dtype_) || dtype.equal(dtype_);
  py::array out =
      same_dtype && (a.flags() & py::array::c_style) ? std::move(a) : FromAny(a, dtype_);
  if (floats_ != Floats::kNone) CheckNotNaN(out, floats_, env_ids);
  return out;
}

Int64Array CheckEnvIds(py::handle env_ids) {
  // The usual ids (the int64 array recv returned) as they are: ensure() goes through FromAny.
  if (py::isinstance<Int64Array>(env_ids) &&
      py::reinterpret_borrow<py::array>(env_ids).ndim() == 1) {
    return py::reinterpret_borrow<Int64Array>(env_ids);
  }
  py::array ids = py::array::ensure(env_ids);
  if (!ids || (ids.dtype().kind() != 'i' && ids.dtype().kind() != 'u') || ids.ndim() != 1) {
    PyErr_Clear();
    throw py::type_error("env_ids must be a 1-D array of integers");
  }
  return Int64Array::ensure(ids);
}

BoolArray CheckResetMask(const py::array& mask, int64_t num_envs) {
  if (mask.dtype().kind() != 'b') {
    throw py::type_error("reset_mask must be a numpy array of dtype bool, got dtype " +
                         DTypeString(mask.dtype()));
  }
  if (mask.ndim() != 1 || mask.shape(0) != num_envs) {
    throw py::value_error("reset_mask must have shape (" + std::to_string(num_envs) + ",), got " +
                          ShapeString(ShapeOf(mask)));
  }
  return BoolArray::ensure(mask);
}

DoubleArray CheckState(py::handle state, int64_t size) {
  const std::string form =
      "a float64 numpy array of shape " + (size < 0 ? "(n,)" : "(" + std::to_string(size) + ",)");
  if (!py::isinstance<py::array>(state)) {
    throw py::type_error("state must be " + form + ", got " +
                         py::str(py::type::handle_of(state).attr("__name__")).cast<std::string>());
  }
  const auto a = py::reinterpret_borrow<py::array>(state);
  if (!a.dtype().is(py::dtype::of<double>()) && !a.dtype().equal(py::dtype::of<double>())) {
    throw py::type_error("state must be " + form + ", got dtype " + DTypeString(a.dtype()));
  }
  if (a.ndim() != 1 || (size >= 0 && a.shape(0) != size)) {
    throw py::value_error("state must be " + form + ", got shape " + ShapeString(ShapeOf(a)));
  }
  return DoubleArray::ensure(a);
}

void CheckOutArray(const char* name, const py::array& a, const py::dtype& dtype,
                   std::span<const py::ssize_t> shape) {
  const py::dtype got = a.dtype();
  if (!got.is(dtype) && !got.equal(dtype)) {  // is(): the common, cheap case
    throw py::type_error(std::string(name) + " must have dtype " + DTypeString(dtype) + ", got " +
                         DTypeString(got));
  }
  bool same = a.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t d = 0; same && d < shape.size(); ++d) {
    same = a.shape(static_cast<py::ssize_t>(d)) == shape[d];
  }
  if (!same) {
    throw py::value_error(std::string(name) + " must have shape " + ShapeString(shape) + ", got " +
                          ShapeString(ShapeOf(a)));
  }
  if (!(a.flags() & py::array::c_style) || !a.writeable()) {
    throw py::value_error(std::string(name) + " must be a writeable C-contiguous array");
  }
  if (!IsAligned(a.data())) {
    throw py::value_error(std::string(name) +
                          " must be 64-byte aligned (use fastbatch.aligned_empty to allocate it)");
  }
}

}  // namespace fastbatch

// fastbatch's TensorFlow op: one rollout step of a native pool from inside a TensorFlow graph,
// with no Python in the loop (python/fastbatch/ppo/rollout.py calls it; tf_op.py loads it).
//
// Why the C API: TensorFlow's C++ classes change ABI between minor versions, so an op written
// against them must be compiled against the very TensorFlow it loads into. This one uses only
// TensorFlow's C kernel API (tf_c_api.h: plain C functions of libtensorflow_framework.so.2, the
// same in every TensorFlow from 2.16 to 2.21), so one prebuilt binary, built with no TensorFlow
// present, loads into all of them. Its DT_NEEDED entry on libtensorflow_framework.so.2 (from a
// link stub, framework_stub.cc) matches the framework library that `import tensorflow` already
// loaded, and its TF_* symbols bind to that. The op reaches the pool only through plain C
// function pointers and an opaque context that fastbatch._core hands out (attrs step_fn,
// error_fn, context; see src/cpp/bindings/rollout_abi.h), so it links against neither _core nor
// Python either.
//
// next_obs holds the storage's new row obs[t + 1], typed like the storage (attr obs_dtype: the
// env's observation dtype; no conversion): the caller casts or scales it. obs_shape ([N, *shape])
// and obs_dtype must describe the bound storage's rows; the op leaves its outputs' static shapes
// unknown (the C API's shape functions cannot read an int-list attr) and rollout.py sets them.
// With attr obs_address (the address of obs[0]; the Python side sets it only when obs[0] and
// every row are 64-byte aligned, as TensorFlow requires of any tensor's data) next_obs aliases
// that row: no copy. That is safe because the storage outlives every tensor of a rollout and row
// t + 1 is not written again within it (the next rollout starts after carry_over), so the alias
// stays valid while TensorFlow can read it; the tensor does not own the memory (its deallocator
// does nothing), and TensorFlow never writes into such a buffer in place of another output.
// Without it (0), the step function copies the row into a fresh output tensor. Actions with a
// NaN are refused (InvalidArgument); an env's failure is an Internal error with the step's
// message (naming the env).
//
// Threading: TensorFlow may run Compute of one kernel from several threads; the kernel's state
// is read-only after construction, and the pool's own contract (one step at a time per context)
// holds because the trainer orders its steps.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "tf_c_api.h"

namespace {

constexpr char kOpName[] = "FastbatchRolloutStep";

// FastbatchRolloutStep and FastbatchRolloutError of rollout_abi.h, reached by address.
using StepFn = int32_t (*)(void* context, int64_t t, const void* actions, void* next_obs,
                           bool* done);
using ErrorFn = const char* (*)(void* context);

// A TF_Status that frees itself.
struct StatusDeleter {
  void operator()(TF_Status* status) const { TF_DeleteStatus(status); }
};
using Status = std::unique_ptr<TF_Status, StatusDeleter>;
Status NewStatus() { return Status(TF_NewStatus()); }

// A TF_Tensor handle that frees itself (the buffer lives on while TensorFlow shares it).
struct TensorDeleter {
  void operator()(TF_Tensor* tensor) const { TF_DeleteTensor(tensor); }
};
using TensorHandle = std::unique_ptr<TF_Tensor, TensorDeleter>;

// The kernel's state: the attrs, read once when TensorFlow builds the kernel.
struct RolloutStep {
  StepFn step = nullptr;
  ErrorFn error = nullptr;
  void* context = nullptr;
  TF_DataType actions_dtype = TF_INT64;
  TF_DataType obs_dtype = TF_FLOAT;
  std::vector<int64_t> obs_shape;  // [N, *shape]
  char* obs = nullptr;             // obs[0] of the storage, when next_obs aliases its rows
  size_t row_bytes = 0;            // of one row obs[t]: N observations
};

// Reads the attrs into `kernel`; false with `status` set on a failure.
bool ReadAttrs(TF_OpKernelConstruction* c, RolloutStep* kernel, TF_Status* status) {
  int64_t step = 0, error = 0, context = 0, address = 0;
  const auto ok = [status] { return TF_GetCode(status) == TF_OK; };
  TF_OpKernelConstruction_GetAttrInt64(c, "step_fn", &step, status);
  if (ok()) TF_OpKernelConstruction_GetAttrInt64(c, "error_fn", &error, status);
  if (ok()) TF_OpKernelConstruction_GetAttrInt64(c, "context", &context, status);
  if (ok()) TF_OpKernelConstruction_GetAttrInt64(c, "obs_address", &address, status);
  if (ok()) TF_OpKernelConstruction_GetAttrType(c, "dtype", &kernel->actions_dtype, status);
  if (ok()) TF_OpKernelConstruction_GetAttrType(c, "obs_dtype", &kernel->obs_dtype, status);
  int32_t rank = -1, total_size = -1;
  if (ok()) TF_OpKernelConstruction_GetAttrSize(c, "obs_shape", &rank, &total_size, status);
  if (!ok()) return false;
  if (rank < 1) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "obs_shape must be [N, *shape]: at least N");
    return false;
  }
  kernel->obs_shape.assign(static_cast<size_t>(rank), 0);
  TF_OpKernelConstruction_GetAttrInt64List(c, "obs_shape", kernel->obs_shape.data(), rank, status);
  if (!ok()) return false;
  size_t elements = 1;
  for (int64_t d : kernel->obs_shape) {
    if (d < 0) {
      TF_SetStatus(status, TF_INVALID_ARGUMENT, "obs_shape's sizes must be known (>= 0)");
      return false;
    }
    elements *= static_cast<size_t>(d);
  }
  kernel->row_bytes = elements * TF_DataTypeSize(kernel->obs_dtype);
  kernel->step = reinterpret_cast<StepFn>(step);
  kernel->error = reinterpret_cast<ErrorFn>(error);
  kernel->context = reinterpret_cast<void*>(context);
  kernel->obs = reinterpret_cast<char*>(address);
  return true;
}

void* CreateRolloutStep(TF_OpKernelConstruction* c) {
  auto kernel = std::make_unique<RolloutStep>();
  Status status = NewStatus();
  if (!ReadAttrs(c, kernel.get(), status.get())) {
    TF_OpKernelConstruction_Failure(c, status.get());
    return nullptr;  // TensorFlow drops the kernel (DeleteRolloutStep gets nullptr)
  }
  return kernel.release();
}

void DeleteRolloutStep(void* kernel) { delete static_cast<RolloutStep*>(kernel); }

// Fails the run with (code, message); the message is copied.
void Fail(TF_OpKernelContext* c, TF_Code code, const char* message) {
  Status status = NewStatus();
  TF_SetStatus(status.get(), code, message);
  TF_OpKernelContext_Failure(c, status.get());
}

// Fails the run with `status` unless it is OK; returns whether it was.
bool Ok(TF_OpKernelContext* c, TF_Status* status) {
  if (TF_GetCode(status) == TF_OK) return true;
  TF_OpKernelContext_Failure(c, status);
  return false;
}

// A no-op deallocator: next_obs's buffer is a row of storage the Python caller owns.
void KeepStorageRow(void*, size_t, void*) {}

void ComputeRolloutStep(void* state, TF_OpKernelContext* c) {
  const auto& kernel = *static_cast<const RolloutStep*>(state);
  Status status = NewStatus();
  TF_Tensor* raw = nullptr;
  TF_GetInput(c, 0, &raw, status.get());
  if (!Ok(c, status.get())) return;
  const TensorHandle t(raw);
  TF_GetInput(c, 1, &raw, status.get());
  if (!Ok(c, status.get())) return;
  const TensorHandle actions(raw);
  if (kernel.actions_dtype == TF_FLOAT) {
    const auto* values = static_cast<const float*>(TF_TensorData(actions.get()));
    const int64_t count = TF_TensorElementCount(actions.get());
    for (int64_t i = 0; i < count; ++i) {
      if (std::isnan(values[i])) {
        Fail(c, TF_INVALID_ARGUMENT, "NaN action");
        return;
      }
    }
  }
  const int32_t slot = *static_cast<const int32_t*>(TF_TensorData(t.get()));
  const auto& shape = kernel.obs_shape;
  const int num_dims = static_cast<int>(shape.size());
  TensorHandle next_obs;
  if (kernel.obs == nullptr) {
    next_obs.reset(TF_AllocateOutput(c, 0, kernel.obs_dtype, shape.data(), num_dims,
                                     kernel.row_bytes, status.get()));
    if (!Ok(c, status.get())) return;
  }
  const int64_t n = shape[0];
  TensorHandle done(TF_AllocateOutput(c, 1, TF_BOOL, &n, 1, static_cast<size_t>(n), status.get()));
  if (!Ok(c, status.get())) return;
  void* copy_to = next_obs ? TF_TensorData(next_obs.get()) : nullptr;
  const int32_t rc = kernel.step(kernel.context, slot, TF_TensorData(actions.get()), copy_to,
                                 static_cast<bool*>(TF_TensorData(done.get())));
  if (rc != 0) {
    Fail(c, TF_INTERNAL, kernel.error(kernel.context));
    return;
  }
  if (kernel.obs != nullptr) {  // the row the step wrote, obs[slot + 1], as the output: no copy
    char* row = kernel.obs + (static_cast<size_t>(slot) + 1) * kernel.row_bytes;
    const TensorHandle alias(TF_NewTensor(kernel.obs_dtype, shape.data(), num_dims, row,
                                          kernel.row_bytes, KeepStorageRow, nullptr));
    if (!alias) {
      Fail(c, TF_INTERNAL, "fastbatch: could not wrap the storage row as a tensor");
      return;
    }
    TF_SetOutput(c, 0, alias.get(), status.get());  // shares the row; our handle goes
    Ok(c, status.get());
  }
}

void ShapeUnknown(TF_ShapeInferenceContext* c, TF_Status* status) {
  TF_ShapeInferenceContextSetUnknownShape(c, status);
}

// Registers the op and its CPU kernel while the library loads (tf.load_op_library collects
// what registers during its dlopen). Registration errors surface there, as TensorFlow's.
struct Registration {
  Registration() {
    TF_OpDefinitionBuilder* op = TF_NewOpDefinitionBuilder(kOpName);
    TF_OpDefinitionBuilderAddInput(op, "t: int32");
    TF_OpDefinitionBuilderAddInput(op, "actions: dtype");
    TF_OpDefinitionBuilderAddOutput(op, "next_obs: obs_dtype");
    TF_OpDefinitionBuilderAddOutput(op, "done: bool");
    TF_OpDefinitionBuilderAddAttr(op, "dtype: {int64, float}");
    TF_OpDefinitionBuilderAddAttr(op, "obs_dtype: {float, double, uint8, int32, int64}");
    TF_OpDefinitionBuilderAddAttr(op, "step_fn: int");
    TF_OpDefinitionBuilderAddAttr(op, "error_fn: int");
    TF_OpDefinitionBuilderAddAttr(op, "context: int");
    TF_OpDefinitionBuilderAddAttr(op, "obs_shape: list(int)");
    TF_OpDefinitionBuilderAddAttr(op, "obs_address: int = 0");
    TF_OpDefinitionBuilderSetIsStateful(op, true);
    TF_OpDefinitionBuilderSetShapeInferenceFunction(op, ShapeUnknown);
    Status status = NewStatus();
    TF_RegisterOpDefinition(op, status.get());
    TF_KernelBuilder* kernel = TF_NewKernelBuilder(kOpName, "CPU", CreateRolloutStep,
                                                   ComputeRolloutStep, DeleteRolloutStep);
    TF_RegisterKernelBuilder(kOpName, kernel, status.get());
  }
};

const Registration kRegistration;

}  // namespace

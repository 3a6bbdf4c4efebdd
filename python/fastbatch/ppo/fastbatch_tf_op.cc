// fastbatch's TensorFlow op: one rollout step of a native pool from inside a TensorFlow graph,
// with no Python in the loop. Compiled on first use against the installed TensorFlow (see
// tf_op.py). It reaches the pool only through plain C function pointers and an opaque context
// that fastbatch._core hands out (attrs step_fn, error_fn, context), so this library links
// against neither _core nor Python.
//
// next_obs holds the storage's new row obs[t + 1], typed like the storage (attr obs_dtype: the
// env's observation dtype; no conversion): the caller casts or scales it. obs_shape ([N, *shape])
// and obs_dtype must describe the bound storage's rows. With attr obs_address (the address of
// obs[0]; the Python side sets it only when obs[0] and every row are 64-byte aligned, as
// TensorFlow requires of any tensor's data) next_obs aliases that row: no copy. The storage
// outlives every tensor of a rollout and row t + 1 is not written again within it (the next
// rollout starts after carry_over), so the alias stays valid while TensorFlow can read it.
// Without it (0), the step function copies the row into a fresh tensor. Actions with a NaN are
// refused (InvalidArgument); an env's failure is an InternalError naming the env.
#include <cmath>
#include <cstdint>

#include "tensorflow/core/framework/allocation_description.pb.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor.h"

namespace {

using StepFn = int32_t (*)(void*, int64_t, const void*, void*, bool*);
using ErrorFn = const char* (*)(void*);

REGISTER_OP("FastbatchRolloutStep")
    .Input("t: int32")
    .Input("actions: dtype")
    .Output("next_obs: obs_dtype")
    .Output("done: bool")
    .Attr("dtype: {int64, float}")
    .Attr("obs_dtype: {float, double, uint8, int32, int64}")
    .Attr("step_fn: int")
    .Attr("error_fn: int")
    .Attr("context: int")
    .Attr("obs_shape: shape")
    .Attr("obs_address: int = 0")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      tensorflow::PartialTensorShape shape;
      TF_RETURN_IF_ERROR(c->GetAttr("obs_shape", &shape));
      tensorflow::shape_inference::ShapeHandle handle;
      TF_RETURN_IF_ERROR(c->MakeShapeFromPartialTensorShape(shape, &handle));
      c->set_output(0, handle);
      c->set_output(1, c->Vector(c->Dim(handle, 0)));
      return absl::OkStatus();
    });

// A row of the rollout storage as a tensor's buffer: the storage owns the memory.
class StorageRow : public tensorflow::TensorBuffer {
 public:
  StorageRow(void* data, size_t bytes) : TensorBuffer(data), bytes_(bytes) {}
  size_t size() const override { return bytes_; }
  TensorBuffer* root_buffer() override { return this; }
  void FillAllocationDescription(tensorflow::AllocationDescription* proto) const override {
    proto->set_requested_bytes(static_cast<int64_t>(bytes_));
    proto->set_allocator_name("fastbatch rollout storage");
  }
  bool OwnsMemory() const override { return false; }

 private:
  size_t bytes_;
};

class RolloutStepOp : public tensorflow::OpKernel {
 public:
  explicit RolloutStepOp(tensorflow::OpKernelConstruction* c) : OpKernel(c) {
    int64_t step = 0, error = 0, context = 0;
    OP_REQUIRES_OK(c, c->GetAttr("step_fn", &step));
    OP_REQUIRES_OK(c, c->GetAttr("error_fn", &error));
    OP_REQUIRES_OK(c, c->GetAttr("context", &context));
    OP_REQUIRES_OK(c, c->GetAttr("obs_shape", &shape_));
    int64_t address = 0;
    OP_REQUIRES_OK(c, c->GetAttr("obs_address", &address));
    obs_ = reinterpret_cast<char*>(address);
    OP_REQUIRES_OK(c, c->GetAttr("obs_dtype", &obs_dtype_));
    row_bytes_ = static_cast<size_t>(shape_.num_elements()) * tensorflow::DataTypeSize(obs_dtype_);
    step_ = reinterpret_cast<StepFn>(step);
    error_ = reinterpret_cast<ErrorFn>(error);
    context_ = reinterpret_cast<void*>(context);
  }

  void Compute(tensorflow::OpKernelContext* c) override {
    const tensorflow::Tensor& t = c->input(0);
    const tensorflow::Tensor& actions = c->input(1);
    if (actions.dtype() == tensorflow::DT_FLOAT) {
      const auto flat = actions.flat<float>();
      for (int64_t i = 0; i < flat.size(); ++i) {
        OP_REQUIRES(c, !std::isnan(flat(i)), absl::InvalidArgumentError("NaN action"));
      }
    }
    const int32_t slot = t.scalar<int32_t>()();
    tensorflow::Tensor* out = nullptr;
    tensorflow::Tensor* done = nullptr;
    if (obs_ == nullptr) OP_REQUIRES_OK(c, c->allocate_output(0, shape_, &out));
    OP_REQUIRES_OK(c, c->allocate_output(1, tensorflow::TensorShape({shape_.dim_size(0)}), &done));
    const int32_t rc = step_(context_, slot, actions.tensor_data().data(),
                             out == nullptr ? nullptr : out->data(), done->flat<bool>().data());
    OP_REQUIRES(c, rc == 0, absl::InternalError(error_(context_)));
    if (obs_ != nullptr) {  // the row the step wrote, obs[slot + 1], as the output: no copy
      auto* row = new StorageRow(obs_ + (static_cast<size_t>(slot) + 1) * row_bytes_, row_bytes_);
      c->set_output(0, tensorflow::Tensor(obs_dtype_, shape_, row));
      row->Unref();  // the tensor holds its own reference
    }
  }

 private:
  StepFn step_ = nullptr;
  ErrorFn error_ = nullptr;
  void* context_ = nullptr;
  tensorflow::TensorShape shape_;
  tensorflow::DataType obs_dtype_ = tensorflow::DT_FLOAT;
  char* obs_ = nullptr;  // obs[0] of the storage, when next_obs aliases its rows
  size_t row_bytes_ = 0;
};

REGISTER_KERNEL_BUILDER(Name("FastbatchRolloutStep").Device(tensorflow::DEVICE_CPU), RolloutStepOp);

}  // namespace

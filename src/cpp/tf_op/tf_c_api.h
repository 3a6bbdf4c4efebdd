// The part of TensorFlow's C API that the rollout op (rollout_op.cc) uses, declared by hand so
// that the op builds with no TensorFlow present. Every function here is a plain C export of
// libtensorflow_framework.so.2 (TensorFlow's kernel and op-registration C API, meant for
// plugins), present with these signatures in every TensorFlow from 2.16 to 2.21: unlike TF's C++
// classes, these do not change ABI between minor versions, so one binary of the op loads into
// all of them. Declare nothing here that TensorFlow 2.16's libtensorflow_framework.so.2 lacks.
//
// Threading and ownership follow TensorFlow's own rules, restated beside each function below:
// a TF_Status or TF_Tensor handed out by a function is the caller's to delete; the
// TF_OpKernelConstruction / TF_OpKernelContext / TF_ShapeInferenceContext pointers that
// TensorFlow passes to a callback are valid only during that call.
//
// C++ only (the op is C++): the enums have a fixed `int` type, as TensorFlow's C enums have
// in its ABI, so a value TensorFlow adds later still fits in them.
#ifndef FASTBATCH_TF_OP_TF_C_API_H_
#define FASTBATCH_TF_OP_TF_C_API_H_

#include <cstddef>
#include <cstdint>

extern "C" {

// Opaque to the op: TensorFlow allocates and frees them.
struct TF_Status;
struct TF_Tensor;
struct TF_OpKernelConstruction;
struct TF_OpKernelContext;
struct TF_KernelBuilder;
struct TF_OpDefinitionBuilder;
struct TF_ShapeInferenceContext;

// ---- tensorflow/c/tf_datatype.h: the dtype codes the op uses (types.proto's DataType).
enum TF_DataType : int {
  TF_FLOAT = 1,
  TF_DOUBLE = 2,
  TF_INT32 = 3,
  TF_UINT8 = 4,
  TF_INT64 = 9,
  TF_BOOL = 10,
};

// sizeof() of one element of `dtype`; 0 for variable-length types.
size_t TF_DataTypeSize(TF_DataType dtype);

// ---- tensorflow/c/tf_status.h (TF_Code: tsl/c/tsl_status.h, error_codes.proto's values).
enum TF_Code : int {
  TF_OK = 0,
  TF_INVALID_ARGUMENT = 3,
  TF_INTERNAL = 13,
};

// A new status (TF_OK), to be freed with TF_DeleteStatus.
TF_Status* TF_NewStatus(void);
void TF_DeleteStatus(TF_Status* status);
// Records (code, message) in `status`; the message is copied.
void TF_SetStatus(TF_Status* status, TF_Code code, const char* message);
TF_Code TF_GetCode(const TF_Status* status);
// Valid until `status` is next changed or deleted.
const char* TF_Message(const TF_Status* status);

// ---- tensorflow/c/tf_tensor.h
// A tensor over `data` (len bytes), which it does not copy when `data` meets TensorFlow's
// alignment (else it copies and calls the deallocator at once). TensorFlow calls
// deallocator(data, len, deallocator_arg) when the last tensor sharing the buffer dies; the
// buffer is marked as not owning its memory, so no kernel writes into it in place of an
// output. Returns null when len is too small for the shape. Free with TF_DeleteTensor.
TF_Tensor* TF_NewTensor(TF_DataType dtype, const int64_t* dims, int num_dims, void* data,
                        size_t len, void (*deallocator)(void* data, size_t len, void* arg),
                        void* deallocator_arg);
// Drops this handle's reference to the buffer (other tensors sharing it keep it alive).
void TF_DeleteTensor(TF_Tensor* tensor);
void* TF_TensorData(const TF_Tensor* tensor);
int64_t TF_TensorElementCount(const TF_Tensor* tensor);

// ---- tensorflow/c/kernels.h: a kernel is three callbacks. TensorFlow calls create_func when it
// builds the kernel (its result is the kernel's state), compute_func(state, context) for each
// run, possibly from several threads at once, and delete_func(state) when the kernel goes.
TF_KernelBuilder* TF_NewKernelBuilder(const char* op_name, const char* device_name,
                                      void* (*create_func)(TF_OpKernelConstruction*),
                                      void (*compute_func)(void*, TF_OpKernelContext*),
                                      void (*delete_func)(void*));
// Takes ownership of `builder`.
void TF_RegisterKernelBuilder(const char* kernel_name, TF_KernelBuilder* builder,
                              TF_Status* status);

// Construction: attrs, and failing the construction (the status is copied).
void TF_OpKernelConstruction_GetAttrInt64(TF_OpKernelConstruction* ctx, const char* attr_name,
                                          int64_t* value, TF_Status* status);
void TF_OpKernelConstruction_GetAttrType(TF_OpKernelConstruction* ctx, const char* attr_name,
                                         TF_DataType* value, TF_Status* status);
// For a list attr, *list_size is its length (total_size: see kernels.h; unused here).
void TF_OpKernelConstruction_GetAttrSize(TF_OpKernelConstruction* ctx, const char* attr_name,
                                         int32_t* list_size, int32_t* total_size,
                                         TF_Status* status);
void TF_OpKernelConstruction_GetAttrInt64List(TF_OpKernelConstruction* ctx, const char* attr_name,
                                              int64_t* values, int max_values, TF_Status* status);
void TF_OpKernelConstruction_Failure(TF_OpKernelConstruction* ctx, TF_Status* status);

// Compute: inputs (a new handle sharing the input's buffer, the caller's to delete), outputs
// (TF_SetOutput shares the tensor's buffer; TF_AllocateOutput returns a new handle to a fresh
// output, the caller's to delete), and failing the run (the status is copied).
void TF_GetInput(TF_OpKernelContext* ctx, int i, TF_Tensor** tensor, TF_Status* status);
void TF_SetOutput(TF_OpKernelContext* ctx, int i, const TF_Tensor* tensor, TF_Status* status);
TF_Tensor* TF_AllocateOutput(TF_OpKernelContext* ctx, int index, TF_DataType dtype,
                             const int64_t* dims, int num_dims, size_t len, TF_Status* status);
void TF_OpKernelContext_Failure(TF_OpKernelContext* ctx, TF_Status* status);

// ---- tensorflow/c/ops.h: an op definition, built from spec strings as REGISTER_OP's are
// ("name: type" inputs and outputs, "name: type = default" attrs).
TF_OpDefinitionBuilder* TF_NewOpDefinitionBuilder(const char* op_name);
void TF_OpDefinitionBuilderAddInput(TF_OpDefinitionBuilder* builder, const char* input_spec);
void TF_OpDefinitionBuilderAddOutput(TF_OpDefinitionBuilder* builder, const char* output_spec);
void TF_OpDefinitionBuilderAddAttr(TF_OpDefinitionBuilder* builder, const char* attr_spec);
void TF_OpDefinitionBuilderSetIsStateful(TF_OpDefinitionBuilder* builder, bool is_stateful);
void TF_OpDefinitionBuilderSetShapeInferenceFunction(
    TF_OpDefinitionBuilder* builder,
    void (*shape_inference_func)(TF_ShapeInferenceContext* ctx, TF_Status* status));
// Takes ownership of `builder`; errors in the definition surface when TensorFlow loads the
// library (tf.load_op_library raises them).
void TF_RegisterOpDefinition(TF_OpDefinitionBuilder* builder, TF_Status* status);
// Marks every output's shape unknown.
void TF_ShapeInferenceContextSetUnknownShape(TF_ShapeInferenceContext* ctx, TF_Status* status);

}  // extern "C"

#endif  // FASTBATCH_TF_OP_TF_C_API_H_

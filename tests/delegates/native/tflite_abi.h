// The parts of TFLite's C ABI (64-bit Linux layout) that the test delegates use, declared for these
// tests only. pytflite's ctypes layouts (src/pytflite/delegates/native/abi.py) are checked against the
// sizes and offsets of these structs by test_native_delegates.py.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {

typedef int TfLiteStatus;  // 0 ok, 1 error
enum { kOk = 0, kError = 1 };
enum { kFloat32Type = 1 };
enum { kBuiltinAdd = 0, kBuiltinMul = 18, kBuiltinSub = 41, kBuiltinDelegate = 51 };
enum { kActNone = 0, kActRelu = 1, kActReluN1To1 = 2, kActRelu6 = 3 };

struct TfLiteIntArray {
  int size;
  int data[];
};

struct TfLiteContext;
struct TfLiteDelegate;
struct TfLiteNode;

struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
};

struct TfLiteQuantization {
  int type;
  void* params;
};

struct TfLiteAffineQuantization {
  void* scale;
  TfLiteIntArray* zero_point;
  int32_t quantized_dimension;
};

struct TfLiteTensor {
  int type;
  void* data;
  TfLiteIntArray* dims;
  TfLiteQuantizationParams params;
  int allocation_type;
  size_t bytes;
  const void* allocation;
  const char* name;
  TfLiteDelegate* delegate;
  int buffer_handle;
  bool data_is_stale;
  bool is_variable;
  TfLiteQuantization quantization;
  void* sparsity;
  const TfLiteIntArray* dims_signature;
};

struct TfLiteNode {
  TfLiteIntArray* inputs;
  TfLiteIntArray* outputs;
  TfLiteIntArray* intermediates;
  TfLiteIntArray* temporaries;
  void* user_data;
  void* builtin_data;
  const void* custom_initial_data;
  int custom_initial_data_size;
  TfLiteDelegate* delegate;
  bool might_have_side_effect;
};

struct TfLiteRegistration {
  void* (*init)(TfLiteContext*, const char* buffer, size_t length);
  void (*free)(TfLiteContext*, void* buffer);
  TfLiteStatus (*prepare)(TfLiteContext*, TfLiteNode*);
  TfLiteStatus (*invoke)(TfLiteContext*, TfLiteNode*);
  const char* (*profiling_string)(const TfLiteContext*, const TfLiteNode*);
  int32_t builtin_code;
  const char* custom_name;
  int version;
  void* registration_external;
  void* async_kernel;
  uint64_t inplace_operator;
};

struct TfLiteDelegateParams {
  TfLiteDelegate* delegate;
  TfLiteIntArray* nodes_to_replace;
  TfLiteIntArray* input_tensors;
  TfLiteIntArray* output_tensors;
};

typedef void* AnyFunction;  // context services the test delegates never call

struct TfLiteContext {
  size_t tensors_size;
  TfLiteStatus (*GetExecutionPlan)(TfLiteContext*, TfLiteIntArray** plan);
  TfLiteTensor* tensors;
  void* impl_;
  TfLiteStatus (*ResizeTensor)(TfLiteContext*, TfLiteTensor*, TfLiteIntArray* new_size);
  void (*ReportError)(TfLiteContext*, const char* format, ...);
  TfLiteStatus (*AddTensors)(TfLiteContext*, int count, int* first_new_index);
  TfLiteStatus (*GetNodeAndRegistration)(TfLiteContext*, int node_index, TfLiteNode**, TfLiteRegistration**);
  TfLiteStatus (*ReplaceNodeSubsetsWithDelegateKernels)(TfLiteContext*, TfLiteRegistration,
                                                        const TfLiteIntArray* nodes, TfLiteDelegate*);
  int recommended_num_threads;
  AnyFunction GetExternalContext;
  AnyFunction SetExternalContext;
  bool allow_fp32_relax_to_fp16;
  void* profiler;
  AnyFunction AllocatePersistentBuffer;
  AnyFunction AllocateBufferForEval;
  AnyFunction RequestScratchBufferInArena;
  AnyFunction GetScratchBuffer;
  AnyFunction ResizeTensorExplicit;
  TfLiteStatus (*PreviewDelegatePartitioning)(TfLiteContext*, const TfLiteIntArray* nodes,
                                              TfLiteDelegateParams** partitions, int* count);
  TfLiteTensor* (*GetTensor)(const TfLiteContext*, int index);
  AnyFunction GetEvalTensor;
  AnyFunction GetModelMetadata;
  AnyFunction AcquireSubgraphContext;
  AnyFunction ReleaseSubgraphContext;
};

struct TfLiteDelegate {
  void* data_;
  TfLiteStatus (*Prepare)(TfLiteContext*, TfLiteDelegate*);
  TfLiteStatus (*CopyFromBufferHandle)(TfLiteContext*, TfLiteDelegate*, int handle, TfLiteTensor*);
  TfLiteStatus (*CopyToBufferHandle)(TfLiteContext*, TfLiteDelegate*, int handle, TfLiteTensor*);
  void (*FreeBufferHandle)(TfLiteContext*, TfLiteDelegate*, int* handle);
  int64_t flags;
  void* opaque_delegate_builder;
};

}  // extern "C"

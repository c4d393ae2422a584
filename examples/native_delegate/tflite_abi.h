// The part of TFLite's C ABI that a delegate needs (the 64-bit Linux layout of LiteRT 2.x's
// tflite/core/c/common.h, and the C++ Profiler of core/api/profiler.h that context->profiler points to),
// declared here so that a delegate builds without a TensorFlow checkout. The names are TFLite's: a delegate
// written against this header builds unchanged against TFLite's own headers (common.h, builtin_ops.h,
// builtin_op_data.h, profiler.h). pytflite's ctypes layouts (src/pytflite/delegates/native/abi.py) and
// its Profiler vtable (profiler.py) are checked against it by tests/delegates/native.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {

typedef enum TfLiteStatus {
  kTfLiteOk = 0,
  kTfLiteError = 1,
  kTfLiteDelegateError = 2,
  kTfLiteApplicationError = 3,
} TfLiteStatus;

typedef enum TfLiteType { kTfLiteNoType = 0, kTfLiteFloat32 = 1, kTfLiteInt32 = 2, kTfLiteInt8 = 9 } TfLiteType;

typedef enum TfLiteAllocationType {
  kTfLiteMemNone = 0,
  kTfLiteMmapRo = 1,
  kTfLiteArenaRw = 2,
  kTfLiteArenaRwPersistent = 3,
  kTfLiteDynamic = 4,
  kTfLitePersistentRo = 5,
} TfLiteAllocationType;

// builtin_ops.h: the operators these delegates look at
enum { kTfLiteBuiltinAdd = 0, kTfLiteBuiltinMul = 18, kTfLiteBuiltinSub = 41, kTfLiteBuiltinDelegate = 51 };

// builtin_op_data.h: a node's fused activation, and the options ADD, SUB and MUL point builtin_data at
typedef enum TfLiteFusedActivation {
  kTfLiteActNone = 0,
  kTfLiteActRelu = 1,
  kTfLiteActReluN1To1 = 2,
  kTfLiteActRelu6 = 3,
} TfLiteFusedActivation;

typedef struct TfLiteAddParams {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteAddParams;

typedef struct TfLiteSubParams {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteSubParams;

typedef struct TfLiteMulParams {
  TfLiteFusedActivation activation;
} TfLiteMulParams;

const int kTfLiteNullBufferHandle = -1;

// TfLiteDelegate::flags
typedef enum TfLiteDelegateFlags {
  kTfLiteDelegateFlagsNone = 0,
  kTfLiteDelegateFlagsAllowDynamicTensors = 1,
  kTfLiteDelegateFlagsRequirePropagatedShapes = 2,
  kTfLiteDelegateFlagsPerOperatorProfiling = 4,  // the runtime does not time the delegate's nodes itself
} TfLiteDelegateFlags;

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
  TfLiteType type;
  void* data;
  TfLiteIntArray* dims;
  TfLiteQuantizationParams params;
  TfLiteAllocationType allocation_type;
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

typedef void* AnyFunction;  // context services these delegates never call

// Shared objects a runtime and its delegates may hand each other (a TPU's device, a thread pool).
enum TfLiteExternalContextType {
  kTfLiteEigenContext = 0,
  kTfLiteGemmLowpContext = 1,
  kTfLiteEdgeTpuContext = 2,
  kTfLiteCpuBackendContext = 3,
};

struct TfLiteExternalContext {
  TfLiteExternalContextType type;
  TfLiteStatus (*Refresh)(TfLiteContext* context);  // e.g. after the thread count changed
};

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
  TfLiteExternalContext* (*GetExternalContext)(TfLiteContext*, TfLiteExternalContextType);
  void (*SetExternalContext)(TfLiteContext*, TfLiteExternalContextType, TfLiteExternalContext*);
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

namespace tflite {

// core/api/profiler.h: what TfLiteContext::profiler points to (NULL when nobody profiles). A C++ object,
// so the virtual methods below, in this order, are its vtable layout, which the runtime provides.
class Profiler {
 public:
  enum class EventType {
    DEFAULT = 1,
    OPERATOR_INVOKE_EVENT = 2,
    DELEGATE_OPERATOR_INVOKE_EVENT = 4,  // metadata1: the node index (the delegate's own numbering)
    DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT = 8,
    GENERAL_RUNTIME_INSTRUMENTATION_EVENT = 16,
  };

  virtual ~Profiler() {}
  // Starts an event; the handle ends it.
  virtual uint32_t BeginEvent(const char* tag, EventType event_type, int64_t event_metadata1,
                              int64_t event_metadata2) = 0;
  uint32_t BeginEvent(const char* tag, EventType event_type, int64_t event_metadata) {
    return BeginEvent(tag, event_type, event_metadata, 0);
  }
  virtual void EndEvent(uint32_t event_handle, int64_t event_metadata1, int64_t event_metadata2) {
    EndEvent(event_handle);
  }
  virtual void EndEvent(uint32_t event_handle) = 0;
  // An event timed elsewhere: for operator events, `metric` is its duration in microseconds.
  virtual void AddEvent(const char* tag, EventType event_type, uint64_t metric, int64_t event_metadata1,
                        int64_t event_metadata2) {}
  virtual void AddEventWithData(const char* tag, EventType event_type, const void* data) {}
};

// An event from its construction to the end of the scope; nothing when `profiler` is NULL.
class ScopedProfile {
 public:
  ScopedProfile(Profiler* profiler, const char* tag, Profiler::EventType event_type = Profiler::EventType::DEFAULT,
                int64_t event_metadata = 0)
      : profiler_(profiler), event_handle_(profiler ? profiler->BeginEvent(tag, event_type, event_metadata) : 0) {}
  ~ScopedProfile() {
    if (profiler_) profiler_->EndEvent(event_handle_);
  }

 protected:
  Profiler* profiler_;
  uint32_t event_handle_;
};

class ScopedDelegateOperatorProfile : public ScopedProfile {
 public:
  ScopedDelegateOperatorProfile(Profiler* profiler, const char* tag, int node_index)
      : ScopedProfile(profiler, tag, Profiler::EventType::DELEGATE_OPERATOR_INVOKE_EVENT,
                      static_cast<uint32_t>(node_index)) {}
};

}  // namespace tflite

// profiler.h's macro: times the rest of the enclosing scope as one op the delegate runs
#define TFLITE_ABI_JOIN_(a, b) a##b
#define TFLITE_ABI_JOIN(a, b) TFLITE_ABI_JOIN_(a, b)
#define TFLITE_SCOPED_DELEGATE_OPERATOR_PROFILE(profiler, tag, node_index) \
  tflite::ScopedDelegateOperatorProfile TFLITE_ABI_JOIN(_profile_, __COUNTER__)((profiler), (tag), (node_index))

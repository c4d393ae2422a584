// A test delegate in the style of TFLite's SimpleDelegate: it claims float32 ADD, SUB and MUL nodes whose
// two inputs have the same number of elements (no broadcasting) and runs each partition in C.
//
// Options (tflite_plugin_create_delegate's key/value strings):
//   ops=ADD,SUB,MUL      which operators it claims (default: all three)
//   max_partitions=N     keep only the N largest partitions, chosen through PreviewDelegatePartitioning
//   fail=TEXT            creation fails, reporting TEXT
//   opaque=1             pretends to be an opaque-API delegate (opaque_delegate_builder set)
//   probe_bad_node=1     Prepare asks for a node that does not exist and fails if the runtime refuses
//   worker_thread=1      Prepare calls the context from a thread of its own and joins it
//   buffer_handles=1     keeps each partition's outputs in buffers of its own, as an accelerator keeps them
//                        in device memory: the output tensors get a buffer_handle, invoke marks them
//                        data_is_stale, and the runtime calls CopyFromBufferHandle before a CPU node reads
//                        one and after invoke; FreeBufferHandle gives the buffers back at teardown
//   scratch=1            each kernel computes into a temporary of its own: its Prepare adds a tensor
//                        (AddTensors), replaces node->temporaries with it, types and sizes it
//   profile=1            each kernel times every node it runs on context->profiler (when there is one),
//                        tagged with the op name, as TFLite's delegates do
//   per_operator_profiling=1  sets kTfLiteDelegateFlagsPerOperatorProfiling: the runtime does not time
//                        the DELEGATE nodes itself
//   allow_dynamic=1      sets kTfLiteDelegateFlagsAllowDynamicTensors: a graph with dynamic tensors takes it
//   external_context=1   Prepare sets its own EdgeTPU external context (none other may be there) and reads
//                        it back, as a TPU delegate shares its device with the runtime; fails with a report
//                        otherwise
//   no_free_handle=1     with buffer_handles=1: no FreeBufferHandle (the buffers go with the delegate)
//   inspect_plan=1       after replacing nodes, Prepare reads every node of the new plan, the DELEGATE nodes
//                        included, and fails if one has a NULL inputs, outputs, intermediates or temporaries
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tflite_abi.h"

namespace {

int live_delegates = 0;
int buffer_copies = 0, buffers_freed = 0;  // CopyFromBufferHandle and FreeBufferHandle calls
char opaque_marker;

struct Options {
  bool add = true, sub = true, mul = true;
  int max_partitions = 0;
  bool probe_bad_node = false, worker_thread = false, buffer_handles = false, scratch = false, profile = false;
  bool per_operator_profiling = false, allow_dynamic = false, no_free_handle = false, inspect_plan = false;
  bool external_context = false;
};

struct ArithDelegate {
  TfLiteDelegate base;  // first, so a TfLiteDelegate* is an ArithDelegate*
  Options options;
  std::map<int, std::vector<float>> buffers;  // by buffer handle
  int next_handle = 0;
};

struct Step {
  int node, op, activation, a, b, out;
};

// A partition's tensors that no node outside it reads have no memory in the runtime (TFLite allocates
// only what its execution plan uses): the kernel keeps those in buffers of its own.
struct Kernel {
  ArithDelegate* delegate;
  std::vector<Step> steps;
  std::vector<int> boundary;  // the partition's input and output tensors
  std::vector<std::vector<float>> own;  // per step: its output's buffer when internal, else empty
  std::vector<int> handles;  // per step: its output's buffer handle (buffer_handles=1), else -1
  int scratch = -1;  // the index of its temporary (scratch=1)
};

bool Claims(const Options& options, int op) {
  return (op == kTfLiteBuiltinAdd && options.add) || (op == kTfLiteBuiltinSub && options.sub) ||
         (op == kTfLiteBuiltinMul && options.mul);
}

size_t Elements(const TfLiteTensor& t) {
  size_t n = 1;
  for (int i = 0; i < t.dims->size; ++i) n *= t.dims->data[i];
  return n;
}

bool Supported(TfLiteContext* context, const Options& options, TfLiteNode* node, TfLiteRegistration* reg) {
  if (!Claims(options, reg->builtin_code) || node->inputs->size != 2 || node->outputs->size != 1) return false;
  const TfLiteTensor& a = context->tensors[node->inputs->data[0]];
  const TfLiteTensor& b = context->tensors[node->inputs->data[1]];
  const TfLiteTensor& out = context->tensors[node->outputs->data[0]];
  return a.type == kTfLiteFloat32 && b.type == kTfLiteFloat32 && out.type == kTfLiteFloat32 &&
         Elements(a) == Elements(b);
}

void* KernelInit(TfLiteContext* context, const char* buffer, size_t) {
  const auto* params = reinterpret_cast<const TfLiteDelegateParams*>(buffer);
  auto* kernel = new Kernel;
  kernel->delegate = reinterpret_cast<ArithDelegate*>(params->delegate);
  for (int i = 0; i < params->nodes_to_replace->size; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, params->nodes_to_replace->data[i], &node, &reg) != kTfLiteOk) {
      delete kernel;
      return reinterpret_cast<void*>(-1);  // TfLiteKernelInitFailed()
    }
    // TfLiteAddParams, TfLiteSubParams and TfLiteMulParams all start with the fused activation
    int activation =
        node->builtin_data ? static_cast<const TfLiteMulParams*>(node->builtin_data)->activation : kTfLiteActNone;
    kernel->steps.push_back({params->nodes_to_replace->data[i], reg->builtin_code, activation, node->inputs->data[0],
                             node->inputs->data[1], node->outputs->data[0]});
  }
  kernel->boundary.assign(params->input_tensors->data, params->input_tensors->data + params->input_tensors->size);
  kernel->boundary.insert(kernel->boundary.end(), params->output_tensors->data,
                          params->output_tensors->data + params->output_tensors->size);
  kernel->own.resize(kernel->steps.size());
  kernel->handles.assign(kernel->steps.size(), -1);
  return kernel;
}

void KernelFree(TfLiteContext*, void* buffer) { delete static_cast<Kernel*>(buffer); }

bool IsBoundary(const Kernel& kernel, int tensor) {
  for (int t : kernel.boundary)
    if (t == tensor) return true;
  return false;
}

TfLiteIntArray* NewIntArray(const std::vector<int>& values) {
  auto* array = static_cast<TfLiteIntArray*>(malloc(sizeof(int) * (1 + values.size())));
  array->size = static_cast<int>(values.size());
  for (size_t i = 0; i < values.size(); ++i) array->data[i] = values[i];
  return array;
}

// A float32 arena temporary as large as the largest step output, as node->temporaries.
TfLiteStatus PrepareScratch(TfLiteContext* context, TfLiteNode* node, Kernel& kernel) {
  if (kernel.scratch < 0 && context->AddTensors(context, 1, &kernel.scratch) != kTfLiteOk) return kTfLiteError;
  free(node->temporaries);  // TfLiteIntArrayFree
  node->temporaries = NewIntArray({kernel.scratch});
  size_t largest = 0;
  for (const Step& step : kernel.steps) largest = std::max(largest, Elements(context->tensors[step.out]));
  TfLiteTensor* scratch = &context->tensors[kernel.scratch];  // AddTensors may have moved the array
  scratch->type = kTfLiteFloat32;
  scratch->allocation_type = kTfLiteArenaRw;
  return context->ResizeTensor(context, scratch, NewIntArray({static_cast<int>(largest)}));
}

TfLiteStatus KernelPrepare(TfLiteContext* context, TfLiteNode* node) {
  auto* kernel = static_cast<Kernel*>(node->user_data);
  if (kernel == nullptr) {
    context->ReportError(context, "ArithDelegate: kernel %s", "not initialized");
    return kTfLiteError;
  }
  if (kernel->delegate->options.scratch && PrepareScratch(context, node, *kernel) != kTfLiteOk) return kTfLiteError;
  ArithDelegate* delegate = kernel->delegate;
  for (size_t i = 0; i < kernel->steps.size(); ++i) {
    int out = kernel->steps[i].out;
    TfLiteTensor& tensor = context->tensors[out];
    bool boundary = IsBoundary(*kernel, out);
    kernel->own[i].assign(boundary ? 0 : Elements(tensor), 0.f);
    if (boundary && delegate->options.buffer_handles) {
      if (kernel->handles[i] < 0) kernel->handles[i] = delegate->next_handle++;
      delegate->buffers[kernel->handles[i]].assign(Elements(tensor), 0.f);
      tensor.buffer_handle = kernel->handles[i];
      tensor.delegate = &delegate->base;
      tensor.data_is_stale = false;
    }
  }
  return kTfLiteOk;
}

// Where a tensor's values are while the partition runs: this partition's own buffers, the delegate's
// buffer for a stale output of another of its partitions, else the runtime's memory.
float* Values(TfLiteContext* context, Kernel& kernel, int tensor) {
  for (size_t i = 0; i < kernel.steps.size(); ++i) {
    if (kernel.steps[i].out != tensor) continue;
    if (!kernel.own[i].empty()) return kernel.own[i].data();
    if (kernel.handles[i] >= 0) return kernel.delegate->buffers[kernel.handles[i]].data();
  }
  TfLiteTensor& t = context->tensors[tensor];
  if (t.delegate == &kernel.delegate->base && t.data_is_stale) return kernel.delegate->buffers[t.buffer_handle].data();
  return static_cast<float*>(t.data);
}

float Activate(int activation, float x) {
  switch (activation) {
    case kTfLiteActRelu: return x < 0.f ? 0.f : x;
    case kTfLiteActRelu6: return x < 0.f ? 0.f : (x > 6.f ? 6.f : x);
    case kTfLiteActReluN1To1: return x < -1.f ? -1.f : (x > 1.f ? 1.f : x);
    default: return x;
  }
}

const char* OpName(int op) { return op == kTfLiteBuiltinAdd ? "ADD" : op == kTfLiteBuiltinSub ? "SUB" : "MUL"; }

TfLiteStatus KernelInvoke(TfLiteContext* context, TfLiteNode* node) {
  auto* kernel = static_cast<Kernel*>(node->user_data);
  auto* profiler = kernel->delegate->options.profile ? static_cast<tflite::Profiler*>(context->profiler) : nullptr;
  for (const Step& step : kernel->steps) {
    TFLITE_SCOPED_DELEGATE_OPERATOR_PROFILE(profiler, OpName(step.op), step.node);
    const TfLiteTensor& a = context->tensors[step.a];
    const TfLiteTensor& b = context->tensors[step.b];
    const TfLiteTensor& out = context->tensors[step.out];
    const float* x = Values(context, *kernel, step.a);
    const float* y = Values(context, *kernel, step.b);
    float* z = Values(context, *kernel, step.out);
    float* result = kernel->scratch >= 0 ? static_cast<float*>(context->tensors[kernel->scratch].data) : z;
    size_t n = Elements(out);
    if (Elements(a) != n || Elements(b) != n || !x || !y || !z || !result) {
      context->ReportError(context, "ArithDelegate: tensor %d has %zu elements, %d has %zu, output %s %zu",
                           step.a, Elements(a), step.b, Elements(b), out.name, n);
      return kTfLiteError;
    }
    for (size_t i = 0; i < n; ++i) {
      float v = step.op == kTfLiteBuiltinAdd ? x[i] + y[i] : step.op == kTfLiteBuiltinSub ? x[i] - y[i] : x[i] * y[i];
      result[i] = Activate(step.activation, v);
    }
    if (result != z) memcpy(z, result, n * sizeof(float));
  }
  for (size_t i = 0; i < kernel->steps.size(); ++i) {
    if (kernel->handles[i] >= 0) context->tensors[kernel->steps[i].out].data_is_stale = true;
  }
  return kTfLiteOk;
}

TfLiteStatus CopyFromBufferHandle(TfLiteContext* context, TfLiteDelegate* base, int handle, TfLiteTensor* tensor) {
  auto& buffers = reinterpret_cast<ArithDelegate*>(base)->buffers;
  auto found = buffers.find(handle);
  if (found == buffers.end() || tensor->data == nullptr || found->second.size() != Elements(*tensor)) {
    context->ReportError(context, "ArithDelegate: cannot copy buffer %d into tensor %s", handle, tensor->name);
    return kTfLiteError;
  }
  memcpy(tensor->data, found->second.data(), found->second.size() * sizeof(float));
  ++buffer_copies;
  return kTfLiteOk;
}

void FreeBufferHandle(TfLiteContext*, TfLiteDelegate* base, int* handle) {
  reinterpret_cast<ArithDelegate*>(base)->buffers.erase(*handle);
  *handle = -1;
  ++buffers_freed;
}

// Every node of the plan has its four tensor lists, as TFLite gives a node from its creation on.
TfLiteStatus InspectPlan(TfLiteContext* context) {
  TfLiteIntArray* plan;
  if (context->GetExecutionPlan(context, &plan) != kTfLiteOk) return kTfLiteError;
  std::vector<int> plan_nodes(plan->data, plan->data + plan->size);
  for (int index : plan_nodes) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, index, &node, &reg) != kTfLiteOk) return kTfLiteError;
    if (!node->inputs || !node->outputs || !node->intermediates || !node->temporaries) {
      context->ReportError(context, "ArithDelegate: node %d (builtin %d) has a NULL tensor list", index,
                           reg->builtin_code);
      return kTfLiteError;
    }
  }
  return kTfLiteOk;
}

TfLiteStatus RefreshDevice(TfLiteContext*) { return kTfLiteOk; }
TfLiteExternalContext device = {kTfLiteEdgeTpuContext, RefreshDevice};

TfLiteStatus ShareDevice(TfLiteContext* context) {
  TfLiteExternalContext* current = context->GetExternalContext(context, kTfLiteEdgeTpuContext);
  if (current != nullptr && current != &device) {  // ours from an earlier Prepare (a resize) is fine
    context->ReportError(context, "ArithDelegate: another EdgeTPU context was set");
    return kTfLiteError;
  }
  context->SetExternalContext(context, kTfLiteEdgeTpuContext, &device);
  if (context->GetExternalContext(context, kTfLiteEdgeTpuContext) != &device) {
    context->ReportError(context, "ArithDelegate: the EdgeTPU context set is not the one read back");
    return kTfLiteError;
  }
  return kTfLiteOk;
}

TfLiteStatus DelegatePrepare(TfLiteContext* context, TfLiteDelegate* base) {
  const Options& options = reinterpret_cast<ArithDelegate*>(base)->options;
  if (options.external_context && ShareDevice(context) != kTfLiteOk) return kTfLiteError;
  if (options.worker_thread) {
    TfLiteStatus status = kTfLiteError;
    std::thread worker([&] {
      TfLiteIntArray* plan;
      status = context->GetExecutionPlan(context, &plan);
      context->ReportError(context, "ArithDelegate worker: %d nodes in the plan", status == kTfLiteOk ? plan->size : -1);
    });
    worker.join();
    if (status != kTfLiteOk) return status;
  }
  if (options.probe_bad_node) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, 100000, &node, &reg) != kTfLiteOk) return kTfLiteError;
  }
  TfLiteIntArray* plan;
  if (context->GetExecutionPlan(context, &plan) != kTfLiteOk) return kTfLiteError;
  std::vector<int> plan_nodes(plan->data, plan->data + plan->size);  // the next call may reuse the array
  std::vector<int> supported;
  for (int index : plan_nodes) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, index, &node, &reg) != kTfLiteOk) return kTfLiteError;
    if (Supported(context, options, node, reg)) supported.push_back(index);
  }
  TfLiteIntArray* claimed = NewIntArray(supported);
  if (options.max_partitions > 0) {  // keep the largest partitions, as SimpleDelegate does
    TfLiteDelegateParams* partitions;
    int count = 0;
    if (context->PreviewDelegatePartitioning(context, claimed, &partitions, &count) != kTfLiteOk) {
      free(claimed);
      return kTfLiteError;
    }
    std::vector<int> chosen;
    std::vector<bool> taken(count, false);
    for (int round = 0; round < options.max_partitions && round < count; ++round) {
      int best = -1;
      for (int p = 0; p < count; ++p) {
        if (!taken[p] && (best < 0 || partitions[p].nodes_to_replace->size > partitions[best].nodes_to_replace->size))
          best = p;
      }
      taken[best] = true;
      const TfLiteIntArray* nodes = partitions[best].nodes_to_replace;
      chosen.insert(chosen.end(), nodes->data, nodes->data + nodes->size);
    }
    free(claimed);
    claimed = NewIntArray(chosen);
  }
  TfLiteRegistration registration = {};
  registration.init = KernelInit;
  registration.free = KernelFree;
  registration.prepare = KernelPrepare;
  registration.invoke = KernelInvoke;
  registration.builtin_code = kTfLiteBuiltinDelegate;
  registration.custom_name = "ArithDelegate";
  registration.version = 1;
  TfLiteStatus status = context->ReplaceNodeSubsetsWithDelegateKernels(context, registration, claimed, base);
  free(claimed);
  if (status != kTfLiteOk || !options.inspect_plan) return status;
  return InspectPlan(context);
}

}  // namespace

extern "C" TfLiteDelegate* tflite_plugin_create_delegate(const char* const* keys, const char* const* values,
                                                          size_t count, void (*report_error)(const char*)) {
  Options options;
  bool opaque = false;
  for (size_t i = 0; i < count; ++i) {
    std::string key = keys[i], value = values[i];
    if (key == "ops") {
      options.add = value.find("ADD") != std::string::npos;
      options.sub = value.find("SUB") != std::string::npos;
      options.mul = value.find("MUL") != std::string::npos;
    } else if (key == "max_partitions") {
      options.max_partitions = atoi(value.c_str());
    } else if (key == "fail") {
      report_error(("ArithDelegate refused: " + value).c_str());
      return nullptr;
    } else if (key == "opaque") {
      opaque = true;
    } else if (key == "probe_bad_node") {
      options.probe_bad_node = true;
    } else if (key == "worker_thread") {
      options.worker_thread = true;
    } else if (key == "buffer_handles") {
      options.buffer_handles = true;
    } else if (key == "scratch") {
      options.scratch = true;
    } else if (key == "profile") {
      options.profile = true;
    } else if (key == "per_operator_profiling") {
      options.per_operator_profiling = true;
    } else if (key == "allow_dynamic") {
      options.allow_dynamic = true;
    } else if (key == "external_context") {
      options.external_context = true;
    } else if (key == "no_free_handle") {
      options.no_free_handle = true;
    } else if (key == "inspect_plan") {
      options.inspect_plan = true;
    } else {
      report_error(("ArithDelegate: unknown option " + key).c_str());
      return nullptr;
    }
  }
  auto* delegate = new ArithDelegate{};
  delegate->base.data_ = delegate;
  delegate->base.Prepare = DelegatePrepare;
  if (options.buffer_handles) {
    delegate->base.CopyFromBufferHandle = CopyFromBufferHandle;
    if (!options.no_free_handle) delegate->base.FreeBufferHandle = FreeBufferHandle;
  }
  delegate->base.opaque_delegate_builder = opaque ? &opaque_marker : nullptr;
  if (options.per_operator_profiling) delegate->base.flags |= kTfLiteDelegateFlagsPerOperatorProfiling;
  if (options.allow_dynamic) delegate->base.flags |= kTfLiteDelegateFlagsAllowDynamicTensors;
  delegate->options = options;
  ++live_delegates;
  return &delegate->base;
}

extern "C" void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate) {
  if (delegate == nullptr) return;  // LiteRT's load_delegate calls this after a failed creation too
  delete reinterpret_cast<ArithDelegate*>(delegate);
  --live_delegates;
}

// For the tests: how many delegates exist, and a variadic ReportError call with many kinds of arguments.
extern "C" int arith_delegate_live_count() { return live_delegates; }

// CopyFromBufferHandle and FreeBufferHandle calls since the last call (buffer_handles=1).
extern "C" void arith_delegate_buffer_counts(int* copies_and_frees) {
  copies_and_frees[0] = buffer_copies;
  copies_and_frees[1] = buffers_freed;
  buffer_copies = buffers_freed = 0;
}

extern "C" void arith_delegate_report(TfLiteContext* context, void (*report)(TfLiteContext*, const char*, ...)) {
  report(context, "int %d uint %u long %ld size %zu hex %#x char %c str %s pct %% f %.3f g %g e %.2e",
         -42, 4000000000u, -1234567890123L, static_cast<size_t>(77), 255, 'Z', "text", 3.14159, 0.5, 12345.678);
  report(context, "%d %d %d %d %d %d %d %d %d %d | %f %f %f %f %f %f %f %f %f %f", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
         1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5);
}

// Calls each virtual method of `profiler`, so that a test can check the vtable slots: an event "begin"
// (metadata 1, 2) around an event "inner" (metadata 7), ended with and without metadata, then AddEvent
// ("added", 250 us, metadata 5, 6) and AddEventWithData.
extern "C" void arith_delegate_profile_all(tflite::Profiler* profiler) {
  using Type = tflite::Profiler::EventType;
  uint32_t outer = profiler->BeginEvent("begin", Type::DEFAULT, 1, 2);
  uint32_t inner = profiler->BeginEvent("inner", Type::DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT, 7);
  profiler->EndEvent(inner);
  profiler->EndEvent(outer, 3, 4);
  profiler->AddEvent("added", Type::OPERATOR_INVOKE_EVENT, 250, 5, 6);
  profiler->AddEventWithData("data", Type::GENERAL_RUNTIME_INSTRUMENTATION_EVENT, nullptr);
}

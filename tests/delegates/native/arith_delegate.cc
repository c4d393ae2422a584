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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tflite_abi.h"

namespace {

int live_delegates = 0;
char opaque_marker;

struct Options {
  bool add = true, sub = true, mul = true;
  int max_partitions = 0;
  bool probe_bad_node = false, worker_thread = false;
};

struct ArithDelegate {
  TfLiteDelegate base;  // first, so a TfLiteDelegate* is an ArithDelegate*
  Options options;
};

struct Step {
  int op, activation, a, b, out;
};

// A partition's tensors that no node outside it reads have no memory in the runtime (TFLite allocates
// only what its execution plan uses): the kernel keeps those in buffers of its own.
struct Kernel {
  std::vector<Step> steps;
  std::vector<int> boundary;  // the partition's input and output tensors
  std::vector<std::vector<float>> own;  // per step: its output's buffer when internal, else empty
};

bool Claims(const Options& options, int op) {
  return (op == kBuiltinAdd && options.add) || (op == kBuiltinSub && options.sub) ||
         (op == kBuiltinMul && options.mul);
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
  return a.type == kFloat32Type && b.type == kFloat32Type && out.type == kFloat32Type &&
         Elements(a) == Elements(b);
}

void* KernelInit(TfLiteContext* context, const char* buffer, size_t) {
  const auto* params = reinterpret_cast<const TfLiteDelegateParams*>(buffer);
  auto* kernel = new Kernel;
  for (int i = 0; i < params->nodes_to_replace->size; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, params->nodes_to_replace->data[i], &node, &reg) != kOk) {
      delete kernel;
      return reinterpret_cast<void*>(-1);  // TfLiteKernelInitFailed()
    }
    // TfLiteAddParams, TfLiteSubParams and TfLiteMulParams all start with the fused activation
    int activation = node->builtin_data ? *static_cast<const int*>(node->builtin_data) : kActNone;
    kernel->steps.push_back(
        {reg->builtin_code, activation, node->inputs->data[0], node->inputs->data[1], node->outputs->data[0]});
  }
  kernel->boundary.assign(params->input_tensors->data, params->input_tensors->data + params->input_tensors->size);
  kernel->boundary.insert(kernel->boundary.end(), params->output_tensors->data,
                          params->output_tensors->data + params->output_tensors->size);
  kernel->own.resize(kernel->steps.size());
  return kernel;
}

void KernelFree(TfLiteContext*, void* buffer) { delete static_cast<Kernel*>(buffer); }

bool IsBoundary(const Kernel& kernel, int tensor) {
  for (int t : kernel.boundary)
    if (t == tensor) return true;
  return false;
}

TfLiteStatus KernelPrepare(TfLiteContext* context, TfLiteNode* node) {
  auto* kernel = static_cast<Kernel*>(node->user_data);
  if (kernel == nullptr) {
    context->ReportError(context, "ArithDelegate: kernel %s", "not initialized");
    return kError;
  }
  for (size_t i = 0; i < kernel->steps.size(); ++i) {
    int out = kernel->steps[i].out;
    kernel->own[i].assign(IsBoundary(*kernel, out) ? 0 : Elements(context->tensors[out]), 0.f);
  }
  return kOk;
}

// Where a tensor's values are while the partition runs.
float* Values(TfLiteContext* context, Kernel& kernel, int tensor) {
  for (size_t i = 0; i < kernel.steps.size(); ++i)
    if (kernel.steps[i].out == tensor && !kernel.own[i].empty()) return kernel.own[i].data();
  return static_cast<float*>(context->tensors[tensor].data);
}

float Activate(int activation, float x) {
  switch (activation) {
    case kActRelu: return x < 0.f ? 0.f : x;
    case kActRelu6: return x < 0.f ? 0.f : (x > 6.f ? 6.f : x);
    case kActReluN1To1: return x < -1.f ? -1.f : (x > 1.f ? 1.f : x);
    default: return x;
  }
}

TfLiteStatus KernelInvoke(TfLiteContext* context, TfLiteNode* node) {
  auto* kernel = static_cast<Kernel*>(node->user_data);
  for (const Step& step : kernel->steps) {
    const TfLiteTensor& a = context->tensors[step.a];
    const TfLiteTensor& b = context->tensors[step.b];
    const TfLiteTensor& out = context->tensors[step.out];
    const float* x = Values(context, *kernel, step.a);
    const float* y = Values(context, *kernel, step.b);
    float* z = Values(context, *kernel, step.out);
    size_t n = Elements(out);
    if (Elements(a) != n || Elements(b) != n || !x || !y || !z) {
      context->ReportError(context, "ArithDelegate: tensor %d has %zu elements, %d has %zu, output %s %zu",
                           step.a, Elements(a), step.b, Elements(b), out.name, n);
      return kError;
    }
    for (size_t i = 0; i < n; ++i) {
      float v = step.op == kBuiltinAdd ? x[i] + y[i] : step.op == kBuiltinSub ? x[i] - y[i] : x[i] * y[i];
      z[i] = Activate(step.activation, v);
    }
  }
  return kOk;
}

TfLiteIntArray* NewIntArray(const std::vector<int>& values) {
  auto* array = static_cast<TfLiteIntArray*>(malloc(sizeof(int) * (1 + values.size())));
  array->size = static_cast<int>(values.size());
  for (size_t i = 0; i < values.size(); ++i) array->data[i] = values[i];
  return array;
}

TfLiteStatus DelegatePrepare(TfLiteContext* context, TfLiteDelegate* base) {
  const Options& options = reinterpret_cast<ArithDelegate*>(base)->options;
  if (options.worker_thread) {
    TfLiteStatus status = kError;
    std::thread worker([&] {
      TfLiteIntArray* plan;
      status = context->GetExecutionPlan(context, &plan);
      context->ReportError(context, "ArithDelegate worker: %d nodes in the plan", status == kOk ? plan->size : -1);
    });
    worker.join();
    if (status != kOk) return status;
  }
  if (options.probe_bad_node) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, 100000, &node, &reg) != kOk) return kError;
  }
  TfLiteIntArray* plan;
  if (context->GetExecutionPlan(context, &plan) != kOk) return kError;
  std::vector<int> plan_nodes(plan->data, plan->data + plan->size);  // the next call may reuse the array
  std::vector<int> supported;
  for (int index : plan_nodes) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, index, &node, &reg) != kOk) return kError;
    if (Supported(context, options, node, reg)) supported.push_back(index);
  }
  TfLiteIntArray* claimed = NewIntArray(supported);
  if (options.max_partitions > 0) {  // keep the largest partitions, as SimpleDelegate does
    TfLiteDelegateParams* partitions;
    int count = 0;
    if (context->PreviewDelegatePartitioning(context, claimed, &partitions, &count) != kOk) {
      free(claimed);
      return kError;
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
  registration.builtin_code = kBuiltinDelegate;
  registration.custom_name = "ArithDelegate";
  registration.version = 1;
  TfLiteStatus status = context->ReplaceNodeSubsetsWithDelegateKernels(context, registration, claimed, base);
  free(claimed);
  return status;
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
    } else {
      report_error(("ArithDelegate: unknown option " + key).c_str());
      return nullptr;
    }
  }
  auto* delegate = new ArithDelegate{};
  delegate->base.data_ = delegate;
  delegate->base.Prepare = DelegatePrepare;
  delegate->base.opaque_delegate_builder = opaque ? &opaque_marker : nullptr;
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

extern "C" void arith_delegate_report(TfLiteContext* context, void (*report)(TfLiteContext*, const char*, ...)) {
  report(context, "int %d uint %u long %ld size %zu hex %#x char %c str %s pct %% f %.3f g %g e %.2e",
         -42, 4000000000u, -1234567890123L, static_cast<size_t>(77), 255, 'Z', "text", 3.14159, 0.5, 12345.678);
  report(context, "%d %d %d %d %d %d %d %d %d %d | %f %f %f %f %f %f %f %f %f %f", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
         1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5);
}

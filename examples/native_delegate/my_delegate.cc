// The delegate guide's MyDelegate ("Implementing a Delegate"), as a plugin library: written in the style of
// TFLite's SimpleDelegate (a delegate object that says which nodes it supports, and a kernel object per
// partition with Init / Prepare / Eval). It claims ADD and SUB nodes whose inputs are all float32, and its
// kernel runs the partition's nodes one by one through `context->tensors`, as the guide's does: the
// partition's inputs and outputs, and the tensors passed between its own nodes.
//
// As in the guide, Eval ignores fused activations and refuses inputs of different sizes with
// kTfLiteDelegateError (it claims a broadcasting ADD anyway: IsNodeSupported does not look at shapes).
// A tensor with no memory is reported by name: TFLite allocates only the tensors its execution plan uses,
// so the tensors passed between a partition's own nodes have none, unless the option
// internal_tensors=dynamic is given: then the kernel's Prepare gives them memory the TFLite way, by
// making them kTfLiteDynamic and resizing them.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tflite_abi.h"

namespace {


int NumElements(const TfLiteTensor& tensor) {
  int n = 1;
  for (int i = 0; i < tensor.dims->size; ++i) n *= tensor.dims->data[i];
  return n;
}

// SimpleDelegate's two interfaces, cut to what MyDelegate needs.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual TfLiteStatus Init(TfLiteContext* context, const TfLiteDelegateParams* params) = 0;
  virtual TfLiteStatus Prepare(TfLiteContext* context, TfLiteNode* node) = 0;
  virtual TfLiteStatus Eval(TfLiteContext* context, TfLiteNode* node) = 0;
};

class Delegate {
 public:
  virtual ~Delegate() = default;
  virtual bool IsNodeSupported(const TfLiteRegistration* registration, const TfLiteNode* node,
                               TfLiteContext* context) const = 0;
  virtual const char* Name() const = 0;
  virtual Kernel* CreateKernel() = 0;
};

// ResizeTensor takes ownership of the new dims, which must come from malloc.
TfLiteIntArray* CopyOfDims(const TfLiteIntArray* dims) {
  auto* copy = static_cast<TfLiteIntArray*>(malloc(sizeof(int) * (1 + dims->size)));
  copy->size = dims->size;
  for (int i = 0; i < dims->size; ++i) copy->data[i] = dims->data[i];
  return copy;
}

class MyDelegateKernel : public Kernel {
 public:
  explicit MyDelegateKernel(bool dynamic_internal_tensors) : dynamic_internal_tensors_(dynamic_internal_tensors) {}

  TfLiteStatus Init(TfLiteContext* context, const TfLiteDelegateParams* params) override {
    const TfLiteIntArray* partition_outputs = params->output_tensors;
    partition_outputs_.assign(partition_outputs->data, partition_outputs->data + partition_outputs->size);
    for (int i = 0; i < params->nodes_to_replace->size; ++i) {
      TfLiteNode* node;
      TfLiteRegistration* registration;
      if (context->GetNodeAndRegistration(context, params->nodes_to_replace->data[i], &node, &registration) != kTfLiteOk)
        return kTfLiteError;
      builtin_code_.push_back(registration->builtin_code);
      inputs_.push_back({node->inputs->data[0], node->inputs->data[1]});
      outputs_.push_back(node->outputs->data[0]);
    }
    return kTfLiteOk;
  }

  TfLiteStatus Prepare(TfLiteContext* context, TfLiteNode*) override {
    if (!dynamic_internal_tensors_) return kTfLiteOk;
    for (int output : outputs_) {
      bool internal = true;
      for (int partition_output : partition_outputs_) internal = internal && output != partition_output;
      if (!internal) continue;
      TfLiteTensor* tensor = &context->tensors[output];
      tensor->allocation_type = kTfLiteDynamic;
      if (context->ResizeTensor(context, tensor, CopyOfDims(tensor->dims)) != kTfLiteOk) return kTfLiteError;
    }
    return kTfLiteOk;
  }

  TfLiteStatus Eval(TfLiteContext* context, TfLiteNode*) override {
    for (size_t i = 0; i < builtin_code_.size(); ++i) {
      TfLiteStatus status = ComputeResult(context, builtin_code_[i], context->tensors[inputs_[i][0]],
                                          context->tensors[inputs_[i][1]], context->tensors[outputs_[i]]);
      if (status != kTfLiteOk) return status;
    }
    return kTfLiteOk;
  }

 private:
  static TfLiteStatus ComputeResult(TfLiteContext* context, int builtin_code, const TfLiteTensor& input_1,
                                    const TfLiteTensor& input_2, TfLiteTensor& output) {
    if (NumElements(input_1) != NumElements(input_2) || NumElements(input_1) != NumElements(output))
      return kTfLiteDelegateError;
    for (const TfLiteTensor* tensor : {&input_1, &input_2, static_cast<const TfLiteTensor*>(&output)}) {
      if (tensor->data == nullptr) {
        context->ReportError(context, "MyDelegate: tensor %s has no memory", tensor->name);
        return kTfLiteError;
      }
    }
    const float* a = static_cast<const float*>(input_1.data);
    const float* b = static_cast<const float*>(input_2.data);
    float* out = static_cast<float*>(output.data);
    for (int i = 0; i < NumElements(input_1); ++i)
      out[i] = builtin_code == kTfLiteBuiltinAdd ? a[i] + b[i] : a[i] - b[i];
    return kTfLiteOk;
  }

  bool dynamic_internal_tensors_;
  std::vector<int> partition_outputs_;
  std::vector<std::vector<int>> inputs_;
  std::vector<int> outputs_;
  std::vector<int> builtin_code_;
};

class MyDelegate : public Delegate {
 public:
  explicit MyDelegate(bool dynamic_internal_tensors) : dynamic_internal_tensors_(dynamic_internal_tensors) {}
  bool IsNodeSupported(const TfLiteRegistration* registration, const TfLiteNode* node,
                       TfLiteContext* context) const override {
    if (registration->builtin_code != kTfLiteBuiltinAdd && registration->builtin_code != kTfLiteBuiltinSub) return false;
    for (int i = 0; i < node->inputs->size; ++i) {
      if (context->tensors[node->inputs->data[i]].type != kTfLiteFloat32) return false;
    }
    return true;
  }
  const char* Name() const override { return "MyDelegate"; }
  Kernel* CreateKernel() override { return new MyDelegateKernel(dynamic_internal_tensors_); }

 private:
  bool dynamic_internal_tensors_;
};

// --- what SimpleDelegate's factory does: the TfLiteDelegate and the kernel registration ----------------

struct Plugin {
  TfLiteDelegate base;  // first, so a TfLiteDelegate* is a Plugin*
  Delegate* delegate;
};

Delegate* Owner(const TfLiteDelegateParams* params) {
  return reinterpret_cast<Plugin*>(params->delegate)->delegate;
}

void* KernelInit(TfLiteContext* context, const char* buffer, size_t) {
  const auto* params = reinterpret_cast<const TfLiteDelegateParams*>(buffer);
  Kernel* kernel = Owner(params)->CreateKernel();
  if (kernel->Init(context, params) != kTfLiteOk) {
    delete kernel;
    return reinterpret_cast<void*>(-1);  // TfLiteKernelInitFailed()
  }
  return kernel;
}

void KernelFree(TfLiteContext*, void* buffer) { delete static_cast<Kernel*>(buffer); }

TfLiteStatus KernelPrepare(TfLiteContext* context, TfLiteNode* node) {
  return static_cast<Kernel*>(node->user_data)->Prepare(context, node);
}

TfLiteStatus KernelEval(TfLiteContext* context, TfLiteNode* node) {
  return static_cast<Kernel*>(node->user_data)->Eval(context, node);
}

TfLiteStatus DelegatePrepare(TfLiteContext* context, TfLiteDelegate* base) {
  const Delegate* delegate = reinterpret_cast<Plugin*>(base)->delegate;
  TfLiteIntArray* plan;
  if (context->GetExecutionPlan(context, &plan) != kTfLiteOk) return kTfLiteError;
  std::vector<int> supported(1);  // a TfLiteIntArray: the count, then the node indices
  for (int i = 0; i < plan->size; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* registration;
    if (context->GetNodeAndRegistration(context, plan->data[i], &node, &registration) != kTfLiteOk) return kTfLiteError;
    if (delegate->IsNodeSupported(registration, node, context)) supported.push_back(plan->data[i]);
  }
  supported[0] = static_cast<int>(supported.size()) - 1;
  TfLiteRegistration registration = {};
  registration.init = KernelInit;
  registration.free = KernelFree;
  registration.prepare = KernelPrepare;
  registration.invoke = KernelEval;
  registration.builtin_code = kTfLiteBuiltinDelegate;
  registration.custom_name = delegate->Name();
  registration.version = 1;
  return context->ReplaceNodeSubsetsWithDelegateKernels(
      context, registration, reinterpret_cast<TfLiteIntArray*>(supported.data()), base);
}

}  // namespace

extern "C" TfLiteDelegate* tflite_plugin_create_delegate(const char* const* keys, const char* const* values,
                                                          size_t count, void (*)(const char*)) {
  bool dynamic_internal_tensors = false;
  for (size_t i = 0; i < count; ++i) {
    dynamic_internal_tensors |= !strcmp(keys[i], "internal_tensors") && !strcmp(values[i], "dynamic");
  }
  auto* plugin = new Plugin{};
  plugin->base.data_ = plugin;
  plugin->base.Prepare = DelegatePrepare;
  plugin->delegate = new MyDelegate(dynamic_internal_tensors);
  return &plugin->base;
}

extern "C" void tflite_plugin_destroy_delegate(TfLiteDelegate* base) {
  if (base == nullptr) return;
  auto* plugin = reinterpret_cast<Plugin*>(base);
  delete plugin->delegate;
  delete plugin;
}

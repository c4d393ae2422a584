// A delegate that claims nothing and counts what happens to it, for the lifecycle tests: the behaviour
// LiteRT's own Python tests expect of their test delegate (how many delegates were created, destroyed and
// asked to prepare a graph, options passed through, a failing creation), and the order of destructions.
//
// Options: options_counter=N adds N to a counter; fail=... makes creation fail with a report;
// claim_first_node=1 replaces the execution plan's first node by a kernel that computes nothing (the tests
// never invoke it) and reports when it is freed, to show that kernels go before their delegate.
#include <cstdio>
#include <cstring>

#include "tflite_abi.h"

namespace {

int created = 0, destroyed = 0, prepared = 0, options_counter = 0;
void (*on_event)(const char*) = nullptr;
char claims_first_node;  // TfLiteDelegate::data_ points here when the delegate claims the first node

void Event(const char* what) {
  if (on_event) on_event(what);
}

void* KernelInit(TfLiteContext*, const char*, size_t) { return new int(0); }

void KernelFree(TfLiteContext*, void* buffer) {
  delete static_cast<int*>(buffer);
  Event("kernel freed");
}

TfLiteStatus Prepare(TfLiteContext* context, TfLiteDelegate* delegate) {
  ++prepared;
  if (delegate->data_ != &claims_first_node) return kTfLiteOk;
  TfLiteIntArray* plan;
  if (context->GetExecutionPlan(context, &plan) != kTfLiteOk || plan->size == 0) return kTfLiteError;
  int first[2] = {1, plan->data[0]};  // a TfLiteIntArray of one node
  TfLiteRegistration registration = {};
  registration.init = KernelInit;
  registration.free = KernelFree;
  registration.builtin_code = kTfLiteBuiltinDelegate;
  registration.custom_name = "CountingDelegate";
  registration.version = 1;
  return context->ReplaceNodeSubsetsWithDelegateKernels(context, registration,
                                                        reinterpret_cast<TfLiteIntArray*>(first), delegate);
}

}  // namespace

extern "C" {

TfLiteDelegate* tflite_plugin_create_delegate(const char* const* keys, const char* const* values, size_t count,
                                              void (*report_error)(const char*)) {
  ++created;
  bool claim = false;
  for (size_t i = 0; i < count; ++i) {
    int value;
    if (std::strcmp(keys[i], "options_counter") == 0 && std::sscanf(values[i], "%d", &value) == 1) {
      options_counter += value;
    } else if (std::strcmp(keys[i], "fail") == 0) {
      if (report_error) report_error("CountingDelegate: creation failed as asked.");
      return nullptr;
    } else if (std::strcmp(keys[i], "claim_first_node") == 0) {
      claim = true;
    }
  }
  auto* delegate = new TfLiteDelegate{};
  delegate->Prepare = Prepare;
  delegate->data_ = claim ? &claims_first_node : nullptr;
  return delegate;
}

// LiteRT's load_delegate also calls this with NULL after a failed creation: counted, as in LiteRT's test.
void tflite_plugin_destroy_delegate(TfLiteDelegate* delegate) {
  ++destroyed;
  delete delegate;
  Event("delegate destroyed");
}

// Zeroes the counts; `callback` (or NULL) is told of each kernel freed and each delegate destroyed.
void counting_delegate_reset(void (*callback)(const char*)) {
  created = destroyed = prepared = options_counter = 0;
  on_event = callback;
}

// created, destroyed, prepared, options_counter
void counting_delegate_counts(int* counts) {
  counts[0] = created;
  counts[1] = destroyed;
  counts[2] = prepared;
  counts[3] = options_counter;
}

}  // extern "C"

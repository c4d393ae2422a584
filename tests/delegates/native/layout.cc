// Prints the size of each struct in tflite_abi.h and the offset of each field, one "Name.field N" line
// each, for the comparison with pytflite's ctypes layouts.
#include <cstddef>
#include <cstdio>

#include "tflite_abi.h"

#define SIZE(T) std::printf("%s %zu\n", #T, sizeof(T));
#define FIELD(T, f) std::printf("%s.%s %zu\n", #T, #f, offsetof(T, f));

int main() {
  SIZE(TfLiteQuantizationParams) SIZE(TfLiteQuantization) SIZE(TfLiteAffineQuantization)
  SIZE(TfLiteTensor) SIZE(TfLiteNode) SIZE(TfLiteRegistration) SIZE(TfLiteDelegateParams)
  SIZE(TfLiteContext) SIZE(TfLiteDelegate)
  FIELD(TfLiteTensor, data) FIELD(TfLiteTensor, dims) FIELD(TfLiteTensor, params)
  FIELD(TfLiteTensor, allocation_type) FIELD(TfLiteTensor, bytes) FIELD(TfLiteTensor, name)
  FIELD(TfLiteTensor, delegate) FIELD(TfLiteTensor, buffer_handle) FIELD(TfLiteTensor, data_is_stale)
  FIELD(TfLiteTensor, is_variable) FIELD(TfLiteTensor, quantization) FIELD(TfLiteTensor, sparsity)
  FIELD(TfLiteTensor, dims_signature)
  FIELD(TfLiteNode, user_data) FIELD(TfLiteNode, builtin_data) FIELD(TfLiteNode, custom_initial_data_size)
  FIELD(TfLiteNode, delegate) FIELD(TfLiteNode, might_have_side_effect)
  FIELD(TfLiteRegistration, builtin_code) FIELD(TfLiteRegistration, custom_name) FIELD(TfLiteRegistration, version)
  FIELD(TfLiteRegistration, inplace_operator)
  FIELD(TfLiteContext, tensors) FIELD(TfLiteContext, ReportError) FIELD(TfLiteContext, recommended_num_threads)
  FIELD(TfLiteContext, GetExternalContext) FIELD(TfLiteContext, allow_fp32_relax_to_fp16)
  FIELD(TfLiteContext, profiler) FIELD(TfLiteContext, PreviewDelegatePartitioning)
  FIELD(TfLiteContext, GetTensor) FIELD(TfLiteContext, ReleaseSubgraphContext)
  FIELD(TfLiteDelegate, flags) FIELD(TfLiteDelegate, opaque_delegate_builder)
  FIELD(TfLiteAffineQuantization, quantized_dimension)
  return 0;
}

"""Native TFLite delegates: shared libraries written in C/C++ against TFLite's C structs, run by
pytflite through the C ABI (issue #19). `load_delegate("libfoo.so", options)` returns a NativeDelegate.

    abi.py           ctypes layouts of common.h's structs (64-bit Linux), TfLiteType codes
    builtin_data.py  node options as the C option structs (TfLiteConvParams, ...)
    printf.py        ReportError's variadic arguments, formatted
    context.py       NativeContext: a TfLiteContext over a subgraph, tensors pointing into its memory
    profiler.py      NativeProfiler: the tflite::Profiler C++ object context->profiler points to
    kernel.py        a DELEGATE node running the delegate's C kernel
    library.py       NativeDelegate: the plugin library, its TfLiteDelegate, and its teardown
"""

from .library import LibraryNotOpened, NativeDelegate, NativeLoadError

__all__ = ["LibraryNotOpened", "NativeDelegate", "NativeLoadError"]

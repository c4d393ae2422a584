// A shared library that is not a delegate plugin: it exports neither tflite_plugin_* function.
extern "C" int not_a_delegate() { return 0; }

"""The ONNX Runtime delegate's parts: graph.py (the ONNX graph of one partition, layouts and QDQ),
registry.py (the translator table), ops_nn.py / ops_math.py / ops_array.py (translators by op family),
nchwc.py (rewrites of a partition's graph for the CPU provider's blocked NCHWc kernels), session.py
(sessions, float16 relaxation, IO binding) and delegate.py (the delegate and its kernel).
Import `pytflite.delegates.onnxruntime` instead: this package needs the `ort` extra.
"""

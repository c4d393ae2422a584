"""Models as bytes: the checked flatbuffer reader, the verifier, option tables, loading once per model,
and ModelBuilder, which writes .tflite files."""

"""The runtime core: tensors, nodes, registrations, the context and the Subgraph state machine (TFLite's
common.h and subgraph.cc), with arena planning, folding, delegation and the step lists invoke runs."""

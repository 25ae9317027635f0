"""The model as fpgaprune takes it, before any stage changes it: its files (`files`, `keras_json`, `loading`),
the built-in examples (`architectures`), its layers' kinds (`layer_kinds`; their graph is read by the front ends,
`frontends/layer_graph.py`) and the task its outputs say it solves (`task`)."""

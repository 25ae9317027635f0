"""The model as fpgaprune takes it, before any stage changes it: its files (`files`, `keras_json`, `loading`),
the built-in examples (`architectures`), its layers' graph and kinds (`layer_graph`, `layer_kinds`) and the task
its outputs say it solves (`task`)."""

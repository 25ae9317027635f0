"""Work that runs in processes of its own, importing only numpy, ctypes and da4ml (never TensorFlow), so that
its memory and time can be watched and bounded: a circuit's trace and synthesis (`circuit.py`), and chunks of
a C-simulation (`csim_chunks.py`)."""

"""The PyTorch front end: `torch.nn.Module` models, seen layer by layer through views (`layers.py`: a module's
weights in fpgaprune's layout, a kernel's outputs last), held with parametrizations that live in the module
(`holds.py`), so holds stay exact in the user's own training loop. Its modules import torch; nothing else in
fpgaprune does."""

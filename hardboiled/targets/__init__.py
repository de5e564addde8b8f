"""The accelerators as data: Intel AMX (``amx``) and NVIDIA Tensor Cores
(``wmma``): shapes, element types, limits and the intrinsics themselves."""

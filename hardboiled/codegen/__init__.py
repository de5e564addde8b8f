"""Code generation: a shared C-family emitter (``c_family``), the C/AMX
backend (``c``), the CUDA/WMMA backend (``cuda``), the kernel ABI
(``abi``), the compiler drivers (``toolchain``) and the runtime headers."""

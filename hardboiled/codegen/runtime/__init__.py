"""C runtime headers for generated code: hb_amx.h (native AMX or the portable emulation)."""

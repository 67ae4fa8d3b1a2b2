"""The host C library's float functions (glibc's expf, tanhf, ...), called one value at a time as the fp32 kernels
call them on the device (newlib there: the two agree on nearly every input, not on all: 1 ulp apart): the int8
reference's emulation of an island whose kernel calls them (fp32_emulation.py, recurrent_f32.py)."""
from __future__ import annotations

# fp32 kernels that are one C library call per element (kernels_portable/op_<name>.cpp: unary_to_float
# with asinf(x), ...): the same call here, not torch's (vectorized) implementation, which differs in the
# last bits.
LIBM_UNARY = {f"aten::{name}.out": f"{name}f" for name in (
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "erf", "exp", "expm1", "log", "log10",
    "log1p", "log2", "sin", "sinh", "sqrt", "tan")}


def libm():
    """ctypes' libm: expf, logf, tanhf and LIBM_UNARY's functions typed float -> float, powf (float, float) -> float."""
    import ctypes
    import ctypes.util

    if not hasattr(libm, "lib"):
        lib = ctypes.CDLL(ctypes.util.find_library("m"))
        for name in ("expf", "logf", "tanhf") + tuple(LIBM_UNARY.values()):
            getattr(lib, name).restype = ctypes.c_float
            getattr(lib, name).argtypes = [ctypes.c_float]
        lib.powf.restype = ctypes.c_float
        lib.powf.argtypes = [ctypes.c_float, ctypes.c_float]
        libm.lib = lib
    return libm.lib

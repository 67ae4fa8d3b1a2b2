"""What mcu-gen needs to know of an ATen operator and where it came from: errors that name the operator and
the user's source line, the out-variant of an op and ExecuTorch's argument convention (schema order,
defaults filled in), dtype names."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import torch
import torch.fx

from mcu_gen.capture.model_file import ModelSpec, StructuredModule
from mcu_gen.errors import McuGenError
from mcu_gen.program.ir import DTYPE_CODES

class ExportError(McuGenError):
    """The model cannot be captured (torch.export failed, dynamic shapes, unsupported inputs)."""


class UnsupportedOperatorError(ExportError):
    """An operator that mcu-gen (or the target's kernel set) cannot run."""


# c10::MemoryFormat / c10::Layout numbering, as ExecuTorch stores them (Int values).
MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1, torch.channels_last: 2,
                   torch.channels_last_3d: 3}
LAYOUTS = {torch.strided: 0}


# Floating-point dtypes a model may hold that no kernel computes in: a microcontroller's FPU, if it has one, is
# single precision, and the kernels take float32, the integer types and bool.
UNSUPPORTED_FLOATS = (torch.float64, torch.float16, torch.bfloat16)


def torch_dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).replace("torch.", "")
    if name not in DTYPE_CODES:
        raise ExportError(f"dtype {dtype} is not supported")
    return name


def op_name(op) -> str:
    """'aten::relu.out' for an OpOverload."""
    s = op._schema
    return f"{s.name}.{s.overload_name or 'default'}"


class Lifted(int):
    """The value index of a number made a constant tensor (Fp32Lowering._numbers_as_tensors)."""


# -- out-variant lookup --------------------------------------------------------------------------
def is_out_arg(a) -> bool:
    return a.kwarg_only and a.alias_info is not None and a.alias_info.is_write


def is_number(v) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, (torch.fx.Node, Lifted))


def find_out_variant(op, bound: Optional[dict] = None):
    """The out-variant OpOverload of functional ``op`` (same name, same non-out arguments,
    plus kwarg-only out arguments). A Python number passed where the schema says Tensor
    selects the Scalar variant (mul.Tensor(x, 2) -> mul.Scalar_out)."""
    bound = bound or {}
    wanted = []
    for a in op._schema.arguments:
        t = str(a.type)
        if t == "Tensor" and is_number(bound.get(a.name)):
            t = "number"  # how the schema parser spells Scalar
        wanted.append((a.name, t))
    packet = op.overloadpacket
    for drop in ((), TENSOR_OPTIONS):
        if drop and not _options_the_out_carries(bound):
            break
        want = [w for w in wanted if w[0] not in drop]
        for name in packet.overloads():
            ov = getattr(packet, name)
            args = ov._schema.arguments
            outs = [a for a in args if is_out_arg(a)]
            if not outs:
                continue
            rest = [(a.name, str(a.type)) for a in args if not is_out_arg(a)]
            if rest == want:
                return ov
    return None


# ATen's TensorOptions arguments. An out-variant has none of them (_to_copy.out, full.out, ...): the out
# tensor carries the dtype, and the device only has strided tensors in its own memory.
TENSOR_OPTIONS = ("dtype", "layout", "device", "pin_memory")


def _options_the_out_carries(bound: dict) -> bool:
    """Whether a call's TensorOptions say nothing an out tensor on the device cannot: any dtype (the out's),
    a strided layout, the CPU (or no) device, no pinned memory."""
    device = bound.get("device")
    return (bound.get("layout") in (None, torch.strided) and not bound.get("pin_memory")
            and (device is None or torch.device(device).type == "cpu"))


def find_functional(out_op):
    """The functional OpOverload of an out-variant (inverse of find_out_variant)."""
    wanted = [(a.name, str(a.type)) for a in out_op._schema.arguments if not is_out_arg(a)]
    packet = out_op.overloadpacket
    for name in packet.overloads():
        ov = getattr(packet, name)
        args = ov._schema.arguments
        if any(is_out_arg(a) for a in args) or ov._schema.is_mutable:
            continue
        if [(a.name, str(a.type)) for a in args] == wanted:
            return ov
    return None


def bind_args(schema, args, kwargs) -> dict:
    """Map argument name -> value for a call, with schema defaults filled in."""
    bound = {}
    for i, a in enumerate(schema.arguments):
        if not a.kwarg_only and i < len(args):
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
        elif is_out_arg(a):
            continue
        else:
            raise ExportError(f"{schema.name}: missing argument {a.name}")
    return bound


# -- source lines --------------------------------------------------------------------------------
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n([^\n]*)')
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)
_MCU_GEN_DIR = str(Path(__file__).resolve().parents[1])  # an fp32 island's graph is traced from mcu-gen's own code


def source_line(node: torch.fx.Node, user_file: Optional[str]) -> str:
    """'path:line: code' of the last frame of the node's stack trace in the user's file."""
    trace = node.meta.get("stack_trace") or ""
    frames = [(f, int(n), code.strip()) for f, n, code in _FRAME.findall(trace)]
    user_made = [fr for fr in frames if not fr[0].startswith(_MCU_GEN_DIR + "/")]
    if not user_made:
        return ""  # an fp32 island's node: its caller names the user's line
    frames = user_made
    user = str(Path(user_file).resolve()) if user_file else None
    mine = [fr for fr in frames if user and _same_file(fr[0], user)]
    if mine:
        f, n, code = mine[-1]
        return f"{f}:{n}: {code}"
    # No frame in the user's file (e.g. an nn.Sequential): the innermost frame outside
    # torch, else the innermost frame, plus the submodule that made the op.
    f, n, code = ([fr for fr in frames if not fr[0].startswith(_TORCH_DIR)] or frames)[-1]
    stack = node.meta.get("nn_module_stack") or {}
    module = ""
    if stack:
        path, cls = list(stack.values())[-1]
        cls = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
        module = f" [module {path or '<root>'}: {cls.rsplit('.', 1)[-1]}]"
    return f"{f}:{n}: {code}{module}"


def _same_file(a: str, b: str) -> bool:
    try:
        return str(Path(a).resolve()) == b
    except OSError:
        return a == b


def user_file(spec: ModelSpec) -> Optional[str]:
    if spec.path:
        return spec.path
    if spec.module is not None:
        import inspect

        module = spec.module.module if isinstance(spec.module, StructuredModule) else spec.module
        try:
            return inspect.getsourcefile(type(module))
        except TypeError:
            return None
    return None

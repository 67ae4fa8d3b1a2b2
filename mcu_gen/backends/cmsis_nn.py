"""CMSIS-NN as a kernel backend: finding it, choosing it, sizing its scratch, building it in.

    root, how = locate(path)            # --cmsis-nn PATH, $MCU_GEN_CMSIS_NN, cmsis-pack-manager
    choice = choose_backend("auto", board, root)     # BackendChoice(backend, warning)
    kernels = backend_kernels(program.operators, "cmsis-nn")
    size_scratch(program, board.cmsis_nn_variant)    # before planning
    add_to_project(project_dir, kernels, root)       # copies the needed CMSIS-NN sources

The adapters (kernels_cmsis_nn/op_cmsis_nn_*.cpp) implement the cortex_m:: operators with
the portable kernels' names and signatures, so a program runs on either backend; each may fall
back to the portable kernel of its operator, which is therefore always linked beside it.
CMSIS-NN itself is never part of this repository: it is copied into the generated firmware
project (build output) at build time, only the .c files the selected adapters reach.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.errors import McuGenError
from mcu_gen.paths import KERNELS_CMSIS_NN, KERNELS_PORTABLE

ENV_VAR = "MCU_GEN_CMSIS_NN"
PACK = "ARM.CMSIS-NN"
VARIANTS = ("scalar", "dsp", "mve")
BACKENDS = ("auto", "portable", "cmsis-nn")

HOW_TO_PROVIDE = (
    "provide CMSIS-NN with --cmsis-nn PATH (a checkout of github.com/ARM-software/CMSIS-NN or an unpacked "
    f"{PACK} pack, with Include/ and Source/), or set {ENV_VAR}=PATH, or `pip install cmsis-pack-manager` on a "
    "connected machine"
)
GAIN = ("with it, int8 layers can run on CMSIS-NN's DSP/MVE kernels (bit-identical outputs); without it, "
        "`--kernels auto` (the default) runs the layers it covers on mcu-gen's generated kernels "
        "(docs/cycles.md has both builds' estimated cycles)")


class CmsisNnError(McuGenError, RuntimeError):
    """CMSIS-NN is needed and cannot be found or used; the message says what to do."""


# --- finding CMSIS-NN ------------------------------------------------------------------------

def is_cmsis_nn(path) -> bool:
    p = Path(path)
    return (p / "Include" / "arm_nnfunctions.h").is_file() and (p / "Source").is_dir()


def _pack_root(path: Path) -> Path | None:
    """A CMSIS-NN tree at path or one level below (packs unpack into a versioned folder)."""
    if is_cmsis_nn(path):
        return path
    for sub in sorted(path.glob("*"), reverse=True):
        if sub.is_dir() and is_cmsis_nn(sub):
            return sub
    return None


def from_pack_manager() -> tuple[Path | None, str]:
    """The ARM.CMSIS-NN pack from cmsis-pack-manager's cache (downloading it needs network;
    cmsis-pack-manager fails silently without it, so what it returns is checked here)."""
    try:
        import cmsis_pack_manager  # type: ignore
    except ImportError:
        return None, "cmsis-pack-manager is not installed (pip install cmsis-pack-manager)"
    try:
        cache = cmsis_pack_manager.Cache(True, False)
        for root in (Path(cache.data_path), Path(cache.data_path).parent):
            for cand in sorted(root.glob("ARM/CMSIS-NN/*"), reverse=True):
                got = _pack_root(cand)
                if got is not None:
                    return got, f"cmsis-pack-manager cache ({got})"
        # Not cached: ask it to fetch the index and the pack. Without network this returns
        # without an error and without files, which the check below catches.
        cache.cache_descriptors()
        packs = [p for p in cache.index.values() if p.get("name") == "CMSIS-NN" and p.get("vendor") == "ARM"]
        if packs:
            cache.download_pack_list(packs[-1:])
            for cand in sorted(Path(cache.data_path).glob("ARM/CMSIS-NN/*"), reverse=True):
                got = _pack_root(cand)
                if got is not None:
                    return got, f"cmsis-pack-manager ({got})"
    except Exception as e:  # its errors are not part of a stable API
        return None, f"cmsis-pack-manager failed: {e}"
    return None, f"cmsis-pack-manager returned no {PACK} pack (no network?)"


def locate(path=None, use_pack_manager: bool = True) -> tuple[Path | None, str]:
    """(CMSIS-NN root or None, how it was found or why not). An explicit path that is not
    CMSIS-NN raises CmsisNnError."""
    if path is not None:
        root = _pack_root(Path(path))
        if root is None:
            raise CmsisNnError(f"--cmsis-nn {path}: no CMSIS-NN there (needs Include/arm_nnfunctions.h and Source/)")
        return root, f"--cmsis-nn {root}"
    env = os.environ.get(ENV_VAR)
    if env:
        root = _pack_root(Path(env))
        if root is None:
            raise CmsisNnError(f"{ENV_VAR}={env}: no CMSIS-NN there (needs Include/arm_nnfunctions.h and Source/)")
        return root, f"{ENV_VAR}={root}"
    if use_pack_manager:
        return from_pack_manager()
    return None, f"not given (--cmsis-nn / {ENV_VAR})"


# --- backend choice ---------------------------------------------------------------------------

class CmsisNnWarning(UserWarning):
    """--backend auto fell back to the portable int8 kernels."""


@dataclass
class BackendChoice:
    backend: str  # "portable" or "cmsis-nn"
    root: Path | None = None
    how: str = ""
    warning: str = ""
    requested: str = "auto"
    variant: str = ""
    selection: object = None  # kernels.Selection with the adapters, when backend is cmsis-nn
    scratch_bytes: int = 0

    def report(self) -> dict:
        """The report.json entry."""
        out = {"requested": self.requested, "chosen": self.backend}
        if self.variant:
            out["cmsis_nn_variant"] = self.variant
        if self.root is not None:
            out["cmsis_nn"] = str(self.root)
            out["cmsis_nn_scratch_bytes"] = self.scratch_bytes
        if self.how:
            out["how"] = self.how
        if self.warning:
            out["warning"] = self.warning
        return out


def choose_backend(requested: str, board, root: Path | None, how: str = "") -> BackendChoice:
    """auto: CMSIS-NN when the board has a CMSIS-NN variant and the sources are there, else
    portable with a warning; cmsis-nn: CMSIS-NN or CmsisNnError; portable: portable."""
    if requested not in BACKENDS:
        raise CmsisNnError(f"--backend {requested}: choose one of {', '.join(BACKENDS)}")
    if requested == "portable":
        return BackendChoice("portable")
    variant = board_variant(board)
    if variant is None:
        msg = f"board {board.name} has no CMSIS-NN variant (core {board.core})"
        if requested == "cmsis-nn":
            raise CmsisNnError(msg)
        return BackendChoice("portable", how=msg)
    if root is None:
        msg = f"CMSIS-NN not found ({how}); {HOW_TO_PROVIDE}. {GAIN[0].upper()}{GAIN[1:]}."
        if requested == "cmsis-nn":
            raise CmsisNnError("--backend cmsis-nn: " + msg)
        # One line on every int8 build without CMSIS-NN: what it changes and how to give it (docs/cmsis_nn.md
        # has the rest); the error of --backend cmsis-nn above says it all.
        return BackendChoice("portable", how=how, warning=(
            f"int8 operators run on the portable kernels where mcu-gen's generated kernels do not cover them: "
            f"CMSIS-NN not found ({how}); give it with --cmsis-nn PATH or {ENV_VAR}=PATH (docs/cmsis_nn.md; "
            f"both builds' cycles: docs/cycles.md)"))
    return BackendChoice("cmsis-nn", root=root, how=how)


def board_variant(board) -> str | None:
    """The board's CMSIS-NN variant: board.toml cmsis_nn_variant, else from dsp/mve flags."""
    if board.core == "host" or board.emulator.kind == "native":
        return "scalar" if board.cmsis_nn_variant == "scalar" else None
    if board.cmsis_nn_variant:
        if board.cmsis_nn_variant not in VARIANTS:
            raise CmsisNnError(f"board {board.name}: cmsis_nn_variant must be one of {VARIANTS}")
        return board.cmsis_nn_variant
    return "mve" if board.mve else ("dsp" if board.dsp else "scalar")


# --- kernels ---------------------------------------------------------------------------------

def find_kernels() -> dict:
    """op name -> Kernel of the CMSIS-NN adapters."""
    return kernel_registry.find_kernels(KERNELS_CMSIS_NN, backend="cmsis-nn")


def backend_kernels(operators, backend: str):
    """The Selection for a program's operators: CMSIS-NN adapters where they exist (backend
    cmsis-nn), portable kernels for the rest."""
    available = dict(kernel_registry.find_kernels())
    if backend == "cmsis-nn":
        available.update(find_kernels())
    return kernel_registry.select(operators, available)


def portable_partners(kernels) -> list[Path]:
    """The portable kernel file of every CMSIS-NN adapter's operator (its fallback)."""
    portable = kernel_registry.find_kernels()
    out = []
    for k in kernels:
        if k.backend == "cmsis-nn" and k.op in portable and portable[k.op].file not in out:
            out.append(portable[k.op].file)
    return out


# --- sources: the CMSIS-NN .c files the adapters reach ------------------------------------------

_CALL = re.compile(r"\b(arm_\w+)\s*\(")
_DEF = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(arm_\w+)\s*\([^;]*?\)\s*\{", re.M | re.S)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def source_index(root: Path) -> dict:
    """function name -> .c file defining it (non-static definitions of Source/**/*.c)."""
    index = {}
    for path in sorted((Path(root) / "Source").rglob("*.c")):
        text = _strip_comments(path.read_text(errors="replace"))
        for m in _DEF.finditer(text):
            head = text[m.start():m.start(1)]
            if "static" in head or "\n" in head.strip():
                continue
            index.setdefault(m.group(1), path)
    return index


_INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def _with_local_includes(path: Path) -> list[str]:
    """The text of a source and of the headers it includes from its own folder, transitively."""
    texts, todo, seen = [], [path], set()
    while todo:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        text = f.read_text()
        texts.append(text)
        todo += [f.parent / name for name in _INCLUDE.findall(text)]
    return texts


def needed_sources(root: Path, adapter_files) -> list[Path]:
    """Every CMSIS-NN .c file reachable from the arm_* calls of these adapter sources (and the
    local headers they include), transitively."""
    index = source_index(root)
    todo = []
    for f in adapter_files:
        for t in _with_local_includes(Path(f)):
            todo += _CALL.findall(_strip_comments(t))
    files, seen = [], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = index.get(name)
        if path is None or path in files:
            continue
        files.append(path)
        todo += _CALL.findall(_strip_comments(path.read_text(errors="replace")))
    return sorted(files)


def add_to_project(dest: Path, kernels, root: Path) -> tuple[list[str], list[str]]:
    """Copies the CMSIS-NN headers and the .c files the selected adapters need into the
    project (cmsis_nn/), plus the portable fallbacks and headers (kernels/); returns
    (sources, include dirs) relative to dest."""
    adapters = [k.file for k in kernels if k.backend == "cmsis-nn"]
    if not adapters:
        return [], []
    dest = Path(dest)
    target = dest / "cmsis_nn"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(Path(root) / "Include", target / "Include")
    sources = []
    for src in needed_sources(root, adapters):
        rel = src.relative_to(Path(root) / "Source")
        out = target / "Source" / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)
        sources.append(f"cmsis_nn/Source/{rel.as_posix()}")
    (dest / "kernels").mkdir(exist_ok=True)
    selected = {k.file.name for k in kernels}
    for f in portable_partners(kernels):
        shutil.copy2(f, dest / "kernels" / f.name)
        if f.name not in selected:
            sources.append(f"kernels/{f.name}")
    for h in list(KERNELS_PORTABLE.glob("*.h")) + list(KERNELS_CMSIS_NN.glob("*.h")):
        shutil.copy2(h, dest / "kernels" / h.name)
    return sources, ["cmsis_nn/Include"]


# --- scratch buffers ---------------------------------------------------------------------------
# Python mirrors of CMSIS-NN's arm_*_get_buffer_size() for each variant (CMSIS-NN main,
# 2026; checked against the real functions in tests/test_cmsis_nn_scratch.py). GCC builds:
# the 1x1 fast DSP path needs no buffer, CONVERT_DW_CONV_WITH_ONE_INPUT_CH... is 1.

CH_IN_BLOCK_MVE = 124
DW_ONE_IN_CH_THRESHOLD = 1  # CONVERT_DW_CONV_WITH_ONE_INPUT_CH_AND_OUTPUT_CH_ABOVE_THRESHOLD (GCC)


def _conv_s8_mve(cin, kh, kw):
    return 4 * ((cin * kw * kh + 15) // 16) * 16


def _conv_s8_dsp(cin, kh, kw):
    cols = kw * kh * cin
    return 2 * (cols + (-cols) % 4) * 2


def _conv_1_x_n_mve(cin, in_w, kw, out_w, pad_w, stride_w, kh):
    total_pad = (out_w - 1) * stride_w + kw - in_w
    asym = total_pad % 2
    right = max(1, (pad_w + asym + stride_w - 1) // stride_w) if pad_w + asym != 0 else 0
    left = max(1, (pad_w + stride_w - 1) // stride_w) if pad_w != 0 else 0
    no_pad = max(out_w - (right + left), 0)
    if right + no_pad + left != out_w:
        return _conv_s8_mve(cin, kh, kw)
    pad_left = pad_w * cin
    pad_right = right * cin if asym else pad_left
    left_elems = kw * cin
    return max(left_elems + pad_left, left_elems - cin + pad_right)


def conv_buffer_bytes(variant, in_shape_nhwc, kh, kw, cout_or_cin_filter, stride, padding, dilation, out_w) -> int:
    """arm_convolve_wrapper_s8_get_buffer_size(_dsp/_mve). Shapes NHWC; stride/padding/dilation (h, w);
    cout_or_cin_filter is the filter's input channels."""
    n, h, w, c = in_shape_nhwc
    is_1x1 = padding == (0, 0) and (kh, kw) == (1, 1) and dilation == (1, 1) and c == cout_or_cin_filter
    if is_1x1:
        return 0  # 1x1: fast path (GCC: no buffer) or arm_convolve_1x1_s8 (none)
    is_1_x_n = h == 1 and dilation[1] == 1 and kh == 1 and (stride[1] * c) % 4 == 0 and c == cout_or_cin_filter
    if variant == "mve":
        if is_1_x_n:
            return _conv_1_x_n_mve(c, w, kw, out_w, padding[1], stride[1], kh)
        return _conv_s8_mve(c, kh, kw)
    return _conv_s8_dsp(c, kh, kw)


def depthwise_buffer_bytes(variant, in_shape_nhwc, kh, kw, cout, stride, padding, dilation, out_w) -> int:
    """arm_depthwise_conv_wrapper_s8_get_buffer_size as compiled for the variant."""
    n, h, w, c = in_shape_nhwc
    if variant == "mve" and c == 1 and cout > DW_ONE_IN_CH_THRESHOLD:
        return conv_buffer_bytes("mve", in_shape_nhwc, kh, kw, 1, stride, padding, dilation, out_w) + cout * kh * kw
    if c == cout and n == 1 and dilation == (1, 1):
        if variant == "mve":
            return 4 * CH_IN_BLOCK_MVE * kw * kh
        if kh == 3 and kw == 3 and padding[0] <= 1 and padding[1] <= 1:
            return 0
        return c * kw * kh * 2 if variant == "dsp" else 0
    return 0


STACKED_MAX_CIN = 3  # kernels_cmsis_nn/cmsis_nn_conv.h kStackedMaxCin, kStackedMaxKh, kStackedRotationBytes
STACKED_MAX_KH = 8
STACKED_ROTATION_BYTES = 1024


def stacked_conv_applies(cin, kh, dilation, input_offset) -> bool:
    """Whether the conv adapter runs its few-input-channel path (stacked_conv2d: a ring of
    channel-interleaved input rows and one arm_nn_mat_mult_nt_t_s8 per output row)."""
    return cin <= STACKED_MAX_CIN and kh <= STACKED_MAX_KH and tuple(dilation) == (1, 1) and -128 <= -input_offset <= 127


def stacked_conv_bytes(kh, kw, cin, cout, out_w, stride_w) -> int:
    """Its scratch: kh reordered weight copies (or one, above STACKED_ROTATION_BYTES) + the row
    ring (stacked_conv_bytes in C++)."""
    cols = (out_w - 1) * stride_w + kw
    weights = cout * kw * kh * cin
    rotations = kh if kh * weights <= STACKED_ROTATION_BYTES else 1
    return rotations * weights + cols * kh * cin


def avgpool_buffer_bytes(variant, channels: int) -> int:
    return channels * 4 if variant == "dsp" else 0


def batch_matmul_buffer_bytes(variant, n_cols: int) -> int:
    """arm_batch_matmul_s8's ctx->buf, arm_fully_connected_s8_get_buffer_size(output dims): on MVE
    a kernel sum (int32) per rhs row, i.e. per output column; none on DSP/scalar."""
    return n_cols * 4 if variant == "mve" else 0


def _pair(v, default):
    v = list(v) if v is not None else []
    if not v:
        return (default, default)
    return (int(v[0]), int(v[1] if len(v) > 1 else v[0]))


def _nhwc(t, nhwc_logical: bool):
    s = t.shape
    return tuple(s) if nhwc_logical else (s[0], s[2], s[3], s[1])


# op -> (scratch argument position, function computing the bytes from the instruction)
def scratch_bytes(op: str, program, ins, variant: str) -> int | None:
    """Bytes of CMSIS-NN scratch one instruction needs on this variant (None: op has no scratch)."""
    name = op.split("::")[-1].rsplit(".", 1)[0]
    a = ins.args
    val = lambda i: program.values[a[i]].value  # noqa: E731  scalar argument values
    if name in ("quantized_conv2d", "quantized_conv2d_nhwc", "quantized_depthwise_conv2d",
                "quantized_depthwise_conv2d_nhwc"):
        nhwc = name.endswith("_nhwc")
        dw = "depthwise" in name
        x = program.tensor(a[0])
        wt = program.tensor(a[1])
        out = program.tensor(a[-1])
        stride, padding, dilation = _pair(val(3), 1), _pair(val(4), 0), _pair(val(5), 1)
        in_nhwc = _nhwc(x, nhwc)
        out_w = _nhwc(out, nhwc)[2]
        if dw:
            return depthwise_buffer_bytes(variant, in_nhwc, wt.shape[1], wt.shape[2], wt.shape[3], stride, padding,
                                          dilation, out_w)
        if wt.shape[3] != in_nhwc[3]:
            return 0  # grouped: the adapter runs the portable loops
        if stacked_conv_applies(in_nhwc[3], wt.shape[1], dilation, val(6)):
            return stacked_conv_bytes(wt.shape[1], wt.shape[2], in_nhwc[3], wt.shape[0], out_w, stride[1])
        return conv_buffer_bytes(variant, in_nhwc, wt.shape[1], wt.shape[2], wt.shape[3], stride, padding, dilation,
                                 out_w)
    if name in ("quantized_avg_pool2d", "quantized_avg_pool2d_nhwc"):
        x = program.tensor(a[0])
        return avgpool_buffer_bytes(variant, _nhwc(x, name.endswith("_nhwc"))[3])
    if name == "quantized_batch_matmul":
        rhs = program.tensor(a[2])  # [B, N, K], transposed
        return batch_matmul_buffer_bytes(variant, rhs.shape[1] if len(rhs.shape) == 3 else 0)
    return None


SCRATCH_ARG = {"quantized_conv2d": 12, "quantized_conv2d_nhwc": 12, "quantized_depthwise_conv2d": 13,
               "quantized_depthwise_conv2d_nhwc": 13, "quantized_avg_pool2d": 8, "quantized_avg_pool2d_nhwc": 8,
               "quantized_batch_matmul": 7}


def size_scratch(program, variant: str, kernels=None) -> int:
    """Resizes the scratch tensor of every instruction that runs on a CMSIS-NN adapter to what
    CMSIS-NN needs on this variant (uint8 [n]); call before planning. Returns the total bytes.
    ``kernels``: the selected kernels (only cmsis-nn ones are sized); None sizes every op."""
    from mcu_gen.program.ir import TensorValue

    cmsis_ops = None if kernels is None else {k.op for k in kernels if k.backend == "cmsis-nn"}
    total = 0
    for ins in program.instructions:
        name = ins.op.split("::")[-1].rsplit(".", 1)[0]
        if name not in SCRATCH_ARG or not ins.op.startswith("cortex_m::"):
            continue
        if cmsis_ops is not None and ins.op not in cmsis_ops:
            continue
        nbytes = scratch_bytes(ins.op, program, ins, variant) or 0
        i = ins.args[SCRATCH_ARG[name]]
        old = program.values[i]
        if not isinstance(old, TensorValue) or old.is_constant:
            continue
        if sum(a == i for ins2 in program.instructions for a in ins2.args) > 1:  # shared: give this one its own
            i = program.add(TensorValue((0,), "uint8", name=f"{old.name}_cmsis"))
            ins.args[SCRATCH_ARG[name]] = i
        program.values[i] = TensorValue((nbytes,), "uint8", name=old.name + "_cmsis")
        total += nbytes
    return total

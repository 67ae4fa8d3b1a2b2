"""Arm Ethos-U NPU delegate: partition -> TOSA (tosa-tools) -> Vela -> "EthosUBackend" delegate
blob in the .pte. Needs the optional extra: pip install 'mcu-gen[ethos-u]'. See docs/ethos_u.md.

    program, report = delegate_program(int8_program, get_npu("ethos-u55-128"))
"""
from .targets import DEFAULT_NPU, NPU_NAMES, NpuError, get_npu  # noqa: F401


def delegate_program(program, npu, parity_check: bool = False):
    from .delegate import delegate_program as _dp

    return _dp(program, npu, parity_check)

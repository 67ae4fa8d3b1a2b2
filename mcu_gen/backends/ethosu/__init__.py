"""Arm Ethos-U NPU delegate: partition -> TOSA (tosa-tools) -> Vela -> "EthosUBackend" delegate
blob in the .pte. Needs the optional extra: pip install 'mcu-gen[ethos-u]'. See docs/ethos_u.md.

    program, report = delegate_program(int8_program, get_npu("ethos-u55-128"))
"""
from mcu_gen.backends.ethosu.targets import DEFAULT_NPU, NPU_NAMES, NpuError, get_npu  # noqa: F401


def delegate_program(program, npu):
    """(new unplanned program, report["ethos_u"]); the host parity check of each subgraph against
    the integer reference is mcu_gen.reference.ethosu_parity.check."""
    from mcu_gen.backends.ethosu.delegate import delegate_program as _dp

    return _dp(program, npu)

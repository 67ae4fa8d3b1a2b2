"""Total RAM a user can trust (issue 18): the deployable image `mcu-gen run` leaves behind, with its stack
bounded from the image's code at build time, reserved as that bound + margin, and checked against the
high-water mark measured on the device (painted at boot, reported in HELLO), no
program-upload buffer unless asked for, and protocol frames sized to what the image transfers. Every figure
below comes from the linked ELF and from a real QEMU run."""
from pathlib import Path

import pytest

import mcu_gen
from mcu_gen.firmware import project, report, stack
from mcu_gen.firmware.stack import static_reserve
from mcu_gen.device.protocol import Error
from mcu_gen.device.qemu import QemuSession
from mcu_gen.firmware.report import elf_sections

KIB = 1024

# (example, quantize, total RAM limit): the targets. ExecuTorch's paper: MNIST int8 ~11 KiB,
# fp32 ~108 KiB; ExecuTorch measured KWS int8 ~31 KB, TFLM's KWS arena alone 22,756 B.
CASES = [
    ("mnist", "int8", 8 * KIB),
    ("kws_dscnn", "int8", 12 * KIB),
    ("mnist", None, 40 * KIB),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1] or 'fp32'}")
def deployed(request, tmp_path_factory, qemu_tools):
    name, quantize, limit = request.param
    kw = {"quantize": "int8", "io": "int8"} if quantize else {}
    out = tmp_path_factory.mktemp("ram") / name
    # The RAM-lean build: the portable library kernels and their in-place forms. Generated kernels (issue 17,
    # --kernels auto) and CMSIS-NN (the default backend when its sources are given) trade RAM (every value
    # decoded at load, larger stack frames, no row-by-row in-place conv) for speed: MNIST int8 with
    # CMSIS-NN is 10,392 B.
    r = mcu_gen.run(f"examples/{name}/model.py", board="mps2-an505", out=out, n_random=2, max_inputs=2,
                    kernels="library", backend="portable", **kw)
    return r, limit


@pytest.mark.qemu
def test_deployable_total_ram_meets_the_target(deployed):
    r, limit = deployed
    assert r.verified and (r.bit_exact is not False)
    sections = elf_sections(f"{r.out}/firmware.elf")
    total = sum(sections[s][0] for s in (".data", ".bss", ".stack") if s in sections)
    assert total == r.ram_bytes == sum(r.ram.values())  # everything in .data/.bss/stack, nothing left out
    assert r.ram_bytes <= limit, r.ram
    assert r.ram["upload_buffer"] == 0 and not r.upload
    assert r.ram["protocol_io"] == 2 * project.MIN_FRAME_PAYLOAD + 4  # request (+ type, seq, len) and reply


@pytest.mark.qemu
def test_stack_is_bounded_statically_reserved_and_measured_below_the_bound(deployed):
    r, _ = deployed
    # A real high-water mark: more than the boot frame, far less than the 64 KiB the linker script reserves.
    assert 256 < r.stack_used_bytes < 4 * KIB
    # The build bounded the stack from the image's code and reserved that bound plus its margin; the device,
    # run on every verify input, used no more than the bound (runner.run raises otherwise).
    rep = report.load_report(r.out)
    bound = rep["stack"]["static_bound_bytes"]
    assert rep["stack"]["unbounded_reason"] is None and rep["stack"]["deepest_path"][0].startswith("Reset_Handler")
    assert r.stack_used_bytes <= bound < r.stack_reserved_bytes
    assert r.stack_reserved_bytes == static_reserve(bound) == elf_sections(f"{r.out}/firmware.elf")[".stack"][0]
    assert rep["stack"]["measured_bytes"] == r.stack_used_bytes
    assert bound < 4 * KIB  # the deepest path any input could take, far below the linker script's 64 KiB
    text = (Path(r.out) / "report.md").read_text()
    assert f"measured {r.stack_used_bytes:,} B" in text and f"reserved {r.stack_reserved_bytes:,} B" in text
    assert f"static bound {bound:,} B" in text


@pytest.mark.qemu
def test_deployable_image_refuses_uploads_and_reports_its_frames(deployed):
    r, _ = deployed
    from mcu_gen.boards import get_board

    with QemuSession(get_board("mps2-an505"), f"{r.out}/firmware.elf", run_timeout=30) as link:
        hello = link.hello()
        assert hello.upload_size == 0 and hello.max_payload == project.MIN_FRAME_PAYLOAD
        assert hello.stack_used is not None and 0 < hello.stack_used < r.stack_reserved_bytes
        assert link.load_program(b"\0" * 64) == (Error.BadRequest, 0)
        assert link.echo(b"x" * (hello.max_payload - 1)) == b"x" * (hello.max_payload - 1)
        link.exit(0)


@pytest.mark.qemu
def test_upload_buffer_only_with_upload(tmp_path, qemu_tools):
    plain = mcu_gen.build("examples/mul_add/model.py", board="mps2-an505", out=tmp_path / "plain")
    up = mcu_gen.build("examples/mul_add/model.py", board="mps2-an505", out=tmp_path / "up", upload=True)
    assert plain.report["size"]["ram"]["upload_buffer"] == 0
    want = project.upload_buffer_size(up.board, up.program, up.pte_bytes)
    assert up.report["size"]["ram"]["upload_buffer"] == want > len(up.pte_bytes)
    with QemuSession(up.board, up.elf, run_timeout=30) as link:
        assert link.hello().upload_size == want
        assert link.load_program(up.pte_bytes) == (Error.Ok, 0)
        link.exit(0)


def test_stack_reserve_rule():
    assert stack.stack_reserve(0) == 256
    assert stack.stack_reserve(852) == 1216  # 852 + 256 + 107 = 1215 -> 1216
    assert all(stack.stack_reserve(n) % 64 == 0 and stack.stack_reserve(n) >= n + 256 + n / 8
               for n in range(0, 5000, 7))


@pytest.mark.qemu
def test_resnet8_arena_below_the_layer_wise_bound(tmp_path, qemu_tools):
    """In-place k x k convolution (row ring buffer) and in-place int8 add: ResNet-8's peak (a 3x3 conv with
    the residual live) drops from three 16x32x32 tensors (the layer-wise bound, 49,152 B) to two plus a
    ring of two input rows; bit-exact on the device."""
    r = mcu_gen.run("examples/ic_resnet8/model.py", board="mps2-an505", out=tmp_path / "r8", quantize="int8",
                    io="int8", n_random=2, max_inputs=2, kernels="library", backend="portable")
    assert r.bit_exact and r.verified
    assert r.arena_lower_bound_bytes == 49_152
    assert r.arena_bytes == 2 * 16 * 32 * 32 + 2 * 32 * 16 <= 40_000
    ops = [row["name"] for row in report.load_report(r.out)["operators"]]
    assert ops.count("mcu::quantized_conv2d_rows_inplace.out") == 4  # the stem and each block's second conv


@pytest.mark.qemu
def test_vww_arena_below_the_layer_wise_bound(tmp_path, qemu_tools):
    """VWW MobileNetV1-0.25 int8: the layer-wise bound is the 8->16 pointwise conv at 48x48 (18,432 B in +
    36,864 B out). Widening pointwise convs write over their input in reverse pixel order, the strided stem
    conv row by row over the image (a ring of 2 input rows), the depthwise convs channel by channel: the
    peak is the 48x48x16 tensor and the depthwise's one-channel scratch (36,864 + 2,304); bit-exact."""
    r = mcu_gen.run("examples/vww_mobilenet/model.py", board="mps2-an505", out=tmp_path / "vww", quantize="int8",
                    io="int8", n_random=1, max_inputs=1, kernels="library", backend="portable")
    assert r.bit_exact and r.verified
    assert r.arena_lower_bound_bytes == 55_296
    assert r.arena_bytes == 16 * 48 * 48 + 48 * 48 <= 40_000
    ops = [row["name"] for row in report.load_report(r.out)["operators"]]
    assert ops[0] == "mcu::quantized_conv2d_rows_inplace.out"
    assert ops[2] == "mcu::quantized_conv2d_pointwise_inplace.out"

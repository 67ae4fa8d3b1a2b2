"""The link under faults: a proxy (mcu_gen/dev/fault_proxy.py) between the host Link and QEMU's pty
drops, duplicates and corrupts bytes and stalls the stream. Every case ends either in the right
answer (resync, resend, rerun) or in a clear LinkError, within a bounded time. A protocol version
mismatch (either side) is reported as such."""
import math
import shutil
import time

import numpy as np
import pytest

import mcu_gen
import mcu_gen.device.link as link_module
from mcu_gen.firmware.project import compile_project
from mcu_gen.dev.fault_proxy import FaultProxy, Faults
from mcu_gen.device.link import Link, LinkError, LinkTimeout
from mcu_gen.device.qemu import QemuSession

TIMEOUT, RETRIES, RUN_TIMEOUT = 0.6, 3, 2.0
BOUND_S = (1 + RETRIES) * RUN_TIMEOUT * (1 + RETRIES) + 5  # worst case of one infer() with every retry

pytestmark = pytest.mark.qemu


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return mcu_gen.build("examples/mnist/model.py", board="mps2-an505", out=tmp_path_factory.mktemp("fault") / "mnist")


@pytest.fixture(scope="module")
def x(built):
    return built.spec.test_inputs[0][0].numpy()


@pytest.fixture(scope="module")
def clean_output(built, x, qemu_tools):
    with QemuSession(built.board, built.elf) as link:
        out, _ = link.infer([x])
    return out[0]


@pytest.fixture
def proxied(built):
    """(link through the proxy, proxy, session)."""
    session = QemuSession(built.board, built.elf)
    session.start()
    proxy = FaultProxy(session.port)
    link = Link(proxy.port, timeout=TIMEOUT, retries=RETRIES, run_timeout=RUN_TIMEOUT, describe=session.describe)
    link.hello()
    yield link, proxy, session
    proxy.close()
    session.close()


def infer_within_bound(link, x):
    t0 = time.monotonic()
    out, _ = link.infer([x])
    elapsed = time.monotonic() - t0
    assert elapsed < BOUND_S
    return out[0], elapsed


def next_bytes(faults: Faults, offsets, action):
    for k in offsets:
        faults.at[faults.seen + k] = action


@pytest.mark.parametrize("action", ["drop", "corrupt", "dup"])
def test_damaged_requests_and_replies_are_resent(proxied, x, clean_output, action):
    link, proxy, _ = proxied
    # One fault per inference: a request's seq byte, a payload byte and a CRC byte of the first
    # (1,031-byte) input chunk; the type byte of the first reply, and a byte inside RUN's reply.
    cases = [(proxy.to_device, 3), (proxy.to_device, 700), (proxy.to_device, 1030),
             (proxy.to_host, 2), (proxy.to_host, 4 * 11 + 8)]
    for faults, offset in cases:
        next_bytes(faults, [offset], action)
        out, _ = infer_within_bound(link, x)
        np.testing.assert_array_equal(out, clean_output)
    assert proxy.to_device.injected[action] == 3 and proxy.to_host.injected[action] == 2
    # Faults closer together than the retry budget can end either way, but never hang or lie.
    next_bytes(proxy.to_device, [3, 700, 1500, 2600], action)
    try:
        np.testing.assert_array_equal(infer_within_bound(link, x)[0], clean_output)
    except LinkTimeout as e:
        assert "WRITE_INPUT: no reply within 0.6 s, after 4 attempts" in str(e) or "device reported" in str(e)
    # And the link is clean afterwards.
    np.testing.assert_array_equal(infer_within_bound(link, x)[0], clean_output)


def test_lost_run_reply_reruns_with_the_inputs_written_again(proxied, x, clean_output):
    link, proxy, _ = proxied
    link.write_inputs([x])
    # The next bytes from the device are RUN's reply... but infer() writes inputs first: one ack of 11 bytes
    # per WRITE_INPUT frame (the device's frames hold link.chunk() bytes of input each).
    acks = -(-x.nbytes // link.chunk()) * 11
    next_bytes(proxy.to_host, [acks + 2], "drop")
    out, elapsed = infer_within_bound(link, x)
    np.testing.assert_array_equal(out, clean_output)
    assert elapsed >= RUN_TIMEOUT  # it waited for the lost reply once, then ran again
    assert proxy.to_host.injected["drop"] == 1


def test_random_noise_both_ways(proxied, x, clean_output):
    """Seeded random faults on every byte: each inference is right or fails clearly, in bounded time."""
    link, proxy, _ = proxied
    for f in (proxy.to_device, proxy.to_host):
        f.drop = f.dup = f.corrupt = 0.0001
    results = []
    for _ in range(4):
        try:
            np.testing.assert_array_equal(infer_within_bound(link, x)[0], clean_output)
            results.append("ok")
        except LinkTimeout as e:
            assert "after 4 attempts" in str(e) and "mps2-an505" in str(e)
            results.append("failed clearly")
    assert "ok" in results
    assert sum(sum(f.injected.values()) for f in (proxy.to_device, proxy.to_host)) >= 1


def test_short_stall_is_waited_out(proxied, x, clean_output):
    link, proxy, _ = proxied
    proxy.to_host.stall_s = TIMEOUT * 2.5  # longer than one request's deadline: resent, then answered
    next_bytes(proxy.to_host, [5], "stall")
    proxy.to_device.stall_s = TIMEOUT / 2
    next_bytes(proxy.to_device, [30], "stall")
    np.testing.assert_array_equal(infer_within_bound(link, x)[0], clean_output)
    assert link.echo(b"after the stall") == b"after the stall"


def test_dead_link_fails_clearly_within_the_bound(proxied):
    link, proxy, _ = proxied
    proxy.to_host.stall_s = math.inf
    next_bytes(proxy.to_host, [0], "stall")
    t0 = time.monotonic()
    with pytest.raises(LinkTimeout, match=r"ECHO: no reply within 0.6 s, after 4 attempts; is the device running"):
        link.echo(b"anyone?")
    assert time.monotonic() - t0 < (1 + RETRIES) * TIMEOUT + 1


def test_garbled_link_names_the_noise(proxied):
    link, proxy, _ = proxied
    proxy.to_host.corrupt = 0.5  # every reply is damaged
    t0 = time.monotonic()
    with pytest.raises(LinkTimeout, match=r"the link is noisy: \d+ damaged frame"):
        link.echo(b"x" * 100)
    assert time.monotonic() - t0 < (1 + RETRIES) * TIMEOUT + 1


def test_host_newer_than_the_firmware(proxied, monkeypatch):
    link, _, _ = proxied
    monkeypatch.setattr(link_module, "PROTOCOL_VERSION", 2)
    with pytest.raises(LinkError, match="protocol version mismatch: host speaks 2, device speaks 1"):
        link.hello()


def test_firmware_newer_than_the_host(built, tmp_path, qemu_tools):
    project = tmp_path / "fw"
    shutil.copytree(built.out / "firmware", project, ignore=shutil.ignore_patterns("build"))
    header = project / "runtime" / "include" / "mcu" / "protocol.h"
    text = header.read_text()
    assert "constexpr uint16_t kProtocolVersion = 1;" in text
    header.write_text(text.replace("kProtocolVersion = 1;", "kProtocolVersion = 9;"))
    elf = compile_project(project, built.board)
    with QemuSession(built.board, elf, timeout=1.0) as link:
        t0 = time.monotonic()
        with pytest.raises(LinkError, match="protocol version mismatch: host speaks 1, device speaks 9"):
            link.hello()
        assert time.monotonic() - t0 < 2

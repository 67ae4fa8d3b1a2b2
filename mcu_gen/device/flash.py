"""`mcu-gen flash`: put a built firmware on a board.

RP2350 (Pico 2): hold BOOTSEL while plugging in USB and the bootrom mounts a
drive (volume RP2350, INFO_UF2.TXT says "Board-ID: RP2350"); copying
firmware.uf2 onto it flashes and reboots the board. Without a mounted drive,
`picotool load -x` does the same over USB (it can also reboot a running
board into BOOTSEL itself when the firmware exposes picotool's reset
interface; ours does not, so press BOOTSEL).
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mcu_gen.boards import Board
from mcu_gen.progress import Progress
from mcu_gen.errors import McuGenError

MOUNT_ROOTS = ("/media", "/run/media", "/mnt")
BOOT_IDS = ("RP2350", "RPI-RP2")  # INFO_UF2.TXT Board-ID / volume names of the RP2350 and RP2040 bootroms

BOOTSEL_HELP = (
    "put the board in BOOTSEL mode: unplug it, hold the BOOTSEL button, plug it in, release the button. "
    "A drive named RP2350 appears; mount it (most desktops do that themselves) or install picotool, "
    "then run `mcu-gen flash` again, or copy {uf2} onto the drive yourself."
)


class FlashError(McuGenError, RuntimeError):
    """Nothing to flash, or no way to reach the board; the message says what to do."""


@dataclass
class FlashResult:
    method: str  # "uf2-drive" or "picotool"
    target: str  # the drive or the picotool command
    uf2: Path


def find_boot_drives(roots=MOUNT_ROOTS) -> list[Path]:
    """Mounted UF2 boot drives of an RP2350/RP2040 (directories holding INFO_UF2.TXT that names one)."""
    found = []
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        # /media/<user>/<volume>, /run/media/<user>/<volume>, /mnt/<volume>, or the root itself
        candidates = [root, *root.glob("*"), *root.glob("*/*")]
        for d in candidates:
            info = d / "INFO_UF2.TXT"
            try:
                text = info.read_text(errors="replace") if info.is_file() else ""
            except OSError:
                continue
            if any(i in text for i in BOOT_IDS) and d not in found:
                found.append(d)
    return found


def firmware_uf2(build_dir) -> Path:
    uf2 = Path(build_dir) / "firmware.uf2"
    if not uf2.is_file():
        raise FlashError(f"{uf2} does not exist: build first with `mcu-gen build --board rp2350 --model ... "
                         f"--out {build_dir}`")
    return uf2


def flash(board: Board, build_dir, roots=MOUNT_ROOTS, picotool: str | None = None) -> FlashResult:
    if board.flash_method == "qemu":
        raise FlashError(f"board {board.name} is emulated: nothing to flash, `mcu-gen run` boots it in QEMU")
    if board.flash_method != "uf2":
        raise FlashError(f"board {board.name} flashes with `pio run -t upload` in {Path(build_dir) / 'firmware'} "
                         f"(flash method {board.flash_method!r})")
    uf2 = firmware_uf2(build_dir)
    drives = find_boot_drives(roots)
    if drives:
        dest = drives[0] / uf2.name
        with Progress.step(f"copying {uf2.name} to {drives[0]}"):
            shutil.copyfile(uf2, dest)  # the bootrom flashes and reboots once the file is complete
        return FlashResult("uf2-drive", str(drives[0]), uf2)
    tool = picotool or shutil.which("picotool")
    if tool:
        cmd = [tool, "load", "-x", "-t", "uf2", str(uf2)]
        with Progress.step("flashing with picotool"):
            proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise FlashError(f"`{' '.join(cmd)}` failed ({proc.returncode}): {(proc.stdout + proc.stderr).strip()}\n"
                             + BOOTSEL_HELP.format(uf2=uf2))
        return FlashResult("picotool", " ".join(cmd), uf2)
    raise FlashError(f"no RP2350 boot drive under {', '.join(map(str, roots))} and no picotool on PATH: "
                     + BOOTSEL_HELP.format(uf2=uf2))

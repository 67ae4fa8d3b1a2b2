"""Renders the PlatformIO side of a generated firmware project: platformio.ini
plus the local dev-platform (pio_platform/) that drives the system
arm-none-eabi-gcc, so `pio run` needs no download. Host-board projects have
no PlatformIO side (they build with CMake only)."""
from __future__ import annotations

import shutil
from pathlib import Path

from .paths import TEMPLATES


def board_id(name: str) -> str:
    return name.replace("-", "_")


def render(dest: Path, env, ctx: dict) -> None:
    """`env`: the Jinja environment over templates/; `ctx`: the CMakeLists.txt.j2 context."""
    if not ctx.get("cross", True):
        return
    dest = Path(dest)
    bid = board_id(ctx["board"].name)
    ctx = dict(ctx, board_id=bid)
    (dest / "platformio.ini").write_text(env.get_template("platformio/platformio.ini.j2").render(**ctx))
    platform = dest / "pio_platform"
    if platform.exists():
        shutil.rmtree(platform)
    (platform / "builder").mkdir(parents=True)
    (platform / "boards").mkdir()
    src = TEMPLATES / "platformio" / "platform"
    shutil.copy2(src / "platform.json", platform / "platform.json")
    shutil.copy2(src / "builder" / "main.py", platform / "builder" / "main.py")
    (platform / "boards" / f"{bid}.json").write_text(
        env.get_template("platformio/platform/boards/board.json.j2").render(**ctx))

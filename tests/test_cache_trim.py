"""The native build caches' size limit (mcu_gen/firmware/cache_trim.py): which entries a trim removes, in which
order, what it never removes, a vanished object built again, and `mcu-gen cache`."""
import json
import os
import shutil

import pytest

from mcu_gen.cli import main
from mcu_gen.firmware import cache_trim
from mcu_gen.firmware.cache_trim import LIMIT_ENV, entries, limit_bytes, mark_used, trim
from mcu_gen.firmware.host import compile_object

NOW = 1_000_000_000.0
HOUR = 3600


def _runner(cache, name, size, used):
    d = cache / name
    d.mkdir(parents=True)
    (d / "runner").write_bytes(b"r" * size)
    (d / "kernel_table.cpp").write_bytes(b"t" * 100)
    os.utime(d, (used, used))
    return d


def _object(cache, name, size, used, pool="objects"):
    p = cache / pool / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"o" * size)
    os.utime(p, (used, used))
    return p


def test_trim_removes_runners_before_objects_least_recently_used_first(tmp_path):
    old = _runner(tmp_path, "aaa", 1000, NOW - 5 * HOUR)
    newer = _runner(tmp_path, "bbb", 1000, NOW - 3 * HOUR)
    obj_old = _object(tmp_path, "x.o", 1000, NOW - 9 * HOUR)  # older than every runner: still removed after them
    obj_new = _object(tmp_path, "y.o", 1000, NOW - 2 * HOUR)
    assert [e.path for e in entries(tmp_path)] == [old, newer, obj_old, obj_new]
    assert sum(e.size for e in entries(tmp_path)) == 2 * 1100 + 2000

    r = trim(tmp_path, limit=3100, now=NOW)  # one runner is enough: the least recently used
    assert (r.removed, r.freed, r.kept, r.size) == (1, 1100, 3, 3100)
    assert not old.exists() and newer.exists() and obj_old.exists()
    r = trim(tmp_path, limit=1500, now=NOW)  # the other runner, then the older object
    assert (r.removed, r.freed, r.size) == (2, 2100, 1000)
    assert not newer.exists() and not obj_old.exists() and obj_new.exists()
    assert trim(tmp_path, limit=1500, now=NOW).removed == 0  # under the limit: nothing


def test_trim_never_removes_what_was_used_within_the_hour(tmp_path):
    busy = _runner(tmp_path, "busy", 5000, NOW - 10)  # another process may be about to run it
    idle = _runner(tmp_path, "idle", 5000, NOW - 2 * HOUR)
    obj = _object(tmp_path, "z.o", 5000, NOW - 59 * 60)
    seeds = _object(tmp_path, "k1", 5000, NOW - 3 * HOUR, pool="seeds")
    r = trim(tmp_path, limit=0, now=NOW)
    assert not idle.exists() and not seeds.exists()
    assert busy.exists() and obj.exists()
    assert (r.removed, r.freed, r.size) == (2, 10100, 10100)  # left over the limit: busy (5100) and obj (5000)
    assert trim(tmp_path, limit=0, min_age=0, now=NOW).removed == 2 and entries(tmp_path) == []


def test_limit_from_the_environment(monkeypatch):
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert limit_bytes() == cache_trim.DEFAULT_LIMIT_MB << 20
    monkeypatch.setenv(LIMIT_ENV, "300")
    assert limit_bytes() == 300 << 20
    for bad in ("-1", "2G", "1.5"):
        monkeypatch.setenv(LIMIT_ENV, bad)
        with pytest.raises(Exception, match=f"{LIMIT_ENV}='{bad}': expected a whole number of MiB"):
            limit_bytes()


def test_built_trims_on_the_first_new_build_and_every_trim_every_after(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(cache_trim, "trim", lambda cache: calls.append(cache))
    monkeypatch.setattr(cache_trim, "_new_builds", {})
    for _ in range(2 * cache_trim.TRIM_EVERY + 1):
        cache_trim.built(tmp_path)
    assert calls == [tmp_path] * 3  # builds 1, 1 + TRIM_EVERY, 1 + 2 TRIM_EVERY


@pytest.mark.skipif(shutil.which("g++") is None, reason="no host g++ (Debian package g++)")
def test_an_object_removed_by_another_process_is_built_again(tmp_path):
    src = tmp_path / "src" / "unit.cpp"
    src.parent.mkdir()
    src.write_text("int unit_value() { return 42; }\n")
    cache, build = tmp_path / "cache", tmp_path / "build"
    build.mkdir()
    obj = compile_object("g++", ["-O1"], [], src, build, cache)
    data = obj.read_bytes()
    os.utime(obj, (NOW, NOW))
    assert compile_object("g++", ["-O1"], [], src, build, cache) == obj  # a hit marks it used
    assert obj.stat().st_mtime > NOW
    obj.unlink()  # a trim elsewhere
    assert not mark_used(obj)
    again = compile_object("g++", ["-O1"], [], src, build, cache)
    assert again == obj and obj.read_bytes() == data  # the same bytes (builds are reproducible)


def test_cache_command_reports_trims_and_clears(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MCU_GEN_CACHE", str(tmp_path))
    monkeypatch.setenv(LIMIT_ENV, "0")
    _runner(tmp_path / "host", "old", 2000, NOW - 5 * HOUR)
    _object(tmp_path / "host", "a.o", 3000, NOW - 5 * HOUR)
    fresh = _object(tmp_path / "fuzz", "b.o", 700, 0)
    os.utime(fresh)  # just used
    assert main(["cache", "--json"]) == 0
    rows = {r["cache"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["host"]["entries"], rows["host"]["bytes"], rows["fuzz"]["bytes"]) == (2, 5100, 700)
    assert rows["host"]["folder"] == str(tmp_path / "host") and rows["host"]["limit_bytes"] == 0

    assert main(["cache", "--trim"]) == 0
    out = capsys.readouterr().out
    assert "host" in out and "removed 2" in out and "0 entries" in out
    assert fresh.exists()  # used within the hour: --trim keeps it
    (tmp_path / "ccache" / "a").mkdir(parents=True)
    (tmp_path / "ccache" / "a" / "x.o").write_bytes(b"0" * 300)  # the firmware builds' ccache folder
    assert main(["cache", "--clear", "--json"]) == 0
    rows = {r["cache"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["fuzz"]["removed"] == 1 and rows["fuzz"]["entries"] == 0 and not fresh.exists()
    assert (rows["ccache"]["removed"], rows["ccache"]["freed_bytes"]) == (1, 300)
    assert not (tmp_path / "ccache").exists()

    monkeypatch.setenv(LIMIT_ENV, "lots")
    assert main(["cache"]) == 1
    assert f"{LIMIT_ENV}='lots'" in capsys.readouterr().err

"""The package's folders are the pipeline's stages, and imports run one way (issue 15).

Every import in mcu_gen — at module level or inside a function — is read from the source. A
module may import from its own stage and from stages before it, never from a later one, and no
chain of imports may lead back to where it started. Shared modules (errors, paths, progress,
boards) import no stage at all."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "mcu_gen"

# In data order. A stage may import itself and the stages to its left.
STAGES = ["shared", "program", "capture", "quantize", "backends", "plan", "reference", "firmware", "device", "dev",
          "top"]
SHARED = {"mcu_gen.errors", "mcu_gen.paths", "mcu_gen.progress", "mcu_gen.boards"}
TOP = {"mcu_gen", "mcu_gen.__main__", "mcu_gen.api", "mcu_gen.cli"}


def module_files() -> dict:
    mods = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (f, is_pkg)
    return mods


def stage_of(mod: str) -> str:
    if mod in SHARED:
        return "shared"
    if mod in TOP or mod.startswith("mcu_gen.cli."):
        return "top"
    stage = mod.split(".")[1]
    assert stage in STAGES, f"{mod}: not in a stage folder (add it to one of {STAGES[1:-1]} or to SHARED)"
    return stage


def imports_of(mod: str, path: pathlib.Path, is_pkg: bool, known: set) -> list:
    """(imported module, line) for every mcu_gen import in the file; `from a import b` counts as
    an import of a.b when a.b is a module, else of a."""
    tree = ast.parse(path.read_text(), str(path))
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "mcu_gen"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = base[:len(base) - (node.level - 1)]
                target = ".".join(up + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "mcu_gen":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append((sub if sub in known else target, node.lineno))
    return [(m, line) for m, line in found if m != mod]


@pytest.fixture(scope="module")
def graph():
    mods = module_files()
    known = set(mods)
    edges = {m: imports_of(m, f, is_pkg, known) for m, (f, is_pkg) in mods.items()}
    for m, targets in edges.items():
        for t, line in targets:
            assert t in known, f"{m} line {line} imports {t}, which does not exist"
    return edges


def test_every_module_has_a_stage(graph):
    for m in graph:
        stage_of(m)


def test_no_backward_imports(graph):
    backward = []
    for m, targets in graph.items():
        for t, line in targets:
            if t == "mcu_gen" and m.startswith("mcu_gen."):
                if stage_of(m) != "top":  # `from mcu_gen import __version__` only
                    src = module_files()[m][0].read_text().splitlines()[line - 1]
                    if "__version__" in src:
                        continue
                backward.append(f"{m}:{line} -> mcu_gen")
                continue
            if STAGES.index(stage_of(t)) > STAGES.index(stage_of(m)):
                backward.append(f"{m}:{line} ({stage_of(m)}) -> {t} ({stage_of(t)})")
    assert not backward, "imports against the stage order:\n" + "\n".join(backward)


def test_no_import_cycles(graph):
    adj = {m: sorted({t for t, _ in targets if t != "mcu_gen"}) for m, targets in graph.items()}
    # Tarjan's strongly connected components
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in adj:
        if v not in index:
            visit(v)
    assert not comps, "import circles: " + "; ".join(" <-> ".join(c) for c in comps)


def test_the_check_catches_a_backward_import(tmp_path):
    """The rule can fail: a program-stage module importing the device stage is reported."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from mcu_gen.device.runner import run\n")
    known = set(module_files()) | {"mcu_gen.program.x"}
    (t, line), = imports_of("mcu_gen.program.x", f, False, known)
    assert (t, line) == ("mcu_gen.device.runner", 2)
    assert STAGES.index(stage_of(t)) > STAGES.index(stage_of("mcu_gen.program.x"))


def private_uses(mod: str, path: pathlib.Path, is_pkg: bool, known: set) -> list:
    """(what, line) for every use of another mcu_gen module's private name (`_x`, not dunder): a
    `from m import _x`, or `m._x` where m names an imported mcu_gen module (issue 26: modules
    share code through public names)."""
    tree = ast.parse(path.read_text(), str(path))
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    aliases, found = {}, []

    def private(name):
        return name.startswith("_") and not name.startswith("__")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "mcu_gen" and a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[:len(base) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "mcu_gen" or target == mod:
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in known:
                    aliases[a.asname or a.name] = sub
                elif private(a.name):
                    found.append((f"{target}.{a.name}", node.lineno))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and private(node.attr)
                and aliases.get(node.value.id, mod) != mod):
            found.append((f"{aliases[node.value.id]}.{node.attr}", node.lineno))
    return found


def test_no_private_names_across_modules():
    mods = module_files()
    known = set(mods)
    bad = [f"{m} line {line} uses {what}" for m, (f, is_pkg) in mods.items()
           for what, line in private_uses(m, f, is_pkg, known)]
    assert not bad, "private names used across modules: " + "; ".join(bad)


def test_the_private_name_check_can_fail(tmp_path):
    """Both forms are reported: importing a private name, and reaching it through a module."""
    f = tmp_path / "x.py"
    f.write_text("from mcu_gen.plan import planner\nfrom mcu_gen.quantize.int8_ops.compare import _c\n"
                 "def f():\n    return planner._layout, planner.plan\n")
    known = set(module_files()) | {"mcu_gen.program.x"}
    assert private_uses("mcu_gen.program.x", f, False, known) == [
        ("mcu_gen.quantize.int8_ops.compare._c", 2), ("mcu_gen.plan.planner._layout", 4)]

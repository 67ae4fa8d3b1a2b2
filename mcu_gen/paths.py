"""Where the project's non-Python parts live (runtime, kernels, boards, templates)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_CORE = ROOT / "runtime_core"
KERNELS_PORTABLE = ROOT / "kernels_portable"
BOARDS = ROOT / "boards"
TEMPLATES = ROOT / "templates"
EXAMPLES = ROOT / "examples"

"""Build step of mcu-gen's wheel: the runtime, kernels, boards, templates, schema and examples
(kept at the top of the source tree) are copied into the package as mcu_gen/_data/, where
mcu_gen/paths.py finds them in an installed mcu-gen. Everything else is in pyproject.toml;
MANIFEST.in puts the same directories into the sdist."""
import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pio", "mcu-gen-out")


def data_dirs() -> tuple:
    """DATA_DIRS of mcu-gen's paths.py (in mcu_gen/ or a subpackage of it), read without importing
    mcu_gen (which imports torch)."""
    for path in sorted((HERE / "mcu_gen").rglob("paths.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DATA_DIRS" for t in node.targets):
                return ast.literal_eval(node.value)
    raise RuntimeError("no paths.py under mcu_gen/ defines DATA_DIRS")


class build_py_with_data(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own directories
        dest = Path(self.build_lib) / "mcu_gen" / "_data"
        if dest.exists():
            shutil.rmtree(dest)
        for d in data_dirs():
            src = HERE / d
            if not src.is_dir():
                raise RuntimeError(f"{src} is missing: mcu-gen's wheel needs it (is this a complete checkout or sdist?)")
            shutil.copytree(src, dest / d, ignore=IGNORE)


setup(cmdclass={"build_py": build_py_with_data})

"""Stage 7, firmware: a planned program and its kernels -> a firmware project (CMake and PlatformIO,
from templates/: project.py), compiled with the board's toolchain into an ELF (UF2), with the size report
and report.json/report.md (report.py); the deployable stack (stack.py). build() in builder.py is the whole
road from a model file to here."""

"""`python -m mcu_gen.cli ...` is `mcu-gen ...`."""
import sys

from mcu_gen.cli import main

sys.exit(main())

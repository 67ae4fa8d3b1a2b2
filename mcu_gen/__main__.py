"""`python -m mcu_gen ...` is `mcu-gen ...`."""
import sys

from mcu_gen.cli import main

sys.exit(main())

"""Stage 1, the program: the graph IR every stage speaks (ir.py) and its file format, ExecuTorch's
ET12 .pte (pte.py). Takes nothing from the other stages; gives Program and its bytes."""

"""Per-operator int8 lowering handlers, one module per family, registered by operator
(registry.py). The import order below is the registration order: a node takes the first
handler that accepts it (elementwise registers add and mul before the lookup table, which
also accepts them with a number operand)."""
from mcu_gen.quantize.int8_ops import (  # noqa: F401
    compare, conv, elementwise, indexing, linear, movement, pool, shape, softmax)
from mcu_gen.quantize.int8_ops.registry import HANDLERS, Handler, find, handler  # noqa: F401

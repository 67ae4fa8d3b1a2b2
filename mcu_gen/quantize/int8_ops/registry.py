"""The registry of int8 lowering handlers: one function per operator (or family of overloads),
registered with @handler, looked up by the lowering (mcu_gen/quantize/lowering.py's try_int8).

    @handler(aten.max_pool2d.default)
    def max_pool(lw, node, qnode, act): ...   # None: lowered; a string: why not (fp32 island)

    @handler(when=is_lut_node)               # a predicate instead of (or beside) the targets
    def lut(lw, node, qnode, act): ...

    @handler(aten.argmax.default, plain=True)  # results that are not quantized (indices, masks,
    def argmax(lw, node, qnode, act): ...      # a tuple of values and indices): qnode and act are None

A node takes the first registered handler whose targets hold its target (any target when none are
given) and whose `when` accepts it; registration order is import order (int8_ops/__init__.py).
Adding an operator is adding a handler to its family's module, or a new module imported there."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Handler:
    fn: Callable
    targets: frozenset  # empty: every target (then `when` decides)
    when: Optional[Callable] = None
    plain: bool = False  # also takes nodes whose result is not quantized (int64 / bool results, tuples)

    def accepts(self, node) -> bool:
        return (not self.targets or node.target in self.targets) and (self.when is None or self.when(node))


HANDLERS: list = []


def handler(*targets, when: Optional[Callable] = None, plain: bool = False):
    """Registers fn(lw, node, qnode, act) -> None | reason for these operator overloads."""
    def register(fn):
        HANDLERS.append(Handler(fn, frozenset(targets), when, plain))
        return fn
    return register


def find(node) -> Optional[Handler]:
    return next((h for h in HANDLERS if h.accepts(node)), None)

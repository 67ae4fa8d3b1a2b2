"""The errors every stage shares. Each stage raises its own subclass of McuGenError (ExportError,
PlanError, PteError, LinkError, ...); the command line prints any of them as one clear line."""


class McuGenError(Exception):
    """A failure that mcu-gen explains in its message: what went wrong and what to do."""


class BuildError(McuGenError, RuntimeError):
    """A build that cannot go on; the message says why and what to do."""

"""Stage 8, device: a built firmware on a board (QEMU or a serial port), the verify protocol and its
link, flashing, and the verdict: run() and verify_port() compare the device's outputs with the
reference. Takes a BuildResult; gives a RunResult."""

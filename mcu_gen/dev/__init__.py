"""Tools for developers of models and of mcu-gen, on top of every stage: per-operator profile and
first-divergence debug from the device, the program fuzzer, the pytest plugin (`mcu` fixture)
and a fault-injecting serial proxy."""

"""Stage 4, backends: which kernels exist (the registry lines of kernels_portable/ and
kernels_cmsis_nn/), which one runs each operator, CMSIS-NN's facts (scratch sizes) and the
Ethos-U delegate. Takes a Program; gives kernel selections and delegated programs."""

"""Stage 2, capture: a model file or .pt2 -> torch.export -> core-ATen graph passes (BN folding,
activation fusion, the mcu:: torch ops) -> an fp32 IR Program, with each operator's source line."""

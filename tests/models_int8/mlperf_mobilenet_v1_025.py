"""ExecuTorch's MLPerf Tiny visual wake words model, MobileNetV1025, as shipped in the executorch wheel
(executorch.examples.models.mlperf_tiny), with seeded random weights."""
import torch
from executorch.examples.models.mlperf_tiny import MobileNetV1025Model


def model():
    torch.manual_seed(20)
    return MobileNetV1025Model().get_eager_model().eval()


def _shape():
    return tuple(MobileNetV1025Model().get_example_inputs()[0].shape)


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(_shape(), generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)

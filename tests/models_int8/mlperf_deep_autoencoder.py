"""ExecuTorch's MLPerf Tiny anomaly detection model, DeepAutoEncoder, as shipped in the executorch wheel
(executorch.examples.models.mlperf_tiny), with seeded random weights."""
import torch
from executorch.examples.models.mlperf_tiny import DeepAutoEncoderModel


def model():
    torch.manual_seed(20)
    return DeepAutoEncoderModel().get_eager_model().eval()


def _shape():
    return tuple(DeepAutoEncoderModel().get_example_inputs()[0].shape)


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(_shape(), generator=g),) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)

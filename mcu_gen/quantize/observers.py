"""How calibration turns the values an activation took into its int8 scale and zero point.

    --calibration-method histogram       (default) torchao's HistogramObserver: the range that minimises
                                         the quantization error of the observed histogram (clips rare outliers)
    --calibration-method minmax          the smallest and largest value seen (nothing clipped)
    --calibration-method moving_average  min and max averaged over the calibration samples (one sample's
                                         outlier moves the range by AVERAGING_CONSTANT of it)
    --calibration-method percentile      the PERCENTILE-th and (100 - PERCENTILE)-th percentiles of the
                                         values seen (clips the rarest values)

Weights are always per output channel (conv) or per tensor (linear), min/max, symmetric: the int8 spec.

Every activation gets one CalibrationObserver that runs the four methods side by side during the one
calibration pass, so the methods can be compared on the user's data without calibrating again
(calibration.compare_methods); ``method`` chooses which one gives the parameters at convert time.
"""
from __future__ import annotations

import torch
from torchao.quantization.pt2e import HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver
from torchao.quantization.pt2e.observer import UniformQuantizationObserverBase

METHODS = ("histogram", "minmax", "moving_average", "percentile")
DEFAULT_METHOD = "histogram"  # an observer's method until one is set; what `auto` falls back to
AUTO = "auto"  # calibration.quantize_ptq: the method (and bias correction) with the lowest measured error
CHOICES = METHODS + (AUTO,)  # what a user may ask for (--calibration-method)
DEFAULT_CHOICE = AUTO
EPS = 2**-16  # the smallest scale: small-range tensors (logits of +-0.05) keep their resolution, and a constant tensor still gets a usable scale
AVERAGING_CONSTANT = 0.1
PERCENTILE = 99.99
SAMPLE_VALUES = 4096  # values kept per observed batch for the percentiles (evenly spaced, deterministic)
MAX_VALUES = 1 << 18  # values kept in all


def check_method(method: str, choices: tuple = METHODS) -> str:
    """The method name, or a ValueError naming the choices."""
    if method not in choices:
        raise ValueError(f"calibration method {method!r}: choose one of {', '.join(choices)}")
    return method


class PercentileObserver(UniformQuantizationObserverBase):
    """The range from percentiles of the observed values (a deterministic sample of each batch)."""

    def __init__(self, dtype=torch.int8, qscheme=torch.per_tensor_affine, quant_min=None, quant_max=None,
                 eps=EPS, percentile: float = PERCENTILE, **kwargs):
        super().__init__(dtype=dtype, qscheme=qscheme, quant_min=quant_min, quant_max=quant_max, eps=eps, **kwargs)
        self.percentile = percentile
        self.values: list = []
        self.kept = 0

    def forward(self, x_orig):
        if x_orig.numel() == 0 or self.kept >= MAX_VALUES:
            return x_orig
        x = x_orig.detach().reshape(-1).float()
        if x.numel() > SAMPLE_VALUES:
            x = x[torch.linspace(0, x.numel() - 1, SAMPLE_VALUES).long()]
        self.values.append(x.clone())
        self.kept += x.numel()
        return x_orig

    def calculate_qparams(self):
        if not self.values:
            return self._calculate_qparams(torch.tensor(0.0), torch.tensor(0.0))
        v = torch.cat(self.values)
        q = torch.tensor([1.0 - self.percentile / 100.0, self.percentile / 100.0])
        lo, hi = torch.quantile(v, q)
        return self._calculate_qparams(lo, hi)


class CalibrationObserver(UniformQuantizationObserverBase):
    """All of METHODS on one activation; ``method`` chooses whose parameters convert_pt2e gets."""

    def __init__(self, dtype=torch.int8, qscheme=torch.per_tensor_affine, quant_min=None, quant_max=None,
                 eps=EPS, method: str = DEFAULT_METHOD, **kwargs):
        super().__init__(dtype=dtype, qscheme=qscheme, quant_min=quant_min, quant_max=quant_max, eps=eps, **kwargs)
        self.method = check_method(method)
        args = dict(dtype=dtype, qscheme=qscheme, quant_min=quant_min, quant_max=quant_max, eps=eps)
        self.by_method = torch.nn.ModuleDict({
            "histogram": HistogramObserver(**args),
            "minmax": MinMaxObserver(**args),
            "moving_average": MovingAverageMinMaxObserver(averaging_constant=AVERAGING_CONSTANT, **args),
            "percentile": PercentileObserver(**args),
        })

    def forward(self, x_orig):
        # An additive attention mask (-inf where masked) or a clamp to inf carries values no int8 range
        # holds: the range comes from the finite values, and the infinities saturate to the int8 limits
        # (a masked logit at -128 is exp(-128 * scale - max) in softmax, as near 0 as int8 gets).
        x = x_orig.detach()
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            x = x[torch.isfinite(x)]
            if x.numel() == 0:
                return x_orig
        for obs in self.by_method.values():
            obs(x)
        return x_orig

    def calculate_qparams(self):
        return self.by_method[self.method].calculate_qparams()

    def extra_repr(self) -> str:
        return f"method={self.method}"


def calibration_observers(gm: torch.nn.Module) -> list:
    return [m for m in gm.modules() if isinstance(m, CalibrationObserver)]


def set_method(gm: torch.nn.Module, method: str) -> None:
    """Every activation of the prepared model `gm` takes its parameters from `method` from now on."""
    check_method(method)
    for obs in calibration_observers(gm):
        obs.method = method

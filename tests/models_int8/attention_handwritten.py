"""Attention written by hand, as people write it: timm ViT style (a qkv Linear, reshape to [B, L, 3, H, D], permute,
unbind) and nanoGPT style (qkv.split(E, dim=2), view / transpose to heads, scaled scores, softmax, @ v, transpose
back, contiguous, view), each in a residual block."""
import torch
from torch import nn
SHAPES = [(1, 16, 32)]
class TimmAttn(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.h, self.d = heads, dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, self.d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = (q @ k.transpose(-2, -1)) * self.d ** -0.5
        a = a.softmax(dim=-1)
        x = (a @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
class GptAttn(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.h = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a1, self.a2 = TimmAttn(32, 4), GptAttn(32, 2)
        self.fc = nn.Linear(32, 5)
    def forward(self, x):
        x = x + self.a1(x)
        x = x + self.a2(x)
        return self.fc(x.mean(1))


def model():
    torch.manual_seed(19)
    return Net().eval()


def _inputs(seed, count):
    g = torch.Generator().manual_seed(seed)
    return [tuple(2 * torch.rand(s, generator=g) - 1 for s in SHAPES) for _ in range(count)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)

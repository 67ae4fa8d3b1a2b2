"""A Llama-style decoder block (as in Hugging Face transformers' modeling_llama.py, small): RMSNorm, rotary
position embeddings in their real form (rotate_half with cos/sin buffers), grouped-query attention
(repeat_interleave of 2 key/value heads to 4), a causal mask from torch.triu with masked_fill(-inf), SwiGLU."""
import torch
from torch import nn
import torch.nn.functional as F

WIDTH, HEADS, KV_HEADS, STEPS = 32, 4, 2, 12


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = WIDTH // HEADS
        self.q_proj = nn.Linear(WIDTH, HEADS * self.head_dim, bias=False)
        self.k_proj = nn.Linear(WIDTH, KV_HEADS * self.head_dim, bias=False)
        self.v_proj = nn.Linear(WIDTH, KV_HEADS * self.head_dim, bias=False)
        self.o_proj = nn.Linear(HEADS * self.head_dim, WIDTH, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(STEPS).float(), inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, HEADS, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, KV_HEADS, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, KV_HEADS, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[:T], self.sin[:T]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
        v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        scores = (q @ k.transpose(-2, -1)) / (self.head_dim ** 0.5)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return self.o_proj((weights @ v).transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.gate_proj = nn.Linear(WIDTH, hidden, bias=False)
        self.up_proj = nn.Linear(WIDTH, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, WIDTH, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(WIDTH)
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm(WIDTH)
        self.mlp = MLP()
        self.norm = RMSNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return self.head(self.norm(x)[:, -1])


def model():
    torch.manual_seed(0)
    return Decoder().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, STEPS, WIDTH, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)

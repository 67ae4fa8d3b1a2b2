"""A variational autoencoder used as an anomaly scorer (eval: decode the mean): per-sample reconstruction error
(F.mse_loss, reduction="none"), the KL term of a softplus-parameterised variance, the cosine similarity of
input and reconstruction, and torch.cdist between the latent means. cdist, cosine_similarity and mse_loss stay
fp32 islands of the int8 program, whose outputs must equal the host integer reference's bit for bit."""
import torch
from torch import nn
import torch.nn.functional as F


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(32, 16), nn.ELU())
        self.mu = nn.Linear(16, 4)
        self.logvar = nn.Linear(16, 4)
        self.dec = nn.Sequential(nn.Linear(4, 16), nn.ELU(), nn.Linear(16, 32))

    def forward(self, x):
        h = self.enc(x)
        mu = self.mu(h)
        logvar = torch.log(F.softplus(self.logvar(h)) + 1e-4)
        rec = self.dec(mu)
        err = F.mse_loss(rec, x, reduction="none").mean(-1)
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)
        return err, kl, F.cosine_similarity(rec, x, dim=-1), torch.cdist(mu, mu)


def model():
    torch.manual_seed(0)
    return VAE().eval()


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(3, 32, generator=g),) for _ in range(n)]


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)

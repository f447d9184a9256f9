"""Attention scorers behind one interface, selected by name.

Every scorer splits into ``prepare(memory)``, run once per utterance (the
encoder-side projection U h_j does not depend on the decoder step), and
``score(query, keys, memory, location)``, run at every decoder step. Nothing is
cached on the module: the prepared keys and the previous alignments are passed
in explicitly, so one module serves any number of utterances at once.

    location          e_ij = v^T tanh(W s_i + U h_j + F f_ij + b)   (Chorowski et al. 2015)
    content           e_ij = v^T tanh(W s_i + U h_j + b)            (Bahdanau et al. 2015)
    dot               e_ij = s_i^T h_j / sqrt(d)                    (Luong et al. 2015)
    general           e_ij = s_i^T W h_j / sqrt(d)                  (Luong et al. 2015)
    location_general  e_ij = s_i^T W h_j / sqrt(d) + v^T F f_ij
f_ij are location features: a conv over the previous and cumulative alignments.

Every form reaches a diagonal alignment, but only the two with location features become sharp and keep
words; location is the default (docs/ablation.md, "The attention scorers", has each one's measured row).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from vc.errors import ConfigError


class LocationFeatures(nn.Module):
    """f_i = conv1d([alpha_{i-1}, sum_{k<i} alpha_k]) projected to the attention dim."""

    def __init__(self, filters: int, kernel: int, attention_dim: int):
        super().__init__()
        self.conv = nn.Conv1d(2, filters, kernel, padding=kernel // 2, bias=False)
        self.proj = nn.Linear(filters, attention_dim, bias=False)

    def forward(self, prev_alpha: torch.Tensor, cum_alpha: torch.Tensor) -> torch.Tensor:
        # (B, N) x 2 -> (B, 2, N) -> (B, filters, N) -> (B, N, attention_dim)
        return self.proj(self.conv(torch.stack([prev_alpha, cum_alpha], dim=1)).transpose(1, 2))


class Attention(nn.Module):
    """Base: masking, softmax and context; subclasses define prepare() and score().

    Shapes:
        query: (B, query_dim); memory: (B, N, memory_dim); pad_mask: (B, N), True on padding
        prev_alpha, cum_alpha: (B, N)
        returns context (B, memory_dim) and alpha (B, N), exactly 0 on masked positions
    """

    uses_location = False

    def prepare(self, memory: torch.Tensor) -> torch.Tensor:
        return memory

    def score(self, query, keys, memory, prev_alpha, cum_alpha) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, query, memory, keys, pad_mask, prev_alpha, cum_alpha, sharpness: float = 1.0):
        """``sharpness`` scales the energies: > 1 narrows the alignment (inference only)."""
        energies = self.score(query, keys, memory, prev_alpha, cum_alpha)
        if sharpness != 1.0:
            energies = energies * sharpness
        # exp(finfo.min - max) underflows to exactly 0, so padding gets no weight.
        energies = energies.masked_fill(pad_mask, torch.finfo(energies.dtype).min)
        alpha = torch.softmax(energies, dim=-1)
        context = torch.bmm(alpha.unsqueeze(1), memory).squeeze(1)
        return context, alpha


class AdditiveAttention(Attention):
    """Bahdanau additive attention, content-only or location-aware."""

    def __init__(
        self,
        query_dim: int,
        memory_dim: int,
        attention_dim: int,
        location: bool,
        location_filters: int = 32,
        location_kernel: int = 31,
    ):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, attention_dim, bias=False)
        self.memory_proj = nn.Linear(memory_dim, attention_dim, bias=True)  # holds b
        self.v = nn.Linear(attention_dim, 1, bias=False)
        self.uses_location = location
        self.location = (
            LocationFeatures(location_filters, location_kernel, attention_dim) if location else None
        )

    def prepare(self, memory):
        return self.memory_proj(memory)  # (B, N, attention_dim), once per utterance

    def score(self, query, keys, memory, prev_alpha, cum_alpha):
        hidden = keys + self.query_proj(query).unsqueeze(1)
        if self.location is not None:
            hidden = hidden + self.location(prev_alpha, cum_alpha)
        return self.v(torch.tanh(hidden)).squeeze(-1)  # (B, N)


class DotAttention(Attention):
    """Scaled dot product; needs attention_rnn_dim == annotation dim."""

    def __init__(self, query_dim: int, memory_dim: int, **_):
        super().__init__()
        if query_dim != memory_dim:
            raise ConfigError(
                f"dot attention needs model.attention_rnn_dim ({query_dim}) equal to the annotation "
                f"dim 2 x model.encoder_hidden_dim ({memory_dim})"
            )
        self.scale = 1.0 / math.sqrt(memory_dim)

    def score(self, query, keys, memory, prev_alpha, cum_alpha):
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1) * self.scale


class GeneralAttention(Attention):
    """Luong's multiplicative attention, optionally with an additive location term."""

    def __init__(
        self,
        query_dim: int,
        memory_dim: int,
        attention_dim: int,
        location: bool,
        location_filters: int = 32,
        location_kernel: int = 31,
    ):
        super().__init__()
        self.memory_proj = nn.Linear(memory_dim, query_dim, bias=False)
        self.scale = 1.0 / math.sqrt(query_dim)
        self.uses_location = location
        if location:
            self.location = LocationFeatures(location_filters, location_kernel, attention_dim)
            self.location_v = nn.Linear(attention_dim, 1, bias=False)

    def prepare(self, memory):
        return self.memory_proj(memory)  # W h_j: (B, N, query_dim)

    def score(self, query, keys, memory, prev_alpha, cum_alpha):
        energies = torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1) * self.scale
        if self.uses_location:
            energies = energies + self.location_v(self.location(prev_alpha, cum_alpha)).squeeze(-1)
        return energies


ATTENTION_TYPES = ("location", "content", "dot", "general", "location_general")


def build_attention(
    attention_type: str,
    query_dim: int,
    memory_dim: int,
    attention_dim: int,
    location_filters: int,
    location_kernel: int,
) -> Attention:
    kwargs = dict(
        query_dim=query_dim,
        memory_dim=memory_dim,
        attention_dim=attention_dim,
        location_filters=location_filters,
        location_kernel=location_kernel,
    )
    if attention_type in ("location", "content"):
        return AdditiveAttention(location=attention_type == "location", **kwargs)
    if attention_type in ("general", "location_general"):
        return GeneralAttention(location=attention_type == "location_general", **kwargs)
    if attention_type == "dot":
        return DotAttention(**kwargs)
    raise ConfigError(
        f"unknown model.attention_type '{attention_type}'; choose one of {', '.join(ATTENTION_TYPES)}"
    )

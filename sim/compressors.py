"""Torch compression operators, applied to every node's row of an (N, d) matrix at once.

Same operators, deltas and bit counts as :mod:`bounds.cdfl.compression` (the numpy reference,
which they are tested against); the bit count of a message comes from there.
"""

from __future__ import annotations

import torch

from bounds.cdfl.compression import QSGD, Compressor, Gossip, Identity, RandK, TopK

__all__ = ["compress_rows"]


def compress_rows(q: Compressor, M: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
    """Q applied to each row of M (N x d), independently per row for the random operators."""
    n, d = M.shape
    if isinstance(q, Identity):
        return M.clone()
    if isinstance(q, TopK | RandK):
        q.check_dimension(d)
        if isinstance(q, TopK):
            keep = M.abs().topk(q.k, dim=1).indices
        else:
            keep = torch.rand(n, d, generator=gen, device=M.device).topk(q.k, dim=1).indices
        return torch.zeros_like(M).scatter_(1, keep, M.gather(1, keep))
    if isinstance(q, Gossip):
        send = torch.rand(n, 1, generator=gen, device=M.device) < q.p
        return torch.where(send, M, torch.zeros_like(M))
    if isinstance(q, QSGD):
        norm = M.norm(dim=1, keepdim=True)
        scaled = torch.where(norm > 0, q.s * M.abs() / norm.clamp_min(torch.finfo(M.dtype).tiny), 0.0)
        low = scaled.floor()
        level = low + (torch.rand(n, d, generator=gen, device=M.device, dtype=M.dtype) < scaled - low)
        return M.sign() * norm / (q.s * q.c(d)) * level
    raise TypeError(f"no torch implementation for compressor {q!r}")

"""RoBERTa for masked-language-model pretraining in plain PyTorch (``torch.nn``): fairseq's
``roberta_base``/``roberta_large`` encoder (post-LayerNorm transformer, learned positions offset
past the padding index as fairseq's ``make_positions``, LayerNorm on the embeddings, GELU, the LM
head's dense + GELU + LayerNorm and a decoder tied to the token embeddings), BERT's N(0, 0.02)
initialisation. Runs on the hosts (shipped with pretrain.py); torch only.

docs/models.md says why this and not ``transformers``' RobertaForMaskedLM or fairseq's modules.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

#: fairseq's architectures: (layers, embedding dim, attention heads, FFN dim)
ARCHS = {"roberta_base": (12, 768, 12, 3072), "roberta_large": (24, 1024, 16, 4096)}


class RobertaLM(nn.Module):
    def __init__(self, vocab: int, layers: int, dim: int, heads: int, ffn: int, max_positions: int,
                 pad: int = 1, dropout: float = 0.1) -> None:
        super().__init__()
        self.pad = pad
        self.embed_tokens = nn.Embedding(vocab, dim, padding_idx=pad)
        self.embed_positions = nn.Embedding(max_positions + pad + 1, dim, padding_idx=pad)
        self.emb_layer_norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(dim, heads, ffn, dropout, activation="gelu", batch_first=True)
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.lm_dense = nn.Linear(dim, dim)
        self.lm_layer_norm = nn.LayerNorm(dim)
        self.lm_bias = nn.Parameter(torch.zeros(vocab))
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        with torch.no_grad():
            self.embed_tokens.weight[pad].zero_()
            self.embed_positions.weight[pad].zero_()

    def forward(self, tokens: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
        """Logits at the ``masked`` positions only (``[masked count, vocab]``), as fairseq's head."""
        padding = tokens.eq(self.pad)
        keep = (~padding).long()
        positions = torch.cumsum(keep, dim=1) * keep + self.pad
        x = self.embed_tokens(tokens) + self.embed_positions(positions)
        x = self.dropout(self.emb_layer_norm(x))
        x = self.layers(x, src_key_padding_mask=padding)
        x = self.lm_layer_norm(F.gelu(self.lm_dense(x[masked])))
        return F.linear(x, self.embed_tokens.weight, self.lm_bias)


def build(arch: str, vocab: int, max_positions: int, *, layers: int = 0, dim: int = 0, heads: int = 0,
          ffn: int = 0) -> RobertaLM:
    """``arch``'s sizes, each overridden where given (a tiny model for tests)."""
    base = ARCHS[arch]
    sizes = [given or default for given, default in zip((layers, dim, heads, ffn), base)]
    return RobertaLM(vocab, *sizes, max_positions=max_positions)

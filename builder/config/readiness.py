"""Can ``tpubuild train`` run with this values.env as it stands? Warnings (not errors: the
infrastructure is still valid) that ``tpubuild validate`` prints; ``load`` does not add them to
``Settings.warnings`` (other commands do not train). Each model says its own
(``warnings(settings)`` in models/<name>/keys.py, through builder/config/model_registry.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.config.model_registry import advice

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings


def train_warnings(settings: Settings) -> list[str]:
    return advice(settings)

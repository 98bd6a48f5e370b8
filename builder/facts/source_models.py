"""The models/ folder of the source tree tpubuild runs from, and the model a values.env without a
MODEL line selects (the one named in models/DEFAULT_MODEL): facts that builder/config/keys.py (the
MODEL key's default) and builder/config/model_registry.py (the registry) both read, so neither imports
the other for them."""

from __future__ import annotations

from pathlib import Path

SOURCE_MODELS = Path(__file__).resolve().parents[2] / "models"
DEFAULT_MODEL = (SOURCE_MODELS / "DEFAULT_MODEL").read_text().strip()

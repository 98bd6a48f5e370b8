"""The models/ folder of the source tree tpubuild runs from, and the model a values.env without a
MODEL line selects (the one named in models/DEFAULT_MODEL): facts that builder/config/keys.py (the
MODEL key's default) and builder/config/model_registry.py (the registry) both read, so neither imports
the other for them. tpubuild runs from its checkout (README, "Start here": ``pip install -e .``);
a wheel install has no models/ and stops here with one line."""

from __future__ import annotations

from pathlib import Path

SOURCE_MODELS = Path(__file__).resolve().parents[2] / "models"
if not (SOURCE_MODELS / "DEFAULT_MODEL").is_file():  # a wheel install: builder/ without its source tree
    raise SystemExit(f"tpubuild: {SOURCE_MODELS} is missing: tpubuild runs from its source checkout (models/, "
                     "modules/ and env_setup/ beside builder/); install it there with `pip install -e .`")
DEFAULT_MODEL = (SOURCE_MODELS / "DEFAULT_MODEL").read_text().strip()

"""values.env keys of the model packages (``models/<name>/``).

Each entry is a :class:`builder.config.keys.KeySpec`; the typed values land in
``Settings.model_options`` under the spec's ``field``. The model packages own their keys here.
"""

from __future__ import annotations

from builder.config.keys import KeySpec

MODEL_KEYS: tuple[KeySpec, ...] = ()

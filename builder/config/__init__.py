"""values.env → typed, validated :class:`Settings`.

``load(path)`` is the only entry point. It raises :class:`builder.errors.ConfigError` (exit 2)
for the first problem, located at ``file:line`` and naming the key and the fix. Unknown keys and
missing seed-era script paths are warnings, kept in ``Settings.warnings``.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, NoReturn

from builder.config import hardening, names, offers, validate
from builder.config.keys import IGNORED_KEYS, KEYS, KeySpec
from builder.config.loader import Entry, parse, read_text
from builder.config.model_keys import MODEL_KEYS
from builder.legacy import SEED_SCRIPTS
from builder.config.settings import Settings
from builder.errors import BadInput, ConfigError
from builder.topology import parse as parse_topology

__all__ = ["Settings", "load", "load_text", "known_keys"]

_SPECS: dict[str, KeySpec] = {k.name: k for k in KEYS}
_MODEL_SPECS: dict[str, KeySpec] = {k.name: k for k in MODEL_KEYS}


def known_keys() -> list[str]:
    return [*_SPECS, *_MODEL_SPECS]


def load(path: Path | str) -> Settings:
    path = Path(path)
    return load_text(read_text(path), path)


def load_text(text: str, path: Path | str) -> Settings:
    path = Path(path)
    entries = parse(text, path)
    by_key: dict[str, Entry] = {}
    warnings: list[str] = []
    for e in entries:
        if e.key in by_key and by_key[e.key].value != e.value:
            warnings.append(f"{path}:{e.line}: {e.key} is set again (first on line {by_key[e.key].line}); the later value wins")
        by_key[e.key] = e
    lines = {k: e.line for k, e in by_key.items()}

    def fail(key: str, what: str, fix: str) -> NoReturn:
        raise ConfigError(what, fix, path=path, line=lines.get(key), key=key)

    for key, e in by_key.items():
        if key in _SPECS or key in _MODEL_SPECS or key in IGNORED_KEYS:
            continue
        guess = difflib.get_close_matches(key, known_keys(), n=1, cutoff=0.75)
        hint = f"did you mean {guess[0]}?" if guess else "it is ignored"
        warnings.append(f"{path}:{e.line}: {key} is not a tpubuild key; {hint}")

    values: dict[str, Any] = {}
    model_options: dict[str, Any] = {}
    for specs, target in ((_SPECS, values), (_MODEL_SPECS, model_options)):
        for name, spec in specs.items():
            entry = by_key.get(name)
            if entry is None or (spec.required and entry.value.strip() == ""):
                if spec.required:
                    raise ConfigError(
                        "is required but not set", f'add {name}="..." ({spec.doc})', path=path,
                        line=entry.line if entry else None, key=name,
                    )
                target[spec.field] = spec.default
                continue
            try:
                target[spec.field] = spec.parse(entry.value)
            except ValueError as exc:
                what, _, fix = str(exc).partition("; ")
                raise ConfigError(what, fix, path=path, line=entry.line, key=name) from None

    # One runtime key, two names.
    alias = values.pop("runtime_version_alias")
    runtime = values["runtime_version"]
    if alias and runtime and alias != runtime:
        fail("TPU_RUNTIME_VERSION", f"says {alias!r} but TPU_PYTORCH_VERSION says {runtime!r}", "set only one of them")
    runtime_key = "TPU_PYTORCH_VERSION" if runtime else "TPU_RUNTIME_VERSION"
    runtime = runtime or alias
    mig = values["arch"] == "mig"  # TPU VMs as Compute Engine instances boot an OS image: no TPU runtime
    if mig and runtime:
        fail(runtime_key, f"{runtime!r} is a TPU runtime, but TPU_ARCH=\"mig\" hosts boot the accelerator OS image "
             "(builder/topology.py MIG_GENERATIONS) and have no TPU runtime", f"remove {runtime_key}")
    if not runtime and not mig:
        fail("TPU_PYTORCH_VERSION", "is required but not set",
             'add TPU_PYTORCH_VERSION="pytorch-nightly" (node) or "tpu-ubuntu2204-base" (vm)')
    values["runtime_version"] = runtime

    try:
        topo = parse_topology(values["accelerator_type"])
    except BadInput as exc:
        fail("TPU_ACCELERATOR_TYPE", str(exc), "")
    arch_declared = bool(values["arch"])
    if mig:
        validate.mig_for(values, topo, fail)
    else:
        values["arch"] = validate.infer_arch(values["arch"], runtime, fail, runtime_key=runtime_key)
        validate.runtime_for(runtime, values["arch"], topo, fail, runtime_key=runtime_key, arch_declared=arch_declared)
    validate.cross_checks(values, topo, fail, lines)
    offers.resolve_provisioning(values, topo, fail, lines)
    if values["arch"] != "node" and values["zone_check"] == "warn":  # TPU_ZONE_CHECK="warn": a stale table must not block
        def zone_warning(key: str, what: str, fix: str) -> None:
            warnings.append(f"{path}:{lines.get(key, 0)}: {key}: {what}; TPU_ZONE_CHECK=\"warn\" lets it through "
                            "(the create fails in the cloud if the zone really has no such TPU)")

        offers.check_zone(values["zone"], topo, zone_warning)
    elif values["arch"] != "node":
        offers.check_zone(values["zone"], topo, fail)
    validate.name_lengths(values, fail)
    values["region"] = values["region"] or values["zone"].rsplit("-", 1)[0]

    root = path.resolve().parent
    for key, field in (("MIG_SETUP_SCRIPT", "mig_setup_script"), ("MIG_SEED_DATA_PREP_SCRIPT", "mig_seed_data_prep_script")):
        rel = values[field]
        if rel and not (root / rel).is_file() and not (root / "models" / rel).is_file():
            if rel in SEED_SCRIPTS:
                warnings.append(f"{path}:{lines[key]}: {key}={rel!r} is the seed repository's own script, which "
                                "tpubuild replaces; run tpubuild migrate to clear it")
                continue
            warnings.append(
                f"{path}:{lines[key]}: {key}={rel!r} does not exist in this repository "
                "(a seed-era path?); it is an error only when a pipeline uses it"
            )

    settings = Settings(
        source=path, topology=topo, model_options=model_options,
        raw={k: e.value for k, e in by_key.items()}, lines=lines, warnings=tuple(warnings), **values,
    )
    names.check(settings, fail)  # Google's naming rules, for every derived and supplied name
    hardening.cross_checks(settings, fail)
    return settings

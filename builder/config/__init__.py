"""values.env → typed, validated :class:`Settings`.

``load(path)`` is the only entry point. It checks everything and raises one
:class:`builder.errors.ConfigErrors` (a ``ConfigError``, exit 2) carrying every problem found, each
located at ``file:line`` and naming the key and the fix (``tpubuild validate`` prints one line
each; other commands print the first and the count). Every key is parsed on its own, so all bad
values are reported together; a rule between keys that fails stops only its own group of rules.
Unknown keys are warnings by default (a seed-era file keeps working) and errors with
``strict=True`` (``tpubuild validate --strict``); missing seed-era script paths are warnings;
warnings are kept in ``Settings.warnings``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from builder.config import hardening, names, offers, validate
from builder.config.keys import IGNORED_KEYS, KEYS, KeySpec
from builder.config.loader import Entry, parse, read_text
from builder.config.scripts import find_script
from builder.model_registry import model_keys
from builder.legacy import SEED_SCRIPTS
from builder.config.settings import Settings
from builder.errors import BadInput, ConfigError, ConfigErrors
from builder.topology import parse as parse_topology

__all__ = ["Settings", "load", "load_text", "known_keys"]

_SPECS: dict[str, KeySpec] = {k.name: k for k in KEYS}


def _model_specs(folder: Path | None = None) -> dict[str, KeySpec]:
    """The registered models' keys (builder/model_registry.py), for values.env in ``folder``."""
    return {k.name: k for k in model_keys(folder)}


def known_keys(folder: Path | None = None) -> list[str]:
    return [*_SPECS, *_model_specs(folder)]


def load(path: Path | str, *, strict: bool = False) -> Settings:
    path = Path(path)
    return load_text(read_text(path), path, strict=strict)


class _Stop(Exception):
    """A rule failed (its ConfigError is collected); the rest of its group is skipped."""


def load_text(text: str, path: Path | str, *, strict: bool = False) -> Settings:
    path = Path(path)
    errors: list[ConfigError] = []
    broken: set[str] = set()  # keys whose value could not be read (their root cause is reported)
    entries = parse(text, path, errors, broken)
    by_key: dict[str, Entry] = {}
    warnings: list[str] = []
    for e in entries:
        if e.key in by_key and by_key[e.key].value != e.value:
            warnings.append(f"{path}:{e.line}: {e.key} is set again (first on line {by_key[e.key].line}); the later value wins")
        by_key[e.key] = e
    lines = {k: e.line for k, e in by_key.items()}
    model_specs = _model_specs(path.resolve().parent)

    def fail(key: str, what: str, fix: str) -> NoReturn:
        errors.append(ConfigError(what, fix, path=path, line=lines.get(key), key=key))
        raise _Stop

    for key, e in by_key.items():
        if key in _SPECS or key in model_specs or key in IGNORED_KEYS:
            continue
        import difflib  # only on a typo: not at start-up

        guess = difflib.get_close_matches(key, [*_SPECS, *model_specs], n=1, cutoff=0.75)
        if strict:
            hint = f"did you mean {guess[0]}?" if guess else "remove it, or run without --strict to ignore it"
            errors.append(ConfigError(f"is not a tpubuild key", hint, path=path, line=e.line, key=key))
            continue
        hint = f"did you mean {guess[0]}?" if guess else "it is ignored"
        warnings.append(f"{path}:{e.line}: {key} is not a tpubuild key; {hint} (an error with --strict)")

    unparsed = {e.key for e in errors if e.key} | broken  # already reported: a line that did not parse
    values: dict[str, Any] = {}
    model_options: dict[str, Any] = {}
    invalid: dict[str, ConfigError] = {}
    for specs, target in ((_SPECS, values), (model_specs, model_options)):
        for name, spec in specs.items():
            entry = by_key.get(name)
            if entry is None or (spec.required and entry.value.strip() == ""):
                if spec.required and name not in unparsed:
                    errors.append(ConfigError(
                        "is required but not set", f'add {name}="..." ({spec.doc})', path=path,
                        line=entry.line if entry else None, key=name,
                    ))
                target[spec.field] = spec.default
                continue
            try:
                target[spec.field] = spec.parse(entry.value)
            except ValueError as exc:
                what, _, fix = str(exc).partition("; ")
                invalid[name] = ConfigError(what, fix, path=path, line=entry.line, key=name)
                target[spec.field] = spec.default
    # a value made of an invalid key through ${KEY} is wrong because of it: report the root once
    errors.extend(e for k, e in invalid.items() if not by_key[k].refs & invalid.keys())
    if errors:  # the rules between keys need every value; report what is wrong so far
        raise ConfigErrors(errors, tuple(warnings))

    try:
        topo = _rules(values, fail)
    except _Stop:
        topo = None
    if topo is not None:
        def zone_warning(key: str, what: str, fix: str) -> None:
            warnings.append(f"{path}:{lines.get(key, 0)}: {key}: {what}; TPU_ZONE_CHECK=\"warn\" lets it through "
                            "(the create fails in the cloud if the zone really has no such TPU)")

        def zone() -> None:
            if values["arch"] != "node":  # TPU_ZONE_CHECK="warn": a stale table must not block
                offers.check_zone(values["zone"], topo, zone_warning if values["zone_check"] == "warn" else fail)

        _each_group(lambda: validate.cross_checks(values, topo, fail, lines),
                    lambda: offers.resolve_provisioning(values, topo, fail, lines), zone,
                    lambda: validate.name_lengths(values, fail))
    if errors:
        raise ConfigErrors(errors, tuple(warnings))
    values["region"] = values["region"] or values["zone"].rsplit("-", 1)[0]
    assert topo is not None
    settings = _finish(path, values, model_options, by_key, lines, warnings, topo)
    # Google's naming rules for every derived and supplied name, then the rules on the whole Settings
    _each_group(lambda: names.check(settings, fail), lambda: hardening.cross_checks(settings, fail))
    if errors:
        raise ConfigErrors(errors, tuple(warnings))
    return settings


def _each_group(*groups: Callable[[], object]) -> None:
    """Run every group of rules; a failing rule (its error already collected) ends only its group."""
    for group in groups:
        try:
            group()
        except _Stop:
            pass


def _rules(values: dict[str, Any], fail: Any) -> Any:
    """Runtime (one key, two names), accelerator type, architecture and runtime rules."""
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
             "(the generation record's mig image, builder/data/tpu_offers.json) and have no TPU runtime", f"remove {runtime_key}")
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
    return topo


def _finish(path: Path, values: dict[str, Any], model_options: dict[str, Any], by_key: dict[str, Entry],
            lines: dict[str, int], warnings: list[str], topo: Any) -> Settings:
    root = path.resolve().parent
    for key, field in (("MIG_SETUP_SCRIPT", "mig_setup_script"), ("MIG_SEED_DATA_PREP_SCRIPT", "mig_seed_data_prep_script")):
        rel = values[field]
        if rel and find_script(root, rel) is None:
            if rel in SEED_SCRIPTS:
                warnings.append(f"{path}:{lines[key]}: {key}={rel!r} is the seed repository's own script, which "
                                "tpubuild replaces; run tpubuild migrate to clear it")
                continue
            warnings.append(
                f"{path}:{lines[key]}: {key}={rel!r} does not exist in this repository "
                "(a seed-era path?); it is an error only when a pipeline uses it"
            )

    return Settings(
        source=path, topology=topo, model_options=model_options,
        raw={k: e.value for k, e in by_key.items()}, lines=lines, warnings=tuple(warnings),
        refs={k: e.refs for k, e in by_key.items() if e.refs}, **values,
    )

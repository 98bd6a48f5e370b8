"""values.env → typed, validated :class:`Settings`.

``load(path)`` is the only entry point. It checks everything and raises one
:class:`builder.facts.errors.ConfigErrors` (a ``ConfigError``, exit 2) carrying every problem found, each
located at ``file:line`` and naming the key and the fix (``tpubuild validate`` prints one line
each; other commands print the first and the count). Every key is parsed on its own, so all bad
values are reported together; a rule between keys that fails stops only its own group of rules.
Unknown keys are warnings by default (a seed-era file keeps working) and errors with
``strict=True`` (``tpubuild validate --strict``); missing seed-era script paths are warnings;
warnings are kept in ``Settings.warnings``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from builder.config import gate, hardening, names, offers, recovery, replace, validate
from builder.config.candidates import ordered
from builder.config.keys import IGNORED_KEYS, KEYS, KeySpec
from builder.config.legacy import seed_scripts
from builder.config.loader import Entry, parse, read_text
from builder.config.model_registry import model_keys
from builder.config.scripts import find_script
from builder.config.settings import Settings
from builder.facts.errors import BadInput, ConfigError, ConfigErrors
from builder.facts.records import replace as replace_record
from builder.facts.topology import parse as parse_topology

__all__ = ["Settings", "load", "load_text", "known_keys"]

_SPECS: dict[str, KeySpec] = {k.name: k for k in KEYS}


def _model_specs(folder: Path | None = None) -> dict[str, KeySpec]:
    """The registered models' keys (builder/config/model_registry.py), for values.env in ``folder``."""
    return {k.name: k for k in model_keys(folder)}


def known_keys(folder: Path | None = None) -> list[str]:
    return [*_SPECS, *_model_specs(folder)]


def load(path: Path | str, *, strict: bool = False, later: bool = False) -> Settings:
    """``later``: also refuse what a later command would refuse about this file
    (builder/config/later.py); ``tpubuild validate`` loads this way."""
    path = Path(path)
    return load_text(read_text(path), path, strict=strict, later=later)


#: How close an unknown key must be to a known one (difflib's ratio) to be taken for a misspelling.
NEAR_MISS = 0.75


def _unknown_keys(by_key: dict[str, Entry], known: list[str], path: Path, errors: list[ConfigError],
                  warnings: list[str], *, strict: bool, applied: bool) -> None:
    """Keys tpubuild does not know. Seed-era keys that never meant anything (``IGNORED_KEYS``) are
    accepted quietly. A near miss of a known key (``TPU_PROVISONING``, ``ENV_TTL_HOUR``) is an
    error: ignoring it would build and bill something else than the file says (on-demand instead
    of spot, no TTL, recovery on, 125,000 updates). A key unlike any known one stays a warning (a
    note or a helper of the user's), and so does a near miss that another key reads through
    ``${KEY}`` (a helper the user named on purpose). ``strict``: every unknown key is an error.
    ``applied``: values already applied are read as they were built (near misses were ignored
    then), so there they stay warnings."""
    helpers = {ref for e in by_key.values() for ref in e.refs}
    for key, e in by_key.items():
        if key in known or key in IGNORED_KEYS:
            continue
        import difflib  # only on a typo: not at start-up

        guess = difflib.get_close_matches(key, known, n=1, cutoff=NEAR_MISS)
        if guess and not applied and key not in helpers:
            right = by_key.get(guess[0])
            then = (f"{guess[0]} keeps line {right.line}'s value" if right else f"{guess[0]} stays at its default")
            errors.append(ConfigError(
                f"is not a tpubuild key but a near miss of {guess[0]}: this line would be ignored and {then}",
                f"did you mean {guess[0]}? rename the key" + (" or remove this line" if right else ""),
                path=path, line=e.line, key=key))
            continue
        if strict:
            hint = f"did you mean {guess[0]}?" if guess else "remove it, or run without --strict to ignore it"
            errors.append(ConfigError("is not a tpubuild key", hint, path=path, line=e.line, key=key))
            continue
        hint = f"did you mean {guess[0]}?" if guess else "it is ignored"
        warnings.append(f"{path}:{e.line}: {key} is not a tpubuild key; {hint} (an error with --strict)")


class _Stop(Exception):
    """A rule failed (its ConfigError is collected); the rest of its group is skipped."""


def load_text(text: str, path: Path | str, *, strict: bool = False, later: bool = False,
              applied: bool = False) -> Settings:
    """``applied``: ``text`` is a values.env that was already applied (builder/planning/applied.py): read it
    as it was built, so what is refused only since (a near-miss key, spaces around ``=``) does not
    make the applied values unreadable."""
    path = Path(path)
    errors: list[ConfigError] = []
    broken: set[str] = set()  # keys whose value could not be read (their root cause is reported)
    entries = parse(text, path, errors, broken, bash_assignments=not applied)
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

    _unknown_keys(by_key, [*_SPECS, *model_specs], path, errors, warnings, strict=strict, applied=applied)

    unparsed = {e.key for e in errors if e.key} | broken  # already reported: a line that did not parse
    values = _Known()
    model_options: dict[str, Any] = {}
    invalid: dict[str, ConfigError] = {}
    for specs, target in ((_SPECS, values), (model_specs, model_options)):
        for name, spec in specs.items():
            entry = by_key.get(name)
            if name in unparsed:
                values.unknown.add(spec.field)
            if entry is None or (spec.required and entry.value.strip() == ""):
                if spec.required and name not in unparsed:
                    errors.append(ConfigError(
                        "is required but not set", f'add {name}="..." ({spec.doc})', path=path,
                        line=entry.line if entry else None, key=name,
                    ))
                    values.unknown.add(spec.field)
                dict.__setitem__(target, spec.field, spec.default)
                continue
            try:
                dict.__setitem__(target, spec.field, spec.parse(entry.value))
            except ValueError as exc:
                what, _, fix = str(exc).partition("; ")
                invalid[name] = ConfigError(what, fix, path=path, line=entry.line, key=name)
                dict.__setitem__(target, spec.field, spec.default)
                values.unknown.add(spec.field)
    # a value made of an invalid key through ${KEY} is wrong because of it: report the root once
    errors.extend(e for k, e in invalid.items() if not by_key[k].refs & invalid.keys())
    _split_lists(values)
    model_broken = any(name in model_specs for name in (e.key for e in errors))

    # The rules between keys, each group on its own, so every problem is reported in one run; a
    # rule that reads a value that did not parse (or that an earlier rule could not settle) is
    # skipped, since that value's own error is the root cause.
    _each_group(lambda: _accelerator(values, fail))
    _each_group(lambda: _runtime(values, fail), lambda: _disk_type(values))

    def zone() -> None:
        def zone_warning(key: str, what: str, fix: str) -> None:
            warnings.append(f"{path}:{lines.get(key, 0)}: {key}: {what}; TPU_ZONE_CHECK=\"warn\" lets it through "
                            "(the create fails in the cloud if the zone really has no such TPU)")

        if values["arch"] != "node":  # TPU_ZONE_CHECK="warn": a stale table must not block
            zones = values["zones"]
            _each_group(*(partial(offers.check_zone, z, values["topology"],
                                  zone_warning if values["zone_check"] == "warn" else fail, zones=zones)
                          for z in zones))

    if dict.get(values, "arch") == "mig":  # the rules that hold once the slice has a MIG shape
        _each_group(*(partial(_mig_rule, rule, values, fail) for rule in validate.MIG_RULES))
    _each_group(*(partial(_cross_rule, rule, values, fail, lines) for rule in validate.CROSS_RULES),
                lambda: offers.resolve_provisioning(values, values["topology"], fail, lines), zone,
                lambda: replace.resolve(values, fail),
                lambda: validate.name_lengths(values, fail))
    # A file with errors has no Settings, except for validate (``later``): what a later command
    # refuses is reported in the same run when the values it needs are settled.
    if errors and (not later or _NEEDED & values.unknown):
        raise ConfigErrors(errors, tuple(warnings))
    plain = dict(values)  # the raw values (a dict copy does not go through _Known.__getitem__)
    plain["region"] = plain["region"] or plain["zone"].rsplit("-", 1)[0]
    settings = _finish(path, plain, model_options, by_key, lines, warnings, later=later)
    if not errors:  # Google's naming rules for every derived and supplied name, then the rules on the whole Settings
        _each_group(lambda: names.check(settings, fail), lambda: hardening.cross_checks(settings, fail),
                    lambda: recovery.cross_checks(settings, fail))
    if later:  # what a later door would refuse (builder/config/gate.py, every row)
        found, said = gate.for_validate(settings, skip=values.unknown | ({"model"} if model_broken else set()),
                                        node=not errors)
        errors.extend(found)
        warnings.extend(said)  # said with the errors too: a later door refuses it whatever else is wrong
        settings = replace_record(settings, warnings=(*settings.warnings, *said)) if said else settings
    if errors:
        raise ConfigErrors(errors, tuple(warnings))
    return settings


#: The fields builder/config/later.py cannot do without (every value that parsed is usable).
_NEEDED = frozenset({"topology", "arch", "env_name", "project_id", "zone", "mount_point"})


class _Known(dict):  # type: ignore[type-arg]
    """The parsed values. Reading one in ``unknown`` (it did not parse, or the rule that settles
    it failed) stops the rule that reads it, silently: its own error is already reported."""

    def __init__(self) -> None:
        super().__init__()
        self.unknown: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self.unknown:
            raise _Stop
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.unknown:
            raise _Stop
        return super().get(key, default)


def _cross_rule(rule: validate.Rule, values: _Known, fail: Any, lines: dict[str, int]) -> None:
    rule(values, fail, lines)


def _mig_rule(rule: Any, values: _Known, fail: Any) -> None:
    rule(values, values["mig_shape"], fail)


def _each_group(*groups: Callable[[], object]) -> None:
    """Run every group of rules; a failing rule (its error already collected) ends only its group."""
    for group in groups:
        try:
            group()
        except _Stop:
            pass


def _split_lists(values: _Known) -> None:
    """ZONE and TPU_PROVISIONING as lists (builder/config/candidates.py): ``zones`` and ``modes``
    hold every item, ``zone`` and ``provisioning`` the first (the field every rule and view reads
    keeps its meaning). A value that did not parse leaves its list unknown too."""
    for one, many in (("zone", "zones"), ("provisioning", "modes")):
        if one in values.unknown or dict.get(values, one) is None:
            values.unknown.add(many)
            continue
        items = tuple(dict.__getitem__(values, one).split(",")) if dict.__getitem__(values, one) else ()
        values[many] = items
        values[one] = items[0] if items else ""


def _accelerator(values: _Known, fail: Any) -> None:
    """TPU_ACCELERATOR_TYPE → the topology (``values["topology"]``; unknown when it fails)."""
    values.unknown.add("topology")
    try:
        topo = parse_topology(values["accelerator_type"])
    except BadInput as exc:
        fail("TPU_ACCELERATOR_TYPE", str(exc), "")
    values["topology"] = topo
    values.unknown.discard("topology")


def _disk_type(values: _Known) -> None:
    """SHARED_PD_DISK_TYPE left empty: the first type the generation's hosts attach (its record's
    ``shared_pd_types``: pd-balanced, or hyperdisk-ml on the Hyperdisk-only generations)."""
    if not values["shared_pd_type"]:
        values["shared_pd_type"] = values["topology"].record.shared_pd_types[0]


def _runtime(values: _Known, fail: Any) -> None:
    """The runtime (one key, two names) and the architecture: settles ``runtime_version`` and
    ``arch`` (unknown when a rule here fails), and on mig the slice's shape (``mig_shape``).

    Root causes first: on mig a generation that has no MIG is reported alone (not also the TPU
    runtime the file sets, which only a TPU VM of that generation would use)."""
    declared_arch = values["arch"]  # TPU_ARCH as written ("" when empty); a value that did not parse stops here
    values.unknown.update(("arch", "mig_shape"))
    alias = values["runtime_version_alias"]
    runtime = values["runtime_version"]
    if alias and runtime and alias != runtime:
        values.unknown.add("runtime_version")
        fail("TPU_RUNTIME_VERSION", f"says {alias!r} but TPU_PYTORCH_VERSION says {runtime!r}", "set only one of them")
    runtime_key = "TPU_PYTORCH_VERSION" if runtime else "TPU_RUNTIME_VERSION"
    runtime = runtime or alias
    values["runtime_version"] = runtime
    if declared_arch == "mig":  # TPU VMs as Compute Engine instances boot an OS image: no TPU runtime
        values["mig_shape"] = validate.mig_shape_for(values["topology"], fail)
        values.unknown.discard("mig_shape")
        values.unknown.discard("arch")
        if runtime:
            fail(runtime_key, f"{runtime!r} is a TPU runtime, but TPU_ARCH=\"mig\" hosts boot the accelerator OS "
                 "image (the generation record's mig image, builder/data/tpu_offers.json) and have no TPU runtime", f"remove {runtime_key}")
        return
    if not runtime:
        topo = dict.get(values, "topology") if "topology" not in values.unknown else None
        want = [r for r, gens in validate.VM_RUNTIMES.items() if topo and topo.generation in gens]
        if declared_arch == "vm" and want:  # vm is settled, only its runtime is missing
            values["arch"] = "vm"
            values.unknown.discard("arch")
            fail("TPU_PYTORCH_VERSION", "is required but not set",
                 f'add TPU_RUNTIME_VERSION="{want[0]}" (the TPU VM runtime of {topo.accelerator_type})')
        fail("TPU_PYTORCH_VERSION", "is required but not set",
             'add TPU_PYTORCH_VERSION="pytorch-nightly" (node) or "tpu-ubuntu2204-base" (vm)')
    arch = validate.infer_arch(declared_arch, runtime, fail, runtime_key=runtime_key)
    if arch == "vm" and validate.vm_generation(values["topology"]):  # then vm is certain, whatever runtime
        values["arch"] = arch
        values.unknown.discard("arch")
    validate.runtime_for(runtime, arch, values["topology"], fail, runtime_key=runtime_key,
                         arch_declared=bool(declared_arch))
    values["arch"] = arch
    values.unknown.discard("arch")


def _finish(path: Path, values: dict[str, Any], model_options: dict[str, Any], by_key: dict[str, Entry],
            lines: dict[str, int], warnings: list[str], *, later: bool) -> Settings:
    """The Settings of ``values`` (pseudo-fields dropped). A script path that does not exist is a
    warning here; with ``later`` it is builder/config/later.py's error instead."""
    root = path.resolve().parent
    values.pop("runtime_version_alias", None)
    zones, modes = values.pop("zones", ()) or (values["zone"],), values.pop("modes", ())
    values["candidates"] = ordered(zones, (values["provisioning"], *modes[1:]))
    values.pop("mig_shape", None)
    for key, field in (("MIG_SETUP_SCRIPT", "mig_setup_script"), ("MIG_SEED_DATA_PREP_SCRIPT", "mig_seed_data_prep_script")):
        rel = values[field]
        if rel and not later and find_script(root, rel) is None:
            if rel in seed_scripts():
                warnings.append(f"{path}:{lines[key]}: {key}={rel!r} is the seed repository's own script, which "
                                "tpubuild replaces; run tpubuild migrate to clear it")
                continue
            warnings.append(
                f"{path}:{lines[key]}: {key}={rel!r} does not exist in this repository "
                "(a seed-era path?); it is an error only when a pipeline uses it"
            )

    return Settings(
        source=path, model_options=model_options,
        raw={k: e.value for k, e in by_key.items()}, lines=lines, warnings=tuple(warnings),
        refs={k: e.refs for k, e in by_key.items() if e.refs}, **values,
    )

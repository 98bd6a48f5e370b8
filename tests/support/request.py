"""One request through each command that prepares an action (builder.planning.request): ``plan`` and
``render`` (flags), ``submit`` (flags) and ``dispatch`` (the root build's substitution strings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builder.planning.request import CLI, SUBSTITUTIONS, Spelling

#: The flags each command takes (by Request field): plan has no --allow-wipe (nothing is seeded
#: by a plan), submit and dispatch select no modules (auto does, from the applied snapshot).
TAKES: dict[str, frozenset[str]] = {
    "plan": frozenset({"tpu", "mig", "only", "allow_data_loss"}),
    "render": frozenset({"tpu", "mig", "only", "allow_data_loss", "allow_wipe"}),
    "submit": frozenset({"tpu", "mig", "allow_data_loss", "allow_wipe"}),
    "dispatch": frozenset({"tpu", "mig", "allow_data_loss", "allow_wipe"}),
}
SPELLING: dict[str, Spelling] = {"plan": CLI, "render": CLI, "submit": CLI, "dispatch": SUBSTITUTIONS}


def argv(verb: str, values: Path, action: str, flags: dict[str, Any]) -> list[str]:
    """The command line of ``verb`` for this request: a switch per flag that is on, or (dispatch)
    each flag as its substitution string; plan and render compare with nothing applied."""
    out = ["--values", str(values), verb, "--action", action]
    for field, value in flags.items():
        name = getattr(CLI, field)  # the command's option; dispatch's options are spelled as submit's
        if field == "only":
            out += [name, value]
        elif verb == "dispatch":
            out += [name, "true" if value else "false"]
        elif value:
            out.append(name)
    if verb in ("plan", "render"):
        out += ["--applied", "none"]
    return out


def request_ids(cases: list[tuple[Path, str, dict[str, Any]]]) -> list[str]:
    """Test ids of (values file, action, flags) requests: ``<file stem>-<action>-<flag>-...``."""
    return [f"{values.stem}-{action}-{'-'.join(flags)}" for values, action, flags in cases]


def respell(message: str, source: Spelling, target: Spelling) -> str:
    """``message`` with every input named as ``target`` names it (a flag turned on included)."""
    for field in ("tpu", "mig", "allow_data_loss", "allow_wipe"):
        message = message.replace(source.on(getattr(source, field)), target.on(getattr(target, field)))
    for field in ("action", "tpu", "mig", "allow_data_loss", "allow_wipe"):  # no substitution selects modules
        message = message.replace(getattr(source, field), getattr(target, field))
    return message

"""Which slot the slice is in (models/hosts.py re-exports every name): make-before-break alternates
the slice between two names, ``tpu-<env>`` and ``tpu-<env>-b`` (builder/config/replace.py
``slot_names``): two TPU VMs on vm (modules/tpu_vm), two managed instance groups on mig
(modules/tpu_mig). A host script first finds, at run time, the one that exists, into
``$TPUBUILD_TPU``: one shell template for both, each architecture giving its own listing (vm:
the zone's TPU VMs; mig: the zone's groups that match the slots). Standard library only;
templates filled with ``shlex.quote``-d words, as everywhere in models/."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from string import Template

#: The slot the slice is in, into TPUBUILD_TPU: the one of ``$patterns`` that ``$listing`` prints
#: (one name a line). None: one line, exit 1 (nothing to reach; ``tpubuild update`` would create
#: it). Both: a make-before-break update is between its apply and its release (the old slice still
#: holds the training or is being released), so which one to reach is not known yet: one line, exit
#: 1. A preset ``TPUBUILD_SLICE`` (:data:`SLICE_ENV`) picks the slot while both exist (the build's
#: tpu-checkpoint step stops the training on the old one): it must be one of ``$patterns`` (else
#: one line, exit 1) and must exist (else one line naming it, exit 1).
_SLOTS = Template(
    'if [ -n "$${TPUBUILD_SLICE:-}" ]; then\n'
    '  case "$$TPUBUILD_SLICE" in $patterns) ;; *) echo "tpubuild: TPUBUILD_SLICE=$$TPUBUILD_SLICE"$unknown >&2; exit 1 ;; esac\n'
    "fi\n"
    "tpubuild_slices=$$($listing)\n"
    'TPUBUILD_TPU=""\n'
    "for tpubuild_slice in $$tpubuild_slices; do\n"
    '  case "$$tpubuild_slice" in $patterns) ;; *) continue ;; esac\n'
    '  if [ -n "$${TPUBUILD_SLICE:-}" ] && [ "$$tpubuild_slice" != "$$TPUBUILD_SLICE" ]; then continue; fi\n'
    '  TPUBUILD_TPU="$${TPUBUILD_TPU:+$$TPUBUILD_TPU }$$tpubuild_slice"\n'
    "done\n"
    'case "$$TPUBUILD_TPU" in\n'
    '  "") if [ -n "$${TPUBUILD_SLICE:-}" ]; then echo "tpubuild: TPUBUILD_SLICE=$$TPUBUILD_SLICE"$absent >&2; '
    'else echo $missing >&2; fi; exit 1 ;;\n'
    '  *" "*) echo $both >&2; exit 1 ;;\n'
    "esac\n"
    'echo "tpubuild: the slice is $$TPUBUILD_TPU" >&2')
#: The variable that picks one slot while both exist (:data:`_SLOTS`); unset, the one that exists.
SLICE_ENV = "TPUBUILD_SLICE"


def slot_preamble(listing: str, slots: Sequence[str], *, what: str, zone: str, project: str) -> str:
    """Shell that sets ``$TPUBUILD_TPU`` to whichever of ``slots`` exists: ``listing`` is the line
    that prints the candidates, one name a line; ``what`` names them in messages (``TPU VM``,
    ``MIG``)."""
    names = " or ".join(slots)
    where = f"in zone {zone} (project {project})"
    q = shlex.quote
    return _SLOTS.substitute(
        listing=listing, patterns="|".join(q(n) for n in slots),
        unknown=q(f" is not a slot of the slice ({names}): unset it or name one of them"),
        absent=q(f": no such {what} {where}, unset it or name the slot that exists (tpubuild status)"),
        missing=q(f"tpubuild: no {what} {names} {where}: the slice does not exist, create it with tpubuild update "
                  "(tpubuild status shows what runs)"),
        both=q(f"tpubuild: both {' and '.join(slots)} exist: a make-before-break update is swapping the slice, "
               "wait until its build finishes (tpubuild status), then run this again"))


def slot_title(slots: Sequence[str]) -> str:
    """What :func:`slot_preamble` does, as (the start of) a step's title."""
    return (f"the slice: whichever of {', '.join(slots)} exists (make-before-break alternates them, a preset "
            "TPUBUILD_SLICE picks one), as $TPUBUILD_TPU")


#: mig with two slots: a preset ``TPUBUILD_SLICE`` (the build's mig-checkpoint stopping the training
#: on the old group while the new one runs) may address a group of another shape than values.env
#: asks for: its own VMs are taken, however many (at least one), and a command for every worker
#: runs on each of them (:func:`each_host`); unset, the group must list exactly the slice's count.
_ANY_COUNT = Template('if [ -z "$${TPUBUILD_SLICE:-}" ]; then\n  $check\n'
                      'elif [ "$${#TPUBUILD_HOSTS[@]}" -eq 0 ]; then echo "tpubuild: the MIG $$TPUBUILD_TPU lists no VM" >&2; exit 1; fi')
_EACH_HOST = Template('for tpubuild_host in "$${TPUBUILD_HOSTS[@]}"; do\n  $line\ndone')
#: The host of :func:`each_host`'s loop, as its lines name it (a shell word, left unquoted).
EACH_HOST = '"$tpubuild_host"'


def any_count(check: str) -> str:
    """``check`` (the exact-count refusal) unless TPUBUILD_SLICE is preset: then any non-empty group."""
    return _ANY_COUNT.substitute(check=check)


def each_host(line: str) -> str:
    """``line`` (written for the host :data:`EACH_HOST`) on every VM the preamble listed, in order."""
    return _EACH_HOST.substitute(line=line)

"""What the user asked for: an action and its flags, parsed once into a :class:`Request`, and the
plan made for it. ``plan``, ``render``, ``submit`` and ``dispatch`` all prepare an action here,
so the same bad request is refused with the same line from each (only the spelling of the inputs
differs: ``--tpu`` on the command line, ``_TPU`` in the root build's substitutions).

:func:`parse` refuses, one line each and in this order (the first problem found is the one
reported):

* an action that is not one of :class:`~builder.facts.actions.Action` (the line lists them all);
* a substitution string that is not a flag value (``true``, ``false``, ``default`` or empty);
* what the gate's rows refuse for this action at the calling ``door`` (builder/config/gate.py: a TPU
  Node, the MODEL's rules, missing scripts, a calendar start; submit and dispatch also a relative one);
* ``auto`` with a scope or a module selection: auto decides the modules itself;
* a module selection (``--only``) with another action than ``update``, with a scope, naming a
  module the architecture does not have, or empty;
* ``initialize`` with a scope or an allow flag: it applies no Terraform;
* the MIG scope on the vm architecture (it has no MIG); a scope on ``create`` (create applies
  every module); the TPU scope alone when destroying on the mig architecture (the slice would
  lose its access while running).

:func:`plan_for` makes the plan (``builder.planning.plan.make_plan``) and refuses an allow flag the plan
would silently ignore: ``allow_wipe`` when the plan does not apply ``shared_pd`` (only its seeder
wipes). ``auto``'s plan is decided from the applied values, which takes I/O (the state bucket, or
``--applied FILE``): the commands decide it (``builder.cloud.auto.decide_now``), after
:func:`parse` has refused what it can. An allow flag is not refused for ``auto``: it is a
permission for whatever auto decides, which nobody can know when the build is started (a GitOps
trigger with ``_ALLOW_WIPE=true`` must not fail each push that leaves the shared PD alone).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from builder.catalogue import modules as catalogue
from builder.catalogue.step_kinds import BUILD_TIMEOUT_SLACK, MAX_PIPELINE_TIMEOUT, step_timeout
from builder.config.gate import Door, refuse
from builder.facts.actions import Action
from builder.facts.errors import BadInput
from builder.facts.records import record
from builder.inputs import build_limits
from builder.planning.plan import Plan, make_plan, not_wanted

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings

__all__ = ["CLI", "SUBSTITUTIONS", "Request", "Spelling", "parse", "parse_flag", "plan_for"]


@record
class Spelling:
    """How a caller names each input in messages, and how it asks for a flag (``on``)."""

    action: str
    tpu: str
    mig: str
    only: str
    allow_data_loss: str
    allow_wipe: str
    true: str = ""  # what follows a flag's name to turn it on

    def on(self, name: str) -> str:
        """How to turn on the flag called ``name``: ``--mig``, ``_MIG=true``."""
        return f"{name}{self.true}"


#: ``tpubuild plan``/``render``/``submit``: command-line flags.
CLI = Spelling("--action", "--tpu", "--mig", "--only", "--allow-data-loss", "--allow-wipe")
#: ``tpubuild dispatch``: the root build's substitutions (no substitution selects modules).
SUBSTITUTIONS = Spelling("_BUILD_ACTION", "_TPU", "_MIG", "only", "_ALLOW_DATA_LOSS", "_ALLOW_WIPE", "=true")

_FLAG_TRUE = frozenset({"true"})
_FLAG_FALSE = frozenset({"false", "default", ""})


@record
class Request:
    """An action and its flags, checked against one values file by :func:`parse`."""

    action: Action
    tpu: bool = False
    mig: bool = False
    only: frozenset[str] | None = None  # update only these modules (GitOps auto's selection)
    allow_data_loss: bool = False
    allow_wipe: bool = False
    spelling: Spelling = CLI


def parse_flag(raw: str | bool, name: str) -> bool:
    """A flag: a command-line switch (bool) as it is, or a Cloud Build substitution string: true,
    or false/default/empty (any case). The seed-era pipeline passed "default" for an unset flag;
    anything else is refused rather than guessed at."""
    if isinstance(raw, bool):
        return raw
    value = raw.strip().lower()
    if value in _FLAG_TRUE:
        return True
    if value in _FLAG_FALSE:
        return False
    raise BadInput(f"{name}: {raw!r} is not a flag value; use true, false, default or leave it empty")


def _selection(raw: str | Iterable[str] | None) -> frozenset[str] | None:
    if raw is None:
        return None
    names = raw.split(",") if isinstance(raw, str) else raw
    return frozenset(m.strip() for m in names if m.strip())


def parse(settings: Settings, action: str, *, tpu: bool | str = False, mig: bool | str = False,
          only: str | Iterable[str] | None = None, allow_data_loss: bool | str = False,
          allow_wipe: bool | str = False, spelling: Spelling = CLI, door: Door = Door.PLAN) -> Request:
    """The request ``action`` and its flags make for ``settings``: every refusal that needs no
    cloud (the module docstring lists them). Flags are switches or substitution strings;
    ``only`` is a comma-separated string or the module names."""
    n = spelling
    request = Request(Action.parse(action, n.action), tpu=parse_flag(tpu, n.tpu), mig=parse_flag(mig, n.mig),
                      only=_selection(only), allow_data_loss=parse_flag(allow_data_loss, n.allow_data_loss),
                      allow_wipe=parse_flag(allow_wipe, n.allow_wipe), spelling=spelling)
    refuse(settings, request.action, door)  # the gate's rows of this door (builder/config/gate.py)
    _refuse(settings, request)
    return request


def _refuse(settings: Settings, r: Request) -> None:
    n, action, arch = r.spelling, r.action, settings.arch
    scope = f"{n.tpu}/{n.mig}"
    if action is Action.AUTO and (r.tpu or r.mig or r.only is not None):
        used = _joined((n.tpu, r.tpu), (n.mig, r.mig), (n.only, r.only is not None))
        raise BadInput(f"{used}: auto decides the modules itself, from what changed since the applied snapshot; "
                       f"drop {used}")
    if r.only is not None:
        if action is not Action.UPDATE:
            raise BadInput(f"{n.only}: a module selection applies to update (GitOps auto), not {action}; "
                           "drop the selection or use action update")
        if r.tpu or r.mig:
            raise BadInput(f"{n.only}: a module selection cannot be combined with {scope}; use one or the other")
        every = catalogue.modules(arch)
        unknown = sorted(r.only - set(every))
        if unknown:
            raise BadInput(f"{n.only}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                           f"{arch}-architecture module{'s' if len(unknown) > 1 else ''}; "
                           f"use some of {', '.join(every)}")
        if not r.only:
            raise BadInput(f"{n.only}: the module selection is empty, so the update would do nothing; "
                           "name at least one module, or run no build")
        unwanted = not_wanted(settings)
        if all(m in unwanted for m in r.only):
            why = "; ".join(f"{m}: not created: {unwanted[m]}" for m in sorted(r.only))
            raise BadInput(f"{n.only}: {why}, so the update would do nothing; name another module, "
                           "or run no build")
    if action is Action.INITIALIZE:
        if r.tpu or r.mig:
            raise BadInput(f"{scope}: initialize takes no scope flags (it creates the buckets and the "
                           "workspace, no Terraform); drop the flags")
        for name, on in ((n.allow_data_loss, r.allow_data_loss), (n.allow_wipe, r.allow_wipe)):
            if on:
                raise BadInput(f"{name}: initialize applies no Terraform and seeds nothing, so there is "
                               f"nothing to allow; drop {name}")
    if r.mig and arch == "vm":
        raise BadInput(f"{n.mig}: the vm architecture{_arch_where(settings)} has no MIG (the TPU VM hosts are the "
                       f"workers); drop {n.mig}, and use {n.tpu} to act on the TPU VM")
    if action is Action.CREATE and (r.tpu or r.mig):
        used = _joined((n.tpu, r.tpu), (n.mig, r.mig))
        raise BadInput(f"{used}: create applies every module, so a scope would be ignored; drop {used}, "
                       f"or use {n.action} update to apply only the scoped modules")
    if action is Action.DESTROY and arch == "mig" and r.tpu and not r.mig:
        raise BadInput(f"{n.tpu}: on the mig architecture the tpu module is the slice's service account and "
                       "firewall; destroying it alone would cut off the running TPU VMs of the MIG; "
                       f"add {n.on(n.mig)} (destroys the slice, then its access)")


def _joined(*flags: tuple[str, bool]) -> str:
    return " and ".join(name for name, on in flags if on)


def _arch_where(settings: Settings) -> str:
    line = settings.line_of("TPU_ARCH")
    if line:
        return f' ({settings.source}:{line} TPU_ARCH="{settings.arch}")'
    return f" ({settings.source}: runtime {settings.runtime_version} means TPU_ARCH={settings.arch})"


def plan_for(settings: Settings, request: Request) -> Plan | None:
    """The plan of a parsed request, or None for ``auto`` (its plan is decided from the applied
    values; see the module docstring). Refuses ``allow_wipe`` for a plan whose seeder never runs."""
    if request.action is Action.AUTO:
        return None
    plan = make_plan(settings, request.action, tpu=request.tpu, mig=request.mig, only=request.only)
    name = request.spelling.allow_wipe
    seeder = next((sp.name for sp in catalogue.specs(settings.arch) if any(x.kind == "seed" for x in sp.steps)), "")
    if request.allow_wipe and not plan.applies(seeder):
        ops = ", ".join(f"{o.op} {o.module}" for o in plan.operations)
        raise BadInput(f"{name}: this {plan.action} ({ops}) does not apply {seeder}, so the seeder "
                       f"never runs and there is nothing to wipe; drop {name}")
    # Cloud Build's limits on what render would make of it (builder/inputs/build_limits.py)
    build_limits.check_steps(((st.id, st.after, step_timeout(settings, st)) for st in plan.steps),
                             f"the {plan.action} pipeline of {settings.env_name}", MAX_PIPELINE_TIMEOUT - BUILD_TIMEOUT_SLACK)
    return plan

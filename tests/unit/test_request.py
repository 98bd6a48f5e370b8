"""The one way a user's action reaches a plan (builder.planning.request): parsing, every refusal, the
spelling of the inputs in messages, and the plan made for a request."""

from __future__ import annotations

import pytest

from builder.config import load
from builder.facts.actions import Action
from builder.facts.errors import BadInput
from builder.planning.plan import make_plan
from builder.planning.request import CLI, SUBSTITUTIONS, Request, parse, parse_flag, plan_for
from tests.support.pipeline import MIG_ENV, NODE_ENV, VM_ENV, ops
from tests.support.request import respell


@pytest.fixture(scope="module")
def vm():
    return load(VM_ENV)


# ---- every refusal, one line, in the caller's spelling ----

REFUSED = [
    # (values file, action, flags, words the message (command-line spelling) must contain)
    (VM_ENV, "apply", {}, ["--action: 'apply' is not an action"]),
    (VM_ENV, "", {}, ["is not an action"]),
    (VM_ENV, "create", {"tpu": "yes"}, ["--tpu: 'yes' is not a flag value"]),
    (NODE_ENV, "create", {}, ["TPU Node", "tpubuild migrate"]),
    (NODE_ENV, "auto", {}, ["TPU Node", "tpubuild migrate"]),
    (NODE_ENV, "update", {"tpu": True}, ["TPU Node", "tpubuild migrate"]),
    (VM_ENV, "auto", {"tpu": True}, ["--tpu: auto decides the modules itself", "drop --tpu"]),
    (MIG_ENV, "auto", {"tpu": True, "mig": True}, ["--tpu and --mig: auto decides", "drop --tpu and --mig"]),
    (VM_ENV, "auto", {"only": "tpu"}, ["--only: auto decides", "drop --only"]),
    (VM_ENV, "create", {"only": "tpu"}, ["--only", "applies to update", "not create"]),
    (VM_ENV, "destroy", {"only": "tpu"}, ["--only", "not destroy"]),
    (VM_ENV, "update", {"only": "tpu", "tpu": True}, ["cannot be combined", "--tpu/--mig"]),
    (VM_ENV, "update", {"only": "gpu"}, ["gpu is not", "filestore"]),
    (VM_ENV, "update", {"only": "mig"}, ["mig is not", "vm-architecture"]),
    (VM_ENV, "update", {"only": ","}, ["empty", "nothing"]),
    (NODE_ENV, "initialize", {"tpu": True}, ["--tpu/--mig: initialize takes no scope flags", "drop the flags"]),
    (VM_ENV, "initialize", {"tpu": True, "mig": True}, ["initialize takes no scope flags"]),
    (VM_ENV, "initialize", {"allow_data_loss": True}, ["--allow-data-loss: initialize applies no Terraform"]),
    (VM_ENV, "initialize", {"allow_wipe": True},
     ["--allow-wipe: initialize applies no Terraform", "drop --allow-wipe"]),
    (VM_ENV, "update", {"mig": True}, ["--mig: the vm architecture", "no MIG", "TPU_ARCH", "use --tpu"]),
    (VM_ENV, "destroy", {"mig": True}, ["--mig", "no MIG"]),
    (VM_ENV, "update", {"tpu": True, "mig": True}, ["--mig", "no MIG"]),
    (VM_ENV, "create", {"mig": True}, ["--mig", "no MIG"]),  # the architecture first: the root cause
    (VM_ENV, "create", {"tpu": True}, ["--tpu: create applies every module", "--action update"]),
    (MIG_ENV, "destroy", {"tpu": True}, ["--tpu: on the mig architecture", "cut off", "add --mig ("]),
    (VM_ENV, "update", {"tpu": True, "allow_wipe": True}, ["--allow-wipe: this update (apply tpu)", "nothing to wipe"]),
    (VM_ENV, "destroy", {"allow_wipe": True}, ["--allow-wipe: this destroy", "drop --allow-wipe"]),
]
IDS = [f"{p.stem}-{a or 'empty'}-{'-'.join(sorted(f))}" for p, a, f, _ in REFUSED]


def _request(path, action, flags, spelling=CLI):
    settings = load(path)
    return settings, parse(settings, action, spelling=spelling, **flags)


@pytest.mark.parametrize("path, action, flags, words", REFUSED, ids=IDS)
def test_each_refusal_is_one_line(path, action, flags, words) -> None:
    with pytest.raises(BadInput) as err:
        plan_for(*_request(path, action, flags))
    message = str(err.value)
    assert "\n" not in message and "; " in message
    for word in words:
        assert word in message, (word, message)


SPELLED = [(case, name) for case, name in zip(REFUSED, IDS) if "only" not in case[2]]  # no substitution selects modules


@pytest.mark.parametrize("path, action, flags, words", [c for c, _ in SPELLED], ids=[i for _, i in SPELLED])
def test_a_refusal_names_the_inputs_as_the_caller_does(path, action, flags, words) -> None:
    """The same request refused from the command line and from the root build's substitutions
    (flags as strings there): the same line but for the names of the inputs."""
    as_strings = {k: str(v).lower() if isinstance(v, bool) else v for k, v in flags.items()}
    with pytest.raises(BadInput) as cli_err:
        plan_for(*_request(path, action, flags, CLI))
    with pytest.raises(BadInput) as sub_err:
        plan_for(*_request(path, action, as_strings, SUBSTITUTIONS))
    assert respell(str(sub_err.value), SUBSTITUTIONS, CLI) == str(cli_err.value)
    assert "--" not in str(sub_err.value)  # no command-line flag named


def test_an_unknown_action_lists_every_action() -> None:
    with pytest.raises(BadInput) as err:
        Action.parse("explode", "_BUILD_ACTION")
    *rest, last = (a.value for a in Action)
    assert str(err.value) == f"_BUILD_ACTION: 'explode' is not an action; use {', '.join(rest)} or {last}"


# ---- what parse accepts ----

@pytest.mark.parametrize("raw", ["update", " Update ", "UPDATE"])
def test_the_action_is_typed_and_case_and_space_tolerant(vm, raw) -> None:
    request = parse(vm, raw, tpu="TRUE", spelling=SUBSTITUTIONS)
    assert request == Request(Action.UPDATE, tpu=True, spelling=SUBSTITUTIONS)
    assert request.action is Action.UPDATE
    assert ops(plan_for(vm, request)) == [("tpu", "apply", ())]


def test_only_is_split_and_trimmed(vm) -> None:
    assert parse(vm, "update", only=" tpu, shared_pd ,").only == frozenset({"tpu", "shared_pd"})
    assert parse(vm, "update", only=("dashboard",)).only == frozenset({"dashboard"})
    assert parse(vm, "update").only is None


@pytest.mark.parametrize("raw,expected", [
    ("true", True), ("TRUE", True), (" True ", True), (True, True), (False, False),
    ("false", False), ("False", False), ("default", False), ("DEFAULT", False), ("", False), ("  ", False),
])
def test_parse_flag_accepts(raw, expected) -> None:
    assert parse_flag(raw, "_TPU") is expected


@pytest.mark.parametrize("raw", ["yes", "1", "0", "no", "on", "tru", "true,false", "none"])
def test_parse_flag_refuses(raw) -> None:
    with pytest.raises(BadInput) as err:
        parse_flag(raw, "_MIG")
    assert str(err.value).startswith("_MIG: ") and repr(raw) in str(err.value) and "default" in str(err.value)


# ---- the plan of a request ----

ACCEPTED = [
    (VM_ENV, "initialize", {}), (VM_ENV, "create", {}), (VM_ENV, "update", {}), (VM_ENV, "update", {"tpu": True}),
    (VM_ENV, "update", {"only": "tpu,dashboard"}), (VM_ENV, "destroy", {}), (VM_ENV, "destroy", {"tpu": True}),
    (VM_ENV, "create", {"allow_wipe": True}), (VM_ENV, "destroy", {"allow_data_loss": True}),
    (MIG_ENV, "update", {"mig": True}), (MIG_ENV, "update", {"tpu": True, "mig": True}),
    (MIG_ENV, "destroy", {"mig": True}), (MIG_ENV, "destroy", {"tpu": True, "mig": True}),
    (NODE_ENV, "initialize", {}), (NODE_ENV, "destroy", {}), (NODE_ENV, "destroy", {"tpu": True}),
]


@pytest.mark.parametrize("path, action, flags", ACCEPTED, ids=[f"{p.stem}-{a}-{'-'.join(sorted(f))}"
                                                                for p, a, f in ACCEPTED])
def test_an_accepted_request_is_planned_by_make_plan(path, action, flags) -> None:
    settings, request = _request(path, action, flags)
    assert plan_for(settings, request) == make_plan(settings, Action(action), tpu=request.tpu, mig=request.mig,
                                                    only=request.only)


def test_auto_is_decided_by_the_caller_and_allow_flags_are_its_permissions(vm) -> None:
    """auto's plan needs the applied values (I/O), so plan_for leaves it to the caller; an allow
    flag with auto is a permission for whatever auto decides, never refused as idle."""
    assert plan_for(vm, parse(vm, "auto", allow_wipe=True, allow_data_loss=True)) is None
    with pytest.raises(ValueError):
        make_plan(vm, Action.AUTO)

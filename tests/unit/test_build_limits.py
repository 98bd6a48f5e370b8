"""Cloud Build's documented limits (builder/inputs/build_limits.py) on every build tpubuild makes:
every shipped values file × action × scope, the initialize image build, the root cloudbuild.yaml,
the TTL's and the health check's scheduled bodies; and timeouts that nest (a build outlives the
build it waits for). Negative controls show each limit fires with one line."""

from __future__ import annotations

import itertools
import json

import pytest
import yaml

from builder.catalogue.modules import ttl_scope
from builder.catalogue.step_kinds import DISPATCH_AROUND_S, HEALTH_AROUND_S, MAX_BUILD_TIMEOUT, MAX_PIPELINE_TIMEOUT
from builder.config import load, load_text
from builder.config.candidates import at
from builder.facts.actions import Action
from builder.facts.errors import BadInput
from builder.inputs import build_limits, recovery, root_build, tfvars, ttl
from builder.planning.plan import make_plan
from builder.render import pipeline
from tests.conftest import EXAMPLES, REPO

FILES = (REPO / "values.env", *sorted(EXAMPLES.glob("*.env")))
SCOPES = ((False, False), (True, False), (False, True), (True, True))


def seconds(duration: str) -> int:
    return int(duration.rstrip("s"))


def renderings(settings):
    """(action, tpu, mig, config) of every pipeline these settings render."""
    for action, (tpu, mig) in itertools.product((Action.CREATE, Action.UPDATE, Action.DESTROY), SCOPES):
        plan = make_plan(settings, action, tpu=tpu, mig=mig)
        if plan.operations:
            yield action, tpu, mig, pipeline.render(settings, plan)


def longest_path(config) -> int:
    finish: dict[str, int] = {}
    for st in config["steps"]:
        start = max((finish[w] for w in st["waitFor"] if w != "-"), default=0)
        finish[st["id"]] = start + seconds(st["timeout"])
    return max(finish.values())


def within(build, what):
    """Every limit, counted independently of build_limits.check (which render already ran)."""
    assert len(build["steps"]) <= build_limits.MAX_STEPS, what
    assert seconds(build["timeout"]) <= MAX_BUILD_TIMEOUT, what
    subs = build.get("substitutions", {})
    for st in build["steps"]:
        assert seconds(st.get("timeout", build["timeout"])) <= seconds(build["timeout"]), (what, st["id"])
        for arg in st["args"]:
            n = build_limits.substituted_length(arg, subs)
            assert n <= build_limits.MAX_ARG, (what, st["id"], n)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_build_of_every_file_is_within_cloud_builds_limits_and_its_timeouts_nest(path):
    settings = load(path)
    pipelines = {}
    for action, tpu, mig, config in renderings(settings):
        what = f"{path.name} {action} tpu={tpu} mig={mig}"
        within(config, what)
        # timeouts nest inside the pipeline: its longest path of step timeouts fits (nothing is cut)
        assert longest_path(config) <= seconds(config["timeout"]) <= MAX_PIPELINE_TIMEOUT, what
        pipelines[(action, tpu, mig)] = seconds(config["timeout"])
    # the root build (its dispatch, then the wait) outlives every pipeline it may start
    root = yaml.safe_load(root_build.root_cloudbuild(settings))
    within(root, f"{path.name} root cloudbuild.yaml")
    assert seconds(root["timeout"]) >= DISPATCH_AROUND_S + max(pipelines.values())
    scope = ttl_scope(settings.arch)
    scoped = (bool(scope.get("tpu")), bool(scope.get("mig")))
    places = [at(settings, c) for c in settings.candidates] if len(settings.candidates) > 1 else [settings]
    for place in places:
        if settings.env_ttl_hours:  # the TTL's build outlives the destroy it dispatches
            body = ttl.build_request(place)
            within(body, f"{path.name} TTL build")
            destroy = pipeline.render(place, make_plan(place, Action.DESTROY, tpu=scoped[0], mig=scoped[1]))
            assert seconds(body["timeout"]) >= DISPATCH_AROUND_S + seconds(destroy["timeout"])
        if settings.recovery:  # the health build outlives its check, the update it waits for and the relaunch
            body = recovery.build_request(place)
            within(body, f"{path.name} health build")
            update = pipeline.render(place, make_plan(place, Action.UPDATE, tpu=scoped[0], mig=scoped[1]))
            assert seconds(body["timeout"]) >= HEALTH_AROUND_S + DISPATCH_AROUND_S + seconds(update["timeout"])
            assert recovery.LAUNCH_TRIES * recovery.LAUNCH_WAIT_S < HEALTH_AROUND_S


def test_the_failover_example_ships_its_acquisition_as_a_file_of_the_source(tmp_path):
    """mig-v6e-16-failover's mig-apply (16,133 characters as one argument) runs from
    .tpubuild/scripts/ of the source the pipeline is given; the file is what submit packs."""
    settings = load(EXAMPLES / "mig-v6e-16-failover.env")
    config = pipeline.render(settings, make_plan(settings, Action.CREATE))
    [apply] = [st for st in config["steps"] if st["id"] == "mig-apply"]
    path = build_limits.shipped_path(apply["args"][1])
    assert path and path.startswith(".tpubuild/scripts/mig-apply-"), apply["args"]
    text = build_limits.shipped(path)
    assert len(text) > build_limits.INLINE_MAX and text.startswith("set -euo pipefail")
    assert "$$" not in text.replace("$$(", "")  # not doubled: Cloud Build does not substitute a file
    assert apply["args"] == ["-c", f"exec bash {path}"] and apply["entrypoint"] == "bash"
    variables = {**tfvars.all_for(settings), **tfvars.by_candidate(settings)}
    files = build_limits.referenced(json.dumps(config), json.dumps(variables))
    assert files[path] == text.encode()


def test_a_long_health_check_ships_as_a_file_and_keeps_its_build_id():
    settings = load(EXAMPLES / "mig-v6e-16-spot.env")
    body = recovery.build_request(settings)
    [check] = [st for st in body["steps"] if st["id"] == "health-check"]
    path = build_limits.shipped_path(check["args"][1])
    assert path is not None and "BUILD_ID=$BUILD_ID" in check["env"]
    body_json = tfvars.for_module(settings, "mig")["health_build_body"]
    assert path in build_limits.referenced(body_json)


def test_an_argument_over_the_limit_is_refused_with_one_line():
    build = {"steps": [{"id": "x", "name": "bash", "args": ["-c", "echo " + "a" * build_limits.MAX_ARG]}],
             "timeout": "600s"}
    with pytest.raises(BadInput) as e:
        build_limits.check(build, "the test build")
    assert "step x argument 1 is 10005 characters after substitution, over Cloud Build's 10000" in str(e.value)
    assert "\n" not in str(e.value)


def test_substitution_is_counted_as_cloud_build_does():
    assert build_limits.substituted_length("$$x") == 2
    assert build_limits.substituted_length("${BUILD_ID}") == 36
    assert build_limits.substituted_length("$_A-$_B", {"_A": "create", "_B": ""}) == 7
    # exactly at the limit passes; one more is refused
    build_limits.check({"steps": [{"args": ["$$" * build_limits.MAX_ARG]}], "timeout": "60s"}, "b")
    with pytest.raises(BadInput):
        build_limits.check({"steps": [{"args": ["$$" * build_limits.MAX_ARG + "x"]}], "timeout": "60s"}, "b")


@pytest.mark.parametrize("build, words", [
    ({"steps": [{"args": []}] * 301, "timeout": "60s"}, "301 steps, over Cloud Build's 300"),
    ({"steps": [{"args": []}], "timeout": "86401s"}, "timeout 86401s, over Cloud Build's 86400s"),
    ({"steps": [{"id": "w", "args": [], "timeout": "700s"}], "timeout": "600s"}, "step w may run 700s, longer than"),
])
def test_each_other_limit_fires(build, words):
    with pytest.raises(BadInput) as e:
        build_limits.check(build, "the test build")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_longest_queued_wait_still_nests():
    """TPU_QUEUED_VALID_FOR of 30 days waits at most MAX_QUEUE_WAIT_S: the pipeline's longest
    path still fits its timeout, which fits inside its parents."""
    text = (EXAMPLES / "vm-v4-32.env").read_text() + '\nTPU_QUEUED="true"\nTPU_QUEUED_VALID_FOR="30d"\nTPU_PROVISIONING="spot"\n'
    settings = load_text(text, EXAMPLES / "vm-v4-32.env")
    for _action, _tpu, _mig, config in renderings(settings):
        assert longest_path(config) <= seconds(config["timeout"]) <= MAX_PIPELINE_TIMEOUT


@pytest.mark.parametrize("name, step", [("mig-v6e-16-failover.env", "mig-apply"), ("mig-v6e-16-spot.env", "health-check")])
def test_the_source_submit_packs_carries_each_shipped_script(name, step):
    """What submit and dispatch upload (prepare's tarball) holds the file the pipeline's step, or
    the health body in the tfvars, runs; byte for byte the script rendered."""
    from builder.commands.submit import prepare
    from builder.planning.request import parse

    settings = load(EXAMPLES / name)
    prepared = prepare(settings, parse(settings, "create"))
    steps = prepared.config["steps"] if step == "mig-apply" else recovery.build_request(settings)["steps"]
    [arg] = [st["args"][1] for st in steps if st["id"] == step]
    path = build_limits.shipped_path(arg)
    assert path in prepared.src.names
    import gzip
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(prepared.src.tgz))) as tar:
        assert tar.extractfile(path).read().decode() == build_limits.shipped(path)


def test_render_names_a_shipped_script_and_writes_it_with_scripts(cli, tmp_path):
    values = EXAMPLES / "mig-v6e-16-failover.env"
    code, out, err = cli("render", "--values", values)
    [path] = [p for p in build_limits.referenced(out)]
    assert code == 0 and f"tpubuild: render: {path} ships in the build's source" in err
    code, out2, err = cli("render", "--values", values, "--scripts", tmp_path)
    assert code == 0 and out2 == out and err == ""
    assert (tmp_path / path).read_text() == build_limits.shipped(path)
    (tmp_path / "file").write_text("")
    code, out, err = cli("render", "--values", values, "--scripts", tmp_path / "file")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--scripts" in err


def test_the_plan_is_refused_before_rendering_when_its_steps_pass_a_limit():
    """build_limits.check_steps, which request.plan_for runs for plan, render, submit and dispatch:
    the steps' count and their longest path of timeouts against the pipeline's budget."""
    chain = [(f"s{i}", (f"s{i - 1}",) if i else (), 1000) for i in range(82)]
    build_limits.check_steps(chain[:81], "p", 81_000)
    with pytest.raises(BadInput) as e:
        build_limits.check_steps(chain, "the create pipeline of x", 81_000)
    assert "may run 82000s one after another, more than the 81000s" in str(e.value) and "\n" not in str(e.value)
    wide = [(f"s{i}", (), 1) for i in range(301)]
    with pytest.raises(BadInput, match="301 steps, over Cloud Build's 300"):
        build_limits.check_steps(wide, "p", 81_000)

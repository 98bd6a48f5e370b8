"""``tpubuild render --format mermaid`` (builder/render/mermaid.py) draws the rendered pipeline
itself: for every shipped example's create and update, one node per step, its edges the Build's
``waitFor`` one for one, each module's steps in its own box, and the slice's request, the guards,
the gates and the make-before-break steps marked. Mermaid's own parser reads them in
tests/integration/test_mermaid_parse.py."""

from __future__ import annotations

import pytest

from builder.catalogue.modules import accelerator_module
from builder.config import load, load_text
from builder.planning.plan import make_plan
from builder.render.mermaid import roles, slice_request
from tests.conftest import EXAMPLES, REPO, rewrite_env
from tests.support import mermaid

BUILDABLE, drawn = mermaid.BUILDABLE, mermaid.drawn


@pytest.mark.parametrize("action", ["create", "update"])
@pytest.mark.parametrize("path", BUILDABLE)
def test_the_picture_is_the_pipeline(path: str, action: str) -> None:
    settings, plan, config, text = drawn(path, action)
    steps = config["steps"]
    assert text.startswith("flowchart TD\n")
    assert sorted(mermaid.labels(text).values()) == sorted(st["id"] for st in steps)  # each step once
    waits = sorted((w, st["id"]) for st in steps for w in st["waitFor"] if w != "-")
    assert sorted(mermaid.edges(text)) == waits  # one for one, none added, none lost
    modules = {st.id: st.module for st in plan.steps}
    assert mermaid.groups(text) == modules  # each module's steps in its box, the build-wide ones outside


@pytest.mark.parametrize("path", BUILDABLE)
def test_the_slice_request_guards_gates_and_moves_are_marked(path: str) -> None:
    settings, plan, config, text = drawn(path, "create")
    marked = roles(settings, plan)
    acc = accelerator_module(settings.arch)
    request = slice_request(settings, plan)
    assert request is not None and request.startswith(f"{acc}-") and marked[request] == "request"
    assert {i for i, r in marked.items() if r == "guard"} == {st.id for st in plan.steps if st.kind == "guard"}
    assert marked["check-capacity"] == "gate"
    assert f"class {request.replace('-', '_')} request" in text
    for st in plan.steps:
        if st.kind in ("swap", "release", "checkpoint", "resume", "prepare"):
            assert marked[st.id] == "mbb", st.id


def test_a_queued_slice_is_requested_by_its_queue_step_and_a_calendar_one_where_gcloud_asks() -> None:
    queued = load_text(rewrite_env((REPO / "examples/vm-v4-32.env").read_text(), TPU_QUEUED="true"),
                       REPO / "examples/vm-v4-32.env")
    plan = make_plan(queued, "create")
    assert slice_request(queued, plan) == "tpu-queue" and roles(queued, plan).get("tpu-apply") != "request"
    settings = load(EXAMPLES / "mig-v6e-32-calendar.env")
    plan = make_plan(settings, "create")
    ids = [st.id for st in plan.steps]
    assert slice_request(settings, plan) == ("mig-calendar" if "mig-calendar" in ids else "mig-apply")


def test_a_destroy_requests_no_slice_and_a_drain_is_a_gate() -> None:
    settings, plan, _config, text = drawn("examples/mig-v6e-16-spot.env", "destroy")
    assert slice_request(settings, plan) is None and "request" not in roles(settings, plan).values()
    assert "([" not in text
    settings = load(EXAMPLES / "mig-v6e-32-calendar.env")  # calendar mode: break-before-make drains first
    plan = make_plan(settings, "update", mig=True)
    marked = roles(settings, plan)
    drains = [st.id for st in plan.steps if st.kind == "drain"]
    assert all(marked[d] == "gate" for d in drains)


def test_the_slice_waits_for_its_guard_inside_its_step_a_dotted_edge_no_wait_for() -> None:
    settings, plan, config, text = drawn("values.env", "create")
    assert "  tpu_guard -. verdict .-> tpu_apply\n" in text
    apply = next(st for st in config["steps"] if st["id"] == "tpu-apply")
    assert "tpu-guard" not in apply["waitFor"]

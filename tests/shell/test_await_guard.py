"""The slice's apply runs beside its guard (builder.planning.plan.asks_first): the rendered
``tpu-apply`` (vm) and ``mig-apply`` (mig) scripts, with the rendered ``tpu-plan``/``mig-plan``
and guard scripts, under real bash against stub executables (tests/support/step_sandbox.py):

* a plan that only creates is applied at once, with no verdict from the guard yet;
* any other plan is applied only once the guard has left ``<module>.guard.ok``; it waits for it
  (and applies when it comes); ``<module>.guard.failed`` stops it with one line, nothing applied;
* a plan Terraform marked errored waits like a change;
* the guard leaves its verdict; the plan step removes an earlier one.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from builder.config import load
from builder.planning.plan import make_plan
from builder.render.pipeline import render
from tests.conftest import EXAMPLES
from tests.support.pipeline import step_env, step_script
from tests.support.step_sandbox import ONLY_CREATES, Sandbox, Script

CASES = [("vm-v6e-16.env", "tpu"), ("mig-v6e-16-spot.env", "mig")]
UPDATES = ('{"format_version":"1.2","applyable":true,"errored":false,"resource_changes":[{"address":"a.b",'
           '"type":"google_tpu_v2_vm","change":{"actions":["create"]}},{"address":"c.d","type":"google_compute_firewall",'
           '"change":{"actions":["update"]}}],"output_changes":{"x":{"actions":["create"]}}}\n')


def _scripts(example: str) -> dict[str, Script]:
    settings = load(EXAMPLES / example)
    config = render(settings, make_plan(settings, "create"))
    return {st["id"]: Script(st["id"], st["entrypoint"], step_script(st), tuple(step_env(st).items()), settings.arch)
            for st in config["steps"]}


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def _applied(calls: list[str]) -> bool:
    return any(c.split(" ", 1)[0].startswith("terraform:") and " apply " in f" {c.split(' ', 1)[1]} " for c in calls)


NOTHING = ('{"format_version":"1.2","applyable":false,"errored":false,"resource_changes":[{"address":"a.b",'
           '"type":"google_tpu_v2_vm","change":{"actions":["no-op"]}}]}\n')  # Terraform >= 1.10: nothing to do


#: creates, with an output that changes: outputs change nothing in the world, and the guard reads none
OUTPUTS = ONLY_CREATES.replace('"output_changes":{}', '"output_changes":{"name":{"actions":["update"]}}')


@pytest.mark.parametrize("content", [None, NOTHING, OUTPUTS], ids=["creates", "nothing-to-do", "outputs-change"])
@pytest.mark.parametrize("example,module", CASES)
def test_a_plan_that_only_creates_is_applied_before_the_verdict(sandbox: Sandbox, example: str, module: str,
                                                                 content: str | None) -> None:
    steps = _scripts(example)
    if content:
        (sandbox.ws / "plans" / f"{module}.json").write_text(content)
    assert not list((sandbox.ws / "plans").glob(f"{module}.guard.ok"))  # no verdict yet
    proc, calls, _ = sandbox.run(steps[f"{module}-apply"])
    assert proc.returncode == 0, proc.stderr
    assert _applied(calls) and "waiting for" not in proc.stdout


@pytest.mark.parametrize("example,module", CASES)
def test_a_change_is_applied_only_after_the_guard_let_it_through(sandbox: Sandbox, example: str, module: str) -> None:
    steps = _scripts(example)
    (sandbox.ws / "plans" / f"{module}.json").write_text(UPDATES)

    def verdict() -> None:
        time.sleep(1)
        (sandbox.ws / "plans" / f"{module}.guard.ok").write_text("")

    later = threading.Thread(target=verdict)
    later.start()
    started = time.monotonic()
    proc, calls, _ = sandbox.run(steps[f"{module}-apply"])
    later.join()
    assert proc.returncode == 0, proc.stderr
    assert f"waiting for {module}-guard's verdict" in proc.stdout and f"{module}-guard let the plan through" in proc.stdout
    assert _applied(calls) and time.monotonic() - started >= 1


@pytest.mark.parametrize("content", [UPDATES, UPDATES.replace('"errored":false', '"errored":true')
                                     .replace('"actions":["update"]', '"actions":["create"]'),
                                     UPDATES.replace('"applyable":true', '"applyable":false')
                                     .replace('"actions":["update"]', '"actions":["create"]')],
                         ids=["changes", "errored", "unapplyable"])
@pytest.mark.parametrize("example,module", CASES)
def test_a_refused_plan_stops_the_apply_with_one_line(sandbox: Sandbox, example: str, module: str, content: str) -> None:
    steps = _scripts(example)
    (sandbox.ws / "plans" / f"{module}.json").write_text(content)
    (sandbox.ws / "plans" / f"{module}.guard.failed").write_text("")
    proc, calls, _ = sandbox.run(steps[f"{module}-apply"])
    assert proc.returncode == 1 and not _applied(calls)
    assert proc.stderr.strip().splitlines() == [
        f"tpubuild: {module}: {module}-guard refused the plan or failed (its log says why); nothing was applied"]


@pytest.mark.parametrize("example,module", CASES)
def test_the_guard_leaves_its_verdict_and_the_plan_clears_it(sandbox: Sandbox, example: str, module: str) -> None:
    steps = _scripts(example)
    verdict = sandbox.ws / "plans" / module
    proc, _, _ = sandbox.run(steps[f"{module}-guard"])
    assert proc.returncode == 0 and Path(f"{verdict}.guard.ok").exists() and not Path(f"{verdict}.guard.failed").exists()
    proc, _, _ = sandbox.run(steps[f"{module}-guard"], fail="tpubuild:1")
    assert proc.returncode != 0 and Path(f"{verdict}.guard.failed").exists() and not Path(f"{verdict}.guard.ok").exists()
    (sandbox.ws / "tfvars" / f"{module}.tfvars.json").write_text("{}\n")
    proc, _, _ = sandbox.run(steps[f"{module}-plan"])
    assert proc.returncode == 0, proc.stderr
    assert not Path(f"{verdict}.guard.failed").exists() and not Path(f"{verdict}.guard.ok").exists()

"""models/roberta across a resize, as tpubuild decides it: ``validate --applied``, ``plan`` of an
update or auto against the applied values refuse a change the training cannot resume across
exactly (models/roberta/recipe.py ``resume_problems``) before the slice is changed, one line
each at the key's line; every size change the batch rules accept is let through, and the
dry-run says how the position is translated. The translation itself, on fairseq's iterators:
test_roberta_resume.py."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from models.roberta import resume
from tests.conftest import SHIPPED
from tests.support.roberta import launcher_and_job

V3 = ("v3-8", "v3-32", "v3-128", "v3-256", "v3-512")


def line_of(path, key: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(f"{key}="))


@pytest.mark.parametrize("applied,now", [("v3-32", "v3-128"), ("v3-128", "v3-32"), ("v3-32", "v3-32")])
def test_size_changes_the_batch_rules_accept_pass_validate_and_plan(make_env, cli, applied, now):
    old = make_env(TPU_ACCELERATOR_TYPE=applied)
    new = make_env(TPU_ACCELERATOR_TYPE=now)
    code, out, err = cli("validate", "--values", new, "--applied", old)
    assert code == 0, err
    code, out, err = cli("plan", "--values", new, "--action", "update", "--applied", old)
    assert code == 0, err


@pytest.mark.parametrize("key,value,fragment", [
    ("ROBERTA_BATCH_PER_DEVICE", "8", "changes from 16 to 8, but training resumes from the applied run's checkpoint"),
    ("ROBERTA_SEQ_LEN", "256", "changes from 512 to 256"),
])
@pytest.mark.parametrize("command", [("validate",), ("plan", "--action", "update"), ("plan", "--action", "auto"),
                                     ("render", "--action", "update")])
def test_a_batch_shape_change_is_refused_before_the_slice_changes(make_env, cli, key, value, fragment, command):
    old = make_env(TPU_ACCELERATOR_TYPE="v3-32")
    new = make_env(TPU_ACCELERATOR_TYPE="v3-128", **{key: value})
    code, out, err = cli(command[0], "--values", new, *command[1:], "--applied", old)
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"tpubuild: error: {new}:{line_of(new, key)}: {key}: {key} {fragment}")
    assert 'ROBERTA_RESUME="reset-data"' in line and f'keep {key}="' in line


def test_a_total_batch_whose_updates_do_not_split_is_refused_and_reset_data_lifts_it(make_env, cli):
    old = make_env(TPU_ACCELERATOR_TYPE="v3-32", ROBERTA_TOTAL_BATCH="512")  # 32 batches per update
    new = make_env(TPU_ACCELERATOR_TYPE="v3-128")  # 128 devices
    code, _, err = cli("validate", "--values", new, "--applied", old)
    assert code == 2
    assert (f"{new}:{line_of(new, 'ROBERTA_TOTAL_BATCH')}: ROBERTA_TOTAL_BATCH: ROBERTA_TOTAL_BATCH changes from 512 to "
            "2048: the applied run's checkpoint stands after whole updates of 32 batches, which do not split across "
            "128 devices; keep") in err
    reset = make_env(new, ROBERTA_RESUME="reset-data")
    code, _, err = cli("validate", "--values", reset, "--applied", old)
    assert code == 0, err
    launcher, job = launcher_and_job(reset)
    assert "--reset-dataloader" in launcher.fairseq_args(job)
    assert "the data order restarts (--reset-dataloader)" in launcher.header(job, "roberta")
    # the same change between 32 and 64-batch updates on a 32-device slice splits: let through
    code, _, err = cli("validate", "--values", make_env(ROBERTA_TOTAL_BATCH="1024"), "--applied", old)
    assert code == 0, err


def test_other_model_or_environment_has_nothing_to_resume(make_env, cli):
    old = make_env(TPU_ACCELERATOR_TYPE="v3-32", MODEL="")
    new = make_env(TPU_ACCELERATOR_TYPE="v3-128", ROBERTA_BATCH_PER_DEVICE="8")
    assert cli("validate", "--values", new, "--applied", old)[0] == 0
    code, _, err = cli("validate", "--values", new, "--applied", make_env(ENV_BUILD_NAME="other-env"))
    assert code == 2 and "another environment" in err  # the comparison itself is refused first


@hsettings(max_examples=60, deadline=None)
@given(st.sampled_from(V3), st.sampled_from(V3), st.sampled_from((1024, 2048, 4096, 8192)), st.sampled_from((4, 8, 16)))
def test_every_size_change_the_batch_rules_accept_resumes_exactly(tmp_path_factory, before, after, total, per):
    """The proof's arithmetic on the launcher's own numbers: when both sizes pass the batch
    rules, every checkpoint position (a whole number of updates) splits across the new devices
    and the refusal stays quiet; when it would not split, the refusal speaks."""
    from tests.conftest import rewrite_env

    folder = tmp_path_factory.mktemp("sizes")
    jobs = []
    for n, accel in enumerate((before, after)):
        path = folder / f"v{n}.env"
        path.write_text(rewrite_env(SHIPPED.read_text(), TPU_ACCELERATOR_TYPE=accel, ROBERTA_TOTAL_BATCH=str(total),
                                    ROBERTA_BATCH_PER_DEVICE=str(per)))
        launcher, job = launcher_and_job(path)
        if launcher.problems(job):
            return  # the batch rules refuse this size themselves
        jobs.append(job)
    old, new = jobs
    assert launcher.resume_problems(old, new) == []
    world_then, world_now = launcher.world_size(old), launcher.world_size(new)
    freq = launcher.update_freq(total, world_then, per)
    for updates in (1, 7, 1000):
        saved = resume.Position(1, updates * freq, world_then)
        now = resume.translate(saved, world_now)
        assert now.global_batches == saved.global_batches == updates * total // per


def test_dry_run_says_how_the_position_is_translated(make_env, cli):
    code, out, _ = cli("train", "roberta", "--dry-run", "--values", make_env(TPU_ACCELERATOR_TYPE="v3-128"))
    assert code == 0
    (note,) = [ln for ln in out.splitlines() if ln.startswith("# resume: ")]
    assert ("'resumes at update N, sample S of epoch E, translated from world size A to 128' (models/roberta/resume.py)"
            in note)
    host = next(ln for ln in out.splitlines() if ln.startswith("# host 0 "))
    assert "--reset-dataloader" not in shlex.split(host.split(" runs: ", 1)[1])


def test_plan_of_a_resize_says_how_training_resumes_in_text_and_json(make_env, cli):
    import json

    old = make_env(TPU_ACCELERATOR_TYPE="v3-128")
    new = make_env(TPU_ACCELERATOR_TYPE="v3-32")
    code, out, err = cli("plan", "--values", new, "--action", "update", "--tpu", "--applied", old)
    assert code == 0, err
    said = ("roberta: training resumes at the next sequence: each host translates checkpoint_last.pt's position from "
            "world size 128 to 32 (--update-freq 1 → 4, global batch 2048 sequences; models/roberta/resume.py)")
    assert any(ln.startswith(f"note: {said}") for ln in out.splitlines())
    code, out, err = cli("plan", "--values", new, "--action", "update", "--tpu", "--applied", old, "--format", "json")
    assert any(n.startswith(said) for n in json.loads(out)["notes"])
    code, out, err = cli("plan", "--values", new, "--action", "update", "--tpu", "--applied", new)
    assert "training resumes at the next sequence" not in out  # the same size: nothing to translate

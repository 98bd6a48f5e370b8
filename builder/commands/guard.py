"""``tpubuild guard``: the pipeline's check between ``terraform plan`` and ``terraform apply``.

Exit 0: the apply may proceed (the summary and any warnings, such as a TPU replacement that
interrupts training, go to stdout). Exit 2: refused, with one line on stderr naming the resource
address and the override ``_ALLOW_DATA_LOSS=true``. An unreadable or malformed plan JSON is bad
input (exit 2) too: the apply must never run on a plan nobody checked.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from builder.facts.actions import Action
from builder.facts.errors import BadInput
from builder.facts.files import MAX_PLAN_BYTES, PLAN_JSON, read_bytes  # noqa: F401 - MAX_PLAN_BYTES re-exported
from builder.planning.guard import check_args, evaluate

#: The plan JSON is at most 256 MiB; its refusals are worded in builder/facts/files.py (PLAN_JSON).



def read_plan_json(path: Path) -> Any:
    """Parse the plan JSON file, or raise one ``BadInput`` line saying why it can't be used."""
    data = read_bytes(path, MAX_PLAN_BYTES, PLAN_JSON)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: is not UTF-8 text, so not 'terraform show -json' output; "
                       "pass the JSON, not the binary plan file") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}:{exc.lineno}: invalid JSON ({exc.msg}); pass the output of "
                       "'terraform show -json PLANFILE', not the plan file or the text output") from None
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply; pass unmodified 'terraform show -json' output") from None
    except ValueError:  # an integer of more digits than Python converts (sys.int_info.str_digits_check_threshold)
        raise BadInput(f"{path}: JSON holds a number too long to be Terraform's; pass unmodified "
                       "'terraform show -json' output") from None
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # "\ud800" escapes decode to lone surrogates, which no text may hold
        raise BadInput(f"{path}: JSON holds a lone UTF-16 surrogate escape, which is not text; pass unmodified "
                       "'terraform show -json' output") from None
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply; pass unmodified 'terraform show -json' output") from None
    return doc


def run_guard(args: argparse.Namespace) -> int:
    action = Action.parse(args.action, "--action")
    check_args(args.module, action)  # flags first: cheap, and the clearer message
    path = Path(args.plan_json)
    decision = evaluate(read_plan_json(path), args.module, action,
                        allow_data_loss=args.allow_data_loss, source=str(path))
    print(decision.summary())
    for warning in decision.warnings:
        print(f"tpubuild: WARNING: {warning}")
    if not decision.proceed:
        raise BadInput(decision.refusal)
    return 0

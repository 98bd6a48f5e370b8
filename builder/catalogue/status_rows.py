"""What ``tpubuild status`` prints of each resource it reads: the catalogue entries' status rows.

Each :class:`builder.catalogue.modules.StatusPart` names one of these as its ``row``; builder/cloud/status.py
reads the resource (``READERS[part.key]``) and prints ``row(part)`` when it exists. Pure: a
row only formats the dict its reader returned.
"""

from __future__ import annotations

from typing import Any


def _beside(part: dict[str, Any]) -> str:
    """The other slot that exists beside the one shown (make-before-break's two slots)."""
    return f"; beside it {', '.join(part['others'])} (make-before-break under way)" if part.get("others") else ""


def tpu_row(tpu: dict[str, Any]) -> str:
    return (f"{tpu['name']}: {tpu['state']}, health {tpu['health']}, {tpu['accelerator_type']}, "
            f"{tpu['runtime_version']} ({tpu['api']}){_beside(tpu)}")


def queued_row(qr: dict[str, Any]) -> str:
    until = f", valid until {qr['valid_until']}" if qr["valid_until"] else ""
    return f"{qr['name']}: {qr['state']}, {qr['accelerator_type']}{until} (queued resource)"


def filestore_row(fs: dict[str, Any]) -> str:
    share = fs["shares"][0] if fs["shares"] else {"name": "?", "capacity_gb": 0}
    return (f"{fs['name']}: {fs['state']}, {fs['ip'] or 'no IP yet'}:/{share['name']} "
            f"({share['capacity_gb']} GiB, {fs['tier']})")


def slot_places(slots: Any) -> list[str]:
    """Where a storage module's slots are (its state's ``slots`` output: two while a zone move is under way)."""
    if not isinstance(slots, dict):
        return []
    return [str(v.get("location") or v.get("zone") or "?") for _, v in sorted(slots.items()) if isinstance(v, dict)]


def moving_row(module: str, places: list[str]) -> str:
    return (f"{module} is in {' and '.join(places)}: a move to another zone is under way or was left unfinished; "
            "finish it (tpubuild update --move-to ZONE), whose release deletes the old zone's copy (docs/capacity.md, "
            "\"Moving an environment to another zone\")")


def slice_row(sl: dict[str, Any]) -> str:
    policy = f"policy {sl['policy']}" if sl["policy"] else "no workload policy"
    return (f"{sl['name']}: {sl['running']}/{sl['target_size']} running (values.env: {sl['vms']} x "
            f"{sl['machine_type']}, topology {sl['topology']}, {sl['provisioning']}), {policy}, {sl['state']}"
            f"{_beside(sl)}")


def workers_row(mig: dict[str, Any]) -> str:
    return (f"{mig['name']}: {mig['running']}/{mig['target_size']} running "
            f"(target {mig['target_size']}, {mig['expected_size']} TPU hosts), {mig['state']}")


#: Where a capacity request stands, in words: a flex-start bulk group's (builder/cloud/status.py:
#: EMPTY, IN_PROGRESS, DONE, FAILED from its bulkInstanceOperation) and a calendar-mode future
#: reservation's ``status.procurementStatus`` (Compute Engine API).
STANDING: dict[str, str] = {
    "EMPTY": "not asked for yet (target size 0)", "IN_PROGRESS": "waiting for capacity", "DONE": "active",
    "ACCEPTED": "waiting for capacity", "CREATING": "provisioning", "SUCCEEDED": "active",
    "FAILED": "failed", "CANCELLED": "cancelled",
    "DRAFTING": "waiting (draft, not submitted)", "PENDING_APPROVAL": "waiting for Google's approval",
    "PENDING_AMENDMENT_APPROVAL": "waiting for Google's approval", "PROCESSING": "waiting for Google's approval",
    "APPROVED": "approved, waiting for its start", "COMMITTED": "approved, waiting for its start",
    "PROVISIONING": "provisioning", "FULFILLED": "active", "FAILED_PARTIALLY_FULFILLED": "failed (partly fulfilled)",
    "DECLINED": "failed (declined by Google)",
}


def capacity_row(req: dict[str, Any]) -> str:
    """A flex-start resize request or a calendar-mode request: where it stands and when it ends."""
    standing = STANDING.get(req["state"], req["state"].lower())
    detail = f": {req['error']}" if req.get("error") else ""
    return f"{req['name']}: {standing} ({req['state']}{detail}), {req['ends']} ({req['kind']})"


def _span(seconds: float) -> str:
    minutes = int(seconds) // 60
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _money(value: Any) -> str:
    return f"~${value:.2f}" if isinstance(value, (int, float)) else "cost unknown"


def _moved(r: dict[str, Any]) -> str:
    """A recovery that moved zones (TPU_RECOVERY_MOVE): from where to where, and why (the refusals of
    the zone it left, as Google worded them); a failed one's refusals alone."""
    src, dst = str(r.get("moved_from") or "").split(" ")[0], str(r.get("place") or "").split(" ")[0]
    why = f" ({src or dst} refused: {r['refused']})" if r.get("refused") else ""
    return f", moved {src} -> {dst}{why}" if src and dst and src != dst else why


def recovery_row(rec: dict[str, Any]) -> str:
    """The health check (builder/inputs/recovery.py): its totals, a recovery under way or given up, and
    the newest records, one line each (when, why, down time, its cost, the outcome)."""
    head = (f"auto, every {rec['interval_min']} min, {rec['max_tries']} tries; {rec['count']} recorded, "
            f"{rec['recovered']} recovered, down {_span(rec['down_s'])} in all ({_money(rec['cost_usd'])}"
            f"{'' if rec['cost_known'] else ' + unknown'})")
    lines = [head]
    mark = rec["mark"]
    if mark:
        if mark.get("gave_up") == "1":
            lines.append(f"GAVE UP after {mark.get('tries', '?')} failed tries on a slice lost since "
                         f"{mark.get('detected_at', '?')} ({mark.get('reason', '?')}): run `tpubuild update`")
        else:
            removed = (f"; group {mark['removed']} removed for want of capacity, the recreate asks the modes of "
                       "its zone in order") if mark.get("removed") else ""  # mig (docs/recovery.md, "Candidates")
            zones = mark.get("refused_zones", "")  # TPU_RECOVERY_MOVE: the zones this recovery found refusing
            refused = f"; refused every mode this time: {zones.replace(',', ', ')}" if zones else ""
            lines.append(f"under way: lost since {mark.get('detected_at', '?')} ({mark.get('reason', '?')}), "
                         f"{mark.get('tries', '0')} failed tries{removed}{refused}")
    for r in reversed(rec["records"]):
        lines.append(f"{r.get('ended_at', '?')}: {r.get('reason', '?')} -> {r.get('outcome', '?')}{_moved(r)}, down "
                     f"{_span(r.get('down_s', 0))} ({_money(r.get('down_cost_usd'))}): {r.get('message', '')}")
    return "\n             ".join(lines)

"""``tpubuild migrate``: a values.env → the path Google recommends for its generation.

Pure text in, text out (``migrate_text``); the command (builder/commands/migrate.py) reads and
writes the files. The target is the generation record's ``preferred_path``
(builder/facts/generations.py, the ``apis.preference`` of builder/data/tpu_offers.json): Compute Engine
(``mig``) for the generations Google offers there (v5p, v6e, TPU7x), the Cloud TPU API (``vm``)
for v2-v4 and v5e. Two rewrites follow from it:

* a TPU VM file of a Compute Engine generation that did not ask for ``vm`` (TPU_ARCH empty or
  absent) becomes ``mig``: TPU_ARCH="mig" is written, and TPU_RUNTIME_VERSION (MIG VMs boot the
  record's accelerator OS image) and TPU_QUEUED (a queued resource makes Cloud TPU API VMs; the
  MIG retries until capacity is free) are commented out with their reason. A file that says
  TPU_ARCH="vm" asked for that path and is kept, with a note naming the recommended one;
* a TPU Node file (v2/v3, whose path is ``vm``) becomes its TPU VM equivalent, line by line,
  keeping every other line and every comment:

* ``TPU_ARCH`` becomes ``vm`` (inserted above TPU_ACCELERATOR_TYPE when the file left it to be
  inferred);
* a TPU Node runtime (``pytorch-*``) becomes the TPU VM runtime of the generation
  (``builder.config.offers``: v2/v3/v4 → tpu-ubuntu2204-base), written as TPU_RUNTIME_VERSION;
* keys that only meant something for the node's worker MIG (MACHINE_TYPE, SOURCE_IMAGE_FAMILY,
  SOURCE_IMAGE_PROJECT, GCE_IMAGE_VERSION, BOOT_DISK_SIZE_GB, TPU_CIDR_BLOCK) are commented out
  with a one-line reason, and so is any line that refers to one of them with ``${...}``;
* MIG_EXTERNAL_IP becomes TPU_EXTERNAL_IPS (the same meaning for TPU VM hosts);
* an attached shared PD's SHARED_PD_DISK_TYPE becomes one the generation's TPU VMs attach (its
  record's ``shared_pd_types``: pd-balanced for v2 and v3, from
  https://cloud.google.com/tpu/docs/setup-persistent-disk);
* MIG_SETUP_SCRIPT keeps its value: on TPU VMs the boot script (env_setup/scripts/startup.sh) runs
  it on every host after the mounts; the seed's own scripts (``builder.config.legacy.seed_scripts``) in
  MIG_SETUP_SCRIPT / MIG_SEED_DATA_PREP_SCRIPT are cleared with a note, since this product does
  their work itself.

Name, project, zone, Filestore and the other PD settings are untouched. A file already on its path
that holds no seed script path comes back unchanged, so running migrate twice changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from builder.config import Settings, load_text
from builder.config.legacy import seed_scripts
from builder.config.validate import VM_RUNTIMES
from builder.facts import generations
from builder.facts.records import field, record

MARK = "# tpubuild migrate:"

#: Node-only keys → why they are commented out.
NODE_ONLY: dict[str, str] = {
    "MACHINE_TYPE": "the node's worker MIG machine type; TPU VM hosts are the TPU's own machines",
    "SOURCE_IMAGE_FAMILY": "the node's worker image; TPU VMs boot the image of their runtime",
    "SOURCE_IMAGE_PROJECT": "the node's worker image project; TPU VMs boot the image of their runtime",
    "GCE_IMAGE_VERSION": "pinned the node's worker image; TPU VMs boot the image of their runtime",
    "BOOT_DISK_SIZE_GB": "the node's worker boot disk; TPU VM boot disks are sized by Cloud TPU",
    "TPU_CIDR_BLOCK": "the node's /29 for its TPU workers; TPU VMs take addresses from the subnetwork",
}
RENAMED: dict[str, str] = {"MIG_EXTERNAL_IP": "TPU_EXTERNAL_IPS"}
SCRIPT_KEYS = ("MIG_SETUP_SCRIPT", "MIG_SEED_DATA_PREP_SCRIPT")

_ASSIGN = re.compile(
    r"""^(?P<lead>\s*(?:export\s+)?)(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<eq>\s*=\s*)"""
    r"""(?P<value>"(?:[^"\\]|\\.)*"|'[^']*'|[^\s#'"]*)(?P<tail>\s*(?:#.*)?)$""")
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


@record(frozen=False)
class Result:
    text: str
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def target_path(settings: Settings) -> str:
    """The path migrate writes: the generation's preferred path, unless the file asked for
    TPU_ARCH="vm" (kept: the Cloud TPU API still serves it) or a node generation (v2/v3) has no
    other path than ``vm``."""
    preferred = generations.preferred_path(settings.topology.record)
    if settings.arch == "vm" and settings.raw.get("TPU_ARCH", "") == "vm":
        return "vm"
    if settings.arch == "node":
        assert preferred == "vm", preferred  # no TPU Node generation is offered on Compute Engine
    return preferred


def _to_mig(text: str, path: Path | str, settings: Settings) -> Result:
    """A TPU VM file of a Compute Engine generation → TPU_ARCH="mig" (see the module docstring)."""
    shape = settings.topology.record.mig
    assert shape is not None
    image = f"{shape.image_project}/{shape.image_family}"
    drop = {"TPU_RUNTIME_VERSION": f"MIG VMs boot the accelerator OS image {image}; no TPU runtime",
            "TPU_PYTORCH_VERSION": f"MIG VMs boot the accelerator OS image {image}; no TPU runtime",
            "TPU_QUEUED": "a queued resource makes Cloud TPU API VMs; the MIG retries creating its VMs "
                          "until capacity is free"}
    result, out, arch_written = Result(text), [], False
    for line in text.splitlines():
        m = _ASSIGN.match(line)
        key = m["key"] if m else ""
        if m and key == "TPU_ARCH":
            out.append(f'{m["lead"]}TPU_ARCH{m["eq"]}"mig"{m["tail"]}')
            arch_written = True
            result.changes.append(f"TPU_ARCH: {_unquote(m['value'])!r} → 'mig'")
            continue
        if m and key == "TPU_ACCELERATOR_TYPE" and not arch_written and settings.line_of("TPU_ARCH") is None:
            out.append('TPU_ARCH="mig" # Compute Engine MIG of TPU VMs; written by tpubuild migrate')
            arch_written = True
            result.changes.append("TPU_ARCH: (inferred vm) → 'mig'")
        if m and key in drop and (key != "TPU_QUEUED" or settings.queued):
            out.extend((f"{MARK} {drop[key]}", f"# {line.lstrip()}"))
            result.changes.append(f"{key}={_unquote(m['value'])!r}: commented out ({drop[key]})")
            continue
        out.append(line)
    result.text = "\n".join(out) + ("\n" if text.endswith("\n") else "")
    migrated = load_text(result.text, path)  # the result must load; a ConfigError here is a bug report
    mig = migrated.mig_shape
    best = generations.api("mig")
    result.notes.append(f"{migrated.accelerator_type} is now a Compute Engine MIG slice ({mig.vms} x {mig.machine_type}, "
                        f"topology {mig.topology}, {migrated.provisioning}): {best.label} is {best.in_short} for "
                        f"{settings.topology.generation}; Filestore, the shared PD and their settings are unchanged")
    result.notes.append("an applied TPU VM of this environment is destroyed and the MIG slice created by the next "
                        "create or update (training is interrupted; `tpubuild plan` shows it); to keep the Cloud "
                        'TPU API path, set TPU_ARCH="vm" in the original instead')
    return result


def migrate_text(text: str, path: Path | str) -> Result:
    """The migrated text and what changed. Raises ConfigError when the file does not load."""
    settings = load_text(text, path)
    target_arch = target_path(settings)
    if settings.arch == "vm" and target_arch == "mig":
        return _to_mig(text, path, settings)
    lines = text.splitlines()
    out: list[str] = []
    result = Result(text)
    node = settings.arch == "node"
    gen = settings.topology.generation
    vm_runtime = next((r for r, gens in VM_RUNTIMES.items() if gen in gens), "")
    commented: set[str] = set()
    arch_written = False
    for line in lines:
        m = _ASSIGN.match(line)
        if not m:
            out.append(line)
            continue
        key, value, tail = m["key"], m["value"], m["tail"]
        raw = _unquote(value)
        refs = set(_REF.findall(value)) & commented
        if node and (key in NODE_ONLY or refs):
            why = NODE_ONLY.get(key) or f"refers to {', '.join(sorted(refs))}, commented out above"
            out.append(f"{MARK} {why}")
            out.append(f"# {line.lstrip()}")
            commented.add(key)
            result.changes.append(f"{key}={raw!r}: commented out ({why})")
            continue
        if node and key == "TPU_ARCH":
            out.append(f'{m["lead"]}TPU_ARCH{m["eq"]}"vm"{tail}')
            arch_written = True
            result.changes.append(f"TPU_ARCH: {raw!r} → 'vm'")
            continue
        if node and key in ("TPU_PYTORCH_VERSION", "TPU_RUNTIME_VERSION") and raw.startswith("pytorch-"):
            if not arch_written and settings.line_of("TPU_ARCH") is None:
                out.append('TPU_ARCH="vm" # TPU VM pod (PJRT); written by tpubuild migrate')
                arch_written = True
                result.changes.append("TPU_ARCH: (inferred node) → 'vm'")
            note = f" # was {raw} (TPU Node); the {gen} TPU VM runtime, written by tpubuild migrate"
            out.append(f'{m["lead"]}TPU_RUNTIME_VERSION{m["eq"]}"{vm_runtime}"{note}')
            result.changes.append(f"{key}={raw!r} → TPU_RUNTIME_VERSION={vm_runtime!r} (the {gen} TPU VM runtime)")
            continue
        if node and key in RENAMED:
            new = RENAMED[key]
            out.append(f'{m["lead"]}{new}{m["eq"]}{value}{tail}')
            result.changes.append(f"{key} → {new} (same meaning for TPU VM hosts)")
            continue
        attachable = settings.topology.record.shared_pd_types  # v2/v3 TPU VMs: pd-balanced only
        if node and key == "SHARED_PD_DISK_TYPE" and settings.shared_pd_attach and attachable and raw not in attachable:
            disk, only = attachable[0], generations.disk_words(attachable)
            out.append(f"{MARK} was {raw}: TPU VMs attach {only} only")
            out.append(f'{m["lead"]}{key}{m["eq"]}"{disk}"{tail}')
            result.changes.append(f"{key}: {raw!r} → '{disk}' (TPU VMs attach {only} only)")
            result.notes.append(f"the shared PD becomes {disk}: an existing {raw} disk is replaced, which the "
                                "guard refuses without _ALLOW_DATA_LOSS; destroy snapshots it first, and "
                                'SHARED_PD_RESTORE="latest" restores that snapshot onto the new disk')
            continue
        if key in SCRIPT_KEYS and raw in seed_scripts():
            out.append(f"{MARK} {raw} was {seed_scripts()[raw]}; cleared")
            out.append(f'{m["lead"]}{key}{m["eq"]}""{tail}')
            result.changes.append(f"{key}: {raw!r} → '' (seed script: {seed_scripts()[raw]})")
            continue
        out.append(line)
    if not result.changes:
        preferred = generations.preferred_path(settings.topology.record)
        if settings.arch != preferred:  # a file that asked for TPU_ARCH="vm"
            best = generations.api(preferred)
            result.notes.append(f'TPU_ARCH="{settings.arch}" is kept as the file asks; {best.label} is {best.in_short} '
                                f'for {gen}: delete the TPU_ARCH line and run tpubuild migrate again to move there')
        return result
    new_text = "\n".join(out) + ("\n" if text.endswith("\n") or not text else "")
    migrated = load_text(new_text, path)  # the result must load; a ConfigError here is a bug report
    if node and settings.mig_setup_script and settings.mig_setup_script not in seed_scripts():
        result.notes.append(f"MIG_SETUP_SCRIPT={settings.mig_setup_script!r} now runs on every TPU VM host "
                            "after the mounts (env_setup/scripts/startup.sh)")
    if node:
        result.notes.append(f"{migrated.accelerator_type} is now a TPU VM pod ({migrated.hosts} host(s), "
                            f"runtime {migrated.runtime_version}, {migrated.provisioning}); "
                            "Filestore, the shared PD and their settings are unchanged")
    result.text = new_text
    return result

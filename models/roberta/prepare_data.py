"""Core of prepare_data.sh: raw text → (GPT-2 BPE) → ``fairseq-preprocess --only-source`` → data-bin.

Standard library only; fairseq runs in subprocesses of the same Python (``python -m
fairseq_cli.preprocess``, ``python -m fairseq.examples.roberta.multiprocessing_bpe_encoder``).

Idempotent: the data-bin holds ``.tpubuild-stamp`` (JSON) with the input hash: SHA-256 of the
train and valid files' contents (or of ``--fingerprint``, the gs:// listing prepare_data.sh
passes), the BPE setting and this format's version. When the stamp matches and the binary files
are there, nothing is done. A rebuild writes a sibling folder and swaps it in with renames, so an
interrupted run never leaves a half-written data-bin behind the stamp.

Exit codes: 0 done or already current; 1 (with ``--check``) needs building; 2 bad input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

FORMAT = 1
STAMP = ".tpubuild-stamp"
OUTPUTS = ("dict.txt", "train.bin", "train.idx", "valid.bin", "valid.idx")
GPT2_FILES = {
    "encoder.json": "https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/encoder.json",
    "vocab.bpe": "https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/vocab.bpe",
    "dict.txt": "https://dl.fbaipublicfiles.com/fairseq/gpt2_bpe/dict.txt",
}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def input_hash(bpe: str, *, files: list[Path] | None = None, fingerprint: str | None = None) -> str:
    h = hashlib.sha256(f"format={FORMAT}\nbpe={bpe}\n".encode())
    if fingerprint is not None:
        h.update(b"fingerprint\n" + fingerprint.encode())
    for f in files or []:
        h.update(f"{f.name}={file_sha256(f)}\n".encode())
    return h.hexdigest()


def is_current(dest: Path, digest: str) -> bool:
    try:
        stamp = json.loads((dest / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp.get("hash") == digest and all((dest / name).is_file() for name in OUTPUTS)


def _run(cmd: list[str]) -> None:
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def gpt2_files(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    for name, url in GPT2_FILES.items():
        target = cache / name
        if not target.is_file():
            part = target.with_suffix(target.suffix + ".part")
            with urllib.request.urlopen(url, timeout=60) as r, part.open("wb") as f:  # noqa: S310 (fixed https URL)
                shutil.copyfileobj(r, f)
            part.replace(target)
    return cache


def build(src: Path, dest: Path, train: str, valid: str, bpe: str, workers: int, digest: str) -> None:
    python = sys.executable
    work = dest.parent / f".{dest.name}.build-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        inputs = {"train": src / train, "valid": src / valid}
        srcdict: list[str] = []
        if bpe == "gpt2":
            cache = gpt2_files(dest.parent / ".gpt2_bpe")
            for split, path in list(inputs.items()):
                out = work / f"{split}.bpe"
                _run([python, "-m", "fairseq.examples.roberta.multiprocessing_bpe_encoder",
                      "--encoder-json", str(cache / "encoder.json"), "--vocab-bpe", str(cache / "vocab.bpe"),
                      "--inputs", str(path), "--outputs", str(out), "--keep-empty", "--workers", str(workers)])
                inputs[split] = out
            srcdict = ["--srcdict", str(cache / "dict.txt")]
        out_dir = work / "data-bin"
        _run([python, "-m", "fairseq_cli.preprocess", "--only-source",
              "--trainpref", str(inputs["train"]), "--validpref", str(inputs["valid"]),
              "--destdir", str(out_dir), "--workers", str(workers), *srcdict])
        (out_dir / STAMP).write_text(json.dumps({"hash": digest, "bpe": bpe, "format": FORMAT,
                                                 "train": train, "valid": valid}) + "\n")
        old = dest.parent / f".{dest.name}.old-{os.getpid()}"
        if dest.exists():
            dest.rename(old)
        out_dir.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dest", required=True, type=Path, help="the data-bin folder to produce")
    p.add_argument("--src-dir", type=Path, help="folder holding the raw train and valid files")
    p.add_argument("--train-file", default="train.txt")
    p.add_argument("--valid-file", default="valid.txt")
    p.add_argument("--bpe", choices=("gpt2", "none"), default="gpt2")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--fingerprint", help="identity of the input when it is remote (gs:// listing)")
    p.add_argument("--check", action="store_true", help="only report: exit 0 if current, 1 if it needs building")
    a = p.parse_args(argv)

    files: list[Path] = []
    if a.fingerprint is None:
        if a.src_dir is None:
            p.error("--src-dir is required without --fingerprint")
        files = [a.src_dir / a.train_file, a.src_dir / a.valid_file]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            print(f"prepare_data: {', '.join(missing)} not found; check ROBERTA_DATA_SOURCE, "
                  "ROBERTA_TRAIN_FILE and ROBERTA_VALID_FILE", file=sys.stderr)
            return 2
    digest = input_hash(a.bpe, files=files, fingerprint=a.fingerprint)
    if is_current(a.dest, digest):
        print(f"prepare_data: {a.dest} is current for this input (stamp {digest[:12]}); skipped", file=sys.stderr)
        return 0
    if a.check:
        return 1
    if a.src_dir is None:
        p.error("--src-dir is required to build")
    a.dest.parent.mkdir(parents=True, exist_ok=True)
    build(a.src_dir, a.dest, a.train_file, a.valid_file, a.bpe, max(1, a.workers), digest)
    print(f"prepare_data: wrote {a.dest} (stamp {digest[:12]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

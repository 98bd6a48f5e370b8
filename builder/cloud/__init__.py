"""Google Cloud edge of tpubuild: GCS (buckets, workspace, lock, applied snapshot), Cloud Build,
TPU and Filestore. Every module here imports ``google.*`` lazily or is only imported by commands
that talk to Google; ``render``/``plan``/``validate`` never load it.

* ``clients``: the one place clients are built (emulator/fake endpoints, credentials).
* ``errors``: Google exceptions → one-line ``WorldError``.
* ``buckets``, ``workspace``, ``lock``, ``snapshot``: state in GCS.
* ``source``: the content-addressed source tarball (pure).
* ``builds``: create a build, stream its steps, report its outcome.
* ``auto``: the digests of each module's sources and the decision against them (the rule
  itself is ``builder.planning.auto``, pure).
* ``status``: what is running.
* Nothing here imports ``builder.commands`` or ``builder.cli``: the command bodies live in
  ``builder/commands/`` (tests/unit/test_import_direction.py checks it).
"""

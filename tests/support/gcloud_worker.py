"""Runs inside gcloud's own Python (started by tests/support/gcloud.py ``_Worker``, never imported by
the tests): gcloud's CLI, loaded once, executes one command line per input line.

Each input line is JSON ``{"argv": [...]}``; each answer is one JSON line, on the pipe whose fd is
``argv[2]`` (never stdout, where gcloud's subprocesses may print), ``{"returncode", "stdout",
"stderr"}``, with the exit status gcloud's ``main`` would have given (a ``SystemExit`` from its
argument parser or error handler). gcloud builds a ``CLI`` (``gcloud_main.CreateCLI``) for every run
of the ``gcloud`` command; here a fresh one is built for every line too (calliope keeps parser state
on it), and only the per-process start-up (Python, importing the SDK and the command modules) is
paid once. The first output line is ``ready``.
"""

import io
import json
import os
import sys

LIB = sys.argv[1]
# answers go on their own pipe (argv[2]); stdout and stderr are a log that gcloud and the programs
# it starts (ssh-keygen) may print on freely
ANSWERS = os.fdopen(int(sys.argv[2]), "w")
# the sys.path lib/gcloud.py sets up: its own folder, then its third_party folder first
sys.path.insert(0, LIB)
if os.path.isdir(os.path.join(LIB, "third_party")):
    sys.path.insert(0, os.path.join(LIB, "third_party"))

from googlecloudsdk import gcloud_main  # noqa: E402
from googlecloudsdk.core import log  # noqa: E402

OUT, ERR = sys.stdout, sys.stderr


def execute(argv):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    sys.stdout, sys.stderr = out, err
    log.Reset(out, err)
    try:
        # a CLI object per line, as every `gcloud` run builds one: calliope keeps parser state on it
        # (a second run of one command on the same object can be refused); building one is ~20 ms,
        # the imports it needs are the ~1 s a `gcloud` process pays and this one does not
        gcloud_main.CreateCLI([]).Execute(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # what gcloud's crash handler would report: exit 1
        code = 1
        err.write("ERROR: gcloud crashed ({}): {}\n".format(type(exc).__name__, exc))
    finally:
        sys.stdout, sys.stderr = OUT, ERR
        log.Reset(OUT, ERR)
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


print("ready", file=ANSWERS, flush=True)
for line in sys.stdin:
    print(json.dumps(execute(json.loads(line)["argv"])), file=ANSWERS, flush=True)

"""Turn Google client exceptions into one-line :class:`WorldError` s (exit 1).

Use ``with cloud_call("reading gs://bucket/object"):`` around calls; a ``TpuBuildError`` raised
inside passes through untouched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from builder.cloud.clients import NO_CREDENTIALS
from builder.facts.errors import TpuBuildError, WorldError

_HINTS = {
    401: "the credentials were refused; run `gcloud auth application-default login`",
    403: "permission denied; grant the roles listed in docs/cloud.md to the caller",
    404: "not found",
    429: "quota or rate limit hit; retry later",
}


def one_line(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:300]


def describe(exc: BaseException) -> str:
    """A short, single-line description of a Google client exception."""
    code = getattr(exc, "code", None)
    text = one_line(exc)
    hint = _HINTS.get(code) if isinstance(code, int) else None
    if hint and hint not in text:
        return f"{text} ({hint})"
    return text


@contextlib.contextmanager
def cloud_call(what: str) -> Iterator[None]:
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as aexc

    try:
        yield
    except TpuBuildError:
        raise
    except aexc.DefaultCredentialsError:
        raise WorldError(NO_CREDENTIALS) from None
    except aexc.GoogleAuthError as exc:
        raise WorldError(f"{what}: authentication failed: {one_line(exc)}; "
                         "run `gcloud auth application-default login`") from None
    except gexc.RetryError as exc:
        cause = exc.cause if exc.cause is not None else exc
        raise WorldError(f"{what}: gave up after retries: {describe(cause)}") from None
    except gexc.GoogleAPIError as exc:
        raise WorldError(f"{what}: {describe(exc)}") from None
    except (ConnectionError, TimeoutError) as exc:
        raise WorldError(f"{what}: cannot reach the service ({one_line(exc)})") from None
    except OSError as exc:  # requests' ConnectionError is an OSError too
        raise WorldError(f"{what}: {one_line(exc)}") from None

"""Google's naming rules (builder/config/names.py): the rules against the examples in Google's
docs, and every name Settings derives is one the rules check."""

from __future__ import annotations

import inspect

import pytest

from builder.config import names
from builder.config.settings import Settings


@pytest.mark.parametrize("name", ["my-travel-maps", "0f75d593-8e7b-4418-a5ba-cb2970f0b91e", "test.example.com",
                                  "a" * 63, "abc", "my_bucket", ".".join(["a" * 63] * 3)])
def test_legal_bucket_names(name: str) -> None:
    assert names.bucket_problem(name) is None


@pytest.mark.parametrize("name, why", [
    ("My-Travel-Maps", "lowercase"), ("my_google_bucket", "google"), ("goog-data", "goog"),
    ("g00gle-maps", "misspelling"), ("192.168.5.4", "IP address"), ("ab", "3 to 63"), ("a" * 64, "3 to 63"),
    ("-bucket", "start and end"), ("bucket-", "start and end"), ("my..bucket", "'..'"), ("my-.bucket", "'-.'"),
    ("a." + "b" * 64, "longer than 63"), (".".join(["a" * 63] * 4), "at most 222"), ("bücket", "lowercase"),
])
def test_illegal_bucket_names(name: str, why: str) -> None:
    problem = names.bucket_problem(name)
    assert problem is not None and why in problem


@pytest.mark.parametrize("name, ok", [("tpu-dev1", True), ("a", True), ("a" * 63, True), ("a" * 64, False),
                                      ("1tpu", False), ("tpu-", False), ("Tpu", False), ("tpu_1", False),
                                      ("tpu-１", False)])
def test_compute_names(name: str, ok: bool) -> None:
    assert (names.gce_problem(name) is None) == ok


@pytest.mark.parametrize("name, ok", [("tb-dev-cb", True), ("abcdef", True), ("abcde", False), ("a" * 31, False),
                                      ("tb-x-", False), ("1abcdef", False)])
def test_service_account_ids(name: str, ok: bool) -> None:
    assert (names.service_account_problem(name) is None) == ok


def test_every_derived_name_property_is_checked() -> None:
    """A new ``*_bucket``, ``*_name`` or ``*_service_account_id`` property of Settings must be
    added to names.derived, or this fails."""
    from tests.conftest import REPO, SHIPPED
    from builder.config import load_text

    s = load_text(SHIPPED.read_text(), REPO / "values.env")
    props = [n for n, v in inspect.getmembers(Settings) if isinstance(v, property)
             and n.endswith(("_bucket", "_name", "_service_account_id"))]
    checked = {name for _kind, name, _key in names.derived(s)}
    assert len(props) >= 7
    for prop in props:
        value = getattr(s, prop)
        if value:
            assert value in checked or value + "-abcd" in checked, f"Settings.{prop} is not checked by names.derived"


@pytest.mark.parametrize("text, key, line", [
    # GCS_DATASET takes the reserved word from another key: the fix goes on that key's line
    ('MY_BUCKET="g00gle-data"\nGCS_DATASET="gs://${MY_BUCKET}/x"\n', "MY_BUCKET", 6),
    ('GCS_DATASET="gs://${PROJECT_ID}-g00gle/x"\n', "GCS_DATASET", 6),  # written there: its own line
])
def test_a_reserved_bucket_word_is_blamed_on_the_key_that_holds_it(text: str, key: str, line: int) -> None:
    from builder.config import load_text
    from builder.facts.errors import ConfigError
    from tests.support.bad_input import MINIMAL

    with pytest.raises(ConfigError) as exc:
        load_text(MINIMAL + text, "v.env")
    assert (exc.value.key, exc.value.line) == (key, line) and "g00gle" in str(exc.value)


def test_env_name_in_the_state_bucket_is_blamed_on_env_build_name() -> None:
    from builder.config import load_text
    from builder.facts.errors import ConfigError
    from tests.support.bad_input import MINIMAL

    with pytest.raises(ConfigError) as exc:
        load_text(MINIMAL.replace('"env1"', '"g00gle"') + 'GCS_DATASET="gs://${PROJECT_ID}-${ENV_BUILD_NAME}/x"\n', "v.env")
    assert (exc.value.key, exc.value.line) == ("ENV_BUILD_NAME", 1) and "choose another ENV_BUILD_NAME" in str(exc.value)

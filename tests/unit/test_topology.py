import pytest

from builder.facts.errors import BadInput
from builder.facts.topology import parse, valid_types

TABLE = [
    # type, generation, chips, cores, hosts
    ("v2-8", "v2", 4, 8, 1),
    ("v3-8", "v3", 4, 8, 1),
    ("v3-32", "v3", 16, 32, 4),
    ("v3-128", "v3", 64, 128, 16),
    ("v3-2048", "v3", 1024, 2048, 256),
    ("v4-32", "v4", 16, 32, 4),
    ("v5litepod-4", "v5e", 4, 4, 1),
    ("v5litepod-16", "v5e", 16, 16, 4),
    ("v5p-32", "v5p", 16, 32, 4),
    ("v6e-8", "v6e", 8, 8, 1),
    ("v6e-16", "v6e", 16, 16, 4),
    ("v5litepod-1", "v5e", 1, 1, 1),
    ("v6e-256", "v6e", 256, 256, 64),
]


@pytest.mark.parametrize("name,gen,chips,cores,hosts", TABLE)
def test_table(name: str, gen: str, chips: int, cores: int, hosts: int) -> None:
    t = parse(name)
    assert (t.generation, t.chips, t.cores, t.hosts) == (gen, chips, cores, hosts)


def test_every_valid_type_parses_with_whole_hosts() -> None:
    for name in valid_types():
        t = parse(name)
        assert t.hosts >= 1 and t.cores % t.hosts == 0


@pytest.mark.parametrize("bad", ["v3-33", "v3-16", "v7-8", "v5e-16", "tpu", "", "v3-", "V3-32"])
def test_unknown_types_list_valid_sizes(bad: str) -> None:
    with pytest.raises(BadInput) as exc:
        parse(bad)
    assert "v3-32" in str(exc.value) or "v5litepod-16" in str(exc.value) or "v3-N" in str(exc.value)


def test_wrong_size_lists_the_family_sizes() -> None:
    with pytest.raises(BadInput, match=r"valid sizes are v3-8, v3-32"):
        parse("v3-33")

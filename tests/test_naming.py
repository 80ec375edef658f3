"""Identifiers derived from model text (fpgagen.naming)."""

import re

import pytest

from fpgagen.naming import _RESERVED, identifier, unique_identifiers

SUFFIXES = ("", "_top", "_stages", "_0")  # what the templates append to a model's or layer's name


@pytest.mark.parametrize("text", sorted(_RESERVED) + ["__init__", "a__b", "_Upper", "9lives", "", "ü ✓", "x" * 80])
def test_an_identifier_is_neither_reserved_nor_reserved_once_suffixed(text):
    name = identifier(text, "layer")
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name) and len(name) <= 50
    for suffix in SUFFIXES:
        assert "__" not in name + suffix and (name + suffix) not in _RESERVED and not (name + suffix).endswith("_")


def test_colliding_texts_get_numbered():
    assert unique_identifiers(["a b", "a-b", "class", "x_class"], "layer") == ["a_b", "a_b_1", "x_class", "x_class_1"]

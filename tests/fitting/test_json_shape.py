"""The vectorized shape scan agrees with a plain character-by-character reading of JSON, whatever
the chunk boundaries cut (strings, escaped quotes and backslashes, brackets inside strings)."""

from __future__ import annotations

import random

import pytest

from batsim_google.errors import InputFileError
from batsim_google.fitting import json_shape
from batsim_google.fitting.json_shape import check_json_shape


def plain_depth(text: str) -> int:
    """The deepest nesting of arrays and objects outside strings, read character by character."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def random_json_like(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 40)):
        if rng.random() < 0.25:
            inside = ["[", "]", "{", "}", "a", "\\\\", '\\"', " "]
            parts.append('"' + "".join(rng.choice(inside) for _ in range(rng.randint(0, 6))) + '"')
        else:
            parts.append(rng.choice(["[", "]", "{", "}", " ", ":", ",", "1"]))
    return "".join(parts)


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 7, 1 << 22])
def test_the_depth_is_the_plain_readings_across_chunk_boundaries(tmp_path, monkeypatch, chunk_bytes):
    monkeypatch.setattr(json_shape, "CHUNK_BYTES", chunk_bytes)
    rng = random.Random(chunk_bytes)
    path = tmp_path / "x.json"
    for _ in range(300):
        text = random_json_like(rng)
        path.write_text(text)
        depth = plain_depth(text)
        if depth > 0:
            with pytest.raises(InputFileError, match="nested more than"):
                check_json_shape(path, depth - 1)
        try:
            check_json_shape(path, depth)
        except InputFileError as error:  # a random text may repeat a top-level key, never nest deeper
            assert "twice" in str(error), (text, str(error))


@pytest.mark.parametrize(
    "text, repeated",
    [
        ('{"jobs": [], "nb_res": 1, "jobs": []}', "jobs"),
        ('{"a\\"b": 1, "a\\"b" : 2}', 'a\\"b'),
        ('{"jobs": [{"jobs": 1}], "x": "jobs"}', None),  # a nested key and a value are no top-level keys
        ('{"a": "b", "c": "b"}', None),
    ],
)
@pytest.mark.parametrize("chunk_bytes", [1, 3, 1 << 22])
def test_a_top_level_key_given_twice_is_named(tmp_path, monkeypatch, text, repeated, chunk_bytes):
    monkeypatch.setattr(json_shape, "CHUNK_BYTES", chunk_bytes)
    path = tmp_path / "x.json"
    path.write_text(text)
    if repeated is None:
        check_json_shape(path)
    else:
        with pytest.raises(InputFileError, match="is given twice at the top level") as error:
            check_json_shape(path)
        assert repr(repeated) in str(error.value) or repeated in str(error.value)

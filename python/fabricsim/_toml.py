"""Writing scenarios as TOML: a scenario dict as a TOML document (tomli-w), and a run's
top-level overrides (``seed``, ``partitions``) set in a scenario's TOML text, keeping its
comments and layout.

Scenario dicts are JSON-like (string keys; strings, integers, finite floats, booleans,
tables and lists; see ``api._plain``), which TOML represents exactly, so the document
written here reads back as the same dict.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import tomli_w


def dumps(doc: Mapping[str, Any]) -> str:
    """``doc`` (a JSON-like scenario dict) as a TOML document."""
    return tomli_w.dumps(doc)


def _line(key: str, value: Any) -> str:
    """``key = value`` on one line."""
    return tomli_w.dumps({key: value}).strip()


# ---------------------------------------------------------------------------------------
# Top-level keys of TOML text.


class _Statement:
    """A top-level ``key = value`` of a TOML text: ``text[start:end]``, without the line
    break that ends it."""

    def __init__(self, start: int, end: int, key: Optional[str]):
        self.start, self.end, self.key = start, end, key


def _top_level(text: str) -> Tuple[List[_Statement], Optional[int]]:
    """The key/value statements before the first table header of ``text``, and where
    that header's line starts (None without one).

    A small scanner of TOML's lexical structure: strings (basic, literal, multi-line),
    comments, and brackets of arrays and inline tables, so that a ``[`` inside a value
    that spans lines is not taken for a header.
    """
    statements: List[_Statement] = []
    i, n = 0, len(text)
    while i < n:
        # The start of a line, outside any value.
        line_start = i
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        c = text[i]
        if c == "[":
            return statements, line_start
        if c in "\r\n" or c == "#":
            i = text.find("\n", i)
            i = n if i < 0 else i + 1
            continue
        start = i
        key_end = None
        depth = 0
        while i < n:
            c = text[i]
            if text.startswith('"""', i) or text.startswith("'''", i):
                q = text[i:i + 3]
                i += 3
                while i < n:
                    if q == '"""' and text[i] == "\\":
                        i += 2
                        continue
                    if text.startswith(q, i):
                        # Up to two more quotes right before the delimiter are content.
                        run = 3
                        while run < 5 and i + run < n and text[i + run] == q[0]:
                            run += 1
                        i += run
                        break
                    i += 1
                continue
            if c == '"' or c == "'":
                i += 1
                while i < n and text[i] != c and text[i] != "\n":
                    i += 2 if (c == '"' and text[i] == "\\") else 1
                i += 1
                continue
            if c == "#":
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "=" and key_end is None and depth == 0:
                key_end = i
            elif c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
            elif c == "\n" and depth <= 0:
                break
            i += 1
        end = min(i, n)
        stripped_end = end - 1 if end > start and text[end - 1] == "\r" else end
        key = None
        if key_end is not None:
            raw = text[start:key_end].strip()
            key = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'" and "." not in raw else raw
        statements.append(_Statement(start, stripped_end, key))
        i = end + 1
    return statements, None


def set_top_level(text: str, values: Mapping[str, Any], why: str = "set for this run") -> str:
    """``text`` with each top-level key of ``values`` set to its value: an existing
    ``key = ...`` line is replaced, a missing key is added after the last top-level
    key (top-level keys must come before the first ``[table]`` header). Keys and values
    are simple (``seed``, ``partitions``: integers)."""
    statements, header = _top_level(text)
    edits: List[Tuple[int, int, str]] = []
    missing: Dict[str, Any] = {}
    for key, value in values.items():
        found = [s for s in statements if s.key == key]
        if found:
            for s in found:
                old = " ".join(text[s.start:s.end].split())
                edits.append((s.start, s.end, f"{_line(key, value)}  # {why} (the scenario had: {old})"))
        else:
            missing[key] = value
    if missing:
        added = "".join(f"{_line(k, v)}  # {why}\n" for k, v in missing.items())
        if statements:
            at = statements[-1].end
            # After the line break that ends the last statement (or one of our own).
            nl = text.find("\n", at)
            if nl < 0:
                edits.append((len(text), len(text), "\n" + added))
            else:
                edits.append((nl + 1, nl + 1, added))
        elif header is not None:
            edits.append((header, header, added + "\n"))
        else:
            edits.append((len(text), len(text), ("\n" if text and not text.endswith("\n") else "") + added))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _tomllib():
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        return None
    return tomllib


def with_overrides(text: str, values: Mapping[str, Any], why: str = "set for this run") -> Optional[str]:
    """``set_top_level``, checked where Python can read TOML (3.11+): the result must
    read as the original document with ``values`` set. None if that check fails."""
    if not values:
        return text
    new = set_top_level(text, values, why)
    toml = _tomllib()
    if toml is None:
        return new
    try:
        before = toml.loads(text)
    except Exception:
        # The core accepted it; Python's reader may be stricter. Nothing to compare.
        return new
    try:
        after = toml.loads(new)
    except Exception:
        return None
    return new if after == {**before, **values} else None


__all__: Sequence[str] = ("dumps", "set_top_level", "with_overrides")

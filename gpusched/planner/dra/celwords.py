"""cel-cpp's words for a failed conversion or regular expression, in cel-go's (common/types, Go's regexp/syntax).

The runtime (cel.py) and Kubernetes' regex functions (cellib's find, findAll) both report them as cel-go would.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["go_words", "go_regex_error"]

_CONSTANT_WORDS = [
    (re.compile(r"^cannot convert string to (int|uint|double)$"), r"type conversion error from 'string' to '\1'"),
    (re.compile(r"^Type conversion error from"), "type conversion error from"),
    (re.compile(r"^(int64|double) out of uint64 range$"), "unsigned integer overflow"),
    (re.compile(r"^(uint64|double) out of int64 range$"), "integer overflow"),
    (re.compile(r"^malformed UTF-8 bytes$"), "invalid UTF-8 in bytes, cannot convert to string"),
    (
        re.compile(r"^String to (Timestamp|Duration) conversion failed$"),
        r"type conversion error from 'string' to 'google.protobuf.\1'",
    ),  # fmt: skip
]
_REGEX_CODES = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "trailing \\": "trailing backslash at end of expression",
    "invalid named capture group": "invalid named capture",
    "invalid repetition size": "invalid repeat count",
    "invalid perl operator": "invalid or unsupported Perl syntax",
}
_TRAILING = "trailing \\"
_REGEX_ERROR = re.compile(r"^invalid regular expression: (.*?)(?:: (.*))?$", re.S)


def go_words(text: str) -> str:
    """A library error (its status code first, or not) in cel-go's words."""
    words = re.sub(r"^[A-Z_]+: ", "", text)
    regex = _REGEX_ERROR.match(words)
    if regex:
        code, fragment = regex.group(1), regex.group(2) or ""
        if code == _TRAILING:
            fragment = ""  # Go names no fragment for a trailing backslash
        return f"error parsing regexp: {_REGEX_CODES.get(code, code)}: `{fragment}`"
    for pattern, replacement in _CONSTANT_WORDS:
        words = pattern.sub(replacement, words)
    return words


@lru_cache(maxsize=1024)
def go_regex_error(pattern: str) -> str | None:
    """Why Go's regexp (RE2 syntax) refuses the pattern, in Go's words; None when it compiles. RE2 decides (the
    library's `matches`), not Python's re, whose syntax differs."""
    result = _matcher().eval(data={"pattern": pattern})
    if result.type().name() != "ERROR":
        return None
    return go_words(str(result.value()))


@lru_cache(maxsize=1)
def _matcher() -> Any:
    from cel_expr_python import cel

    env = cel.NewEnv(variables={"pattern": cel.Type.STRING})
    return env.compile("''.matches(pattern)")

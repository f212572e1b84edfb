"""What this program writes to stderr, the servers' access log among it, goes out through `say()` (LOG-7,
issue 29 item 8).

A line may carry text from outside: a request's method, an upstream's `model` field, an error an endpoint
sent. Written raw, an escape sequence (`ESC [2K ESC [1A`) rubs out and rewrites the operator's terminal,
and a newline starts a line of its own that reads like the server's. `escaped()` writes every control
character as its escape instead, so one line stays one line and shows what was sent.
"""

import re
import sys

# C0 and C1 controls and DEL, the Unicode line and paragraph separators, and the bidirectional overrides and
# isolates (they reorder what a terminal or an editor shows): one class, so a line is read once
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escaped(text: object) -> str:
    """`text` with every control character written as its escape (`\\x1b`, `\\x0a` for a newline, `\\u2028`)."""
    return CONTROL.sub(_escape, str(text))


def say(*lines: object) -> None:
    """Each of `lines` on stderr as one line, escaped: the caller splits what it means as several lines."""
    sys.stderr.write("".join(escaped(line) + "\n" for line in lines))
    sys.stderr.flush()

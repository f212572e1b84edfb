"""Messages as the panel sees them: image checks, flattening, size estimates, redaction (gateway.md §8).

The gateway never fetches an image; upstreams do. So a request's images are
checked before any seat is asked (an image in a form no seat can take is
refused, never dropped: a seat would answer blind), and everything written
down carries a placeholder instead of an image's bytes, a URL's query string
or its user:password (IMG-8). `redact()` is on the hot path of error logging,
so its patterns are compiled once here.
"""

import re
import string
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import Invalid

IMAGE_TOKENS = 2500
PATH_CAP = 200

TEXT_PARTS = ("text", "input_text", "output_text", "refusal")
OTHER_APIS = ("image", "input_image")
ACCEPTED_FORM = '{"type": "image_url", "image_url": {"url": "<http(s) or data: URL>"}}'

# IMG-3: an http(s) URL with at least one host character, or an inline base64 image.
IMAGE_URL = re.compile(r"(?:https?://[^\s/?#]|data:image/[\w.+-]+;base64,)", re.I)
# IMG-7 (a): an inline data URL; `\` is allowed because a JSON echo escapes `/` as `\/`.
DATA_URL = re.compile(r"data:[\w/\\.+-]*(?:;[\w.+-]+=[\w.+-]*)*;base64,[A-Za-z0-9+/=_\\-]*", re.I)
# IMG-7 (b): an http(s) URL runs up to whitespace, a quote, `<`, `>` or a backslash.
URL = re.compile(r"https?://[^\s\"'<>\\]+", re.I)
# IMG-7 (c): a bare base64 run; the lookbehind starts matches only at a run's start (linear time).
BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{100,}={0,2}")
# BASE64's alphabet as the byte `a`, anything else as a space: text whose bytes so mapped hold no
# run of 100 `a` has no base64 run, which this tells ten times faster than the pattern can.
BASE64_BYTES = bytes(0x61 if chr(b) in string.ascii_letters + string.digits + "+/" else 0x20 for b in range(256))
BASE64_LEAST = b"a" * 100

JSON_TYPES = {bool: "a boolean", int: "a number", float: "a number", dict: "an object"}


def _kb(length: int) -> str:
    """Size in KB of `length` base64 characters, rounded up, with thousands separators."""
    return f"{(length * 3 // 4 + 999) // 1000:,}"


def image_url(part: Mapping[str, Any]) -> str:
    """An `image_url` part's URL: `image_url.url` when an object, the value when a string, else ""."""
    value = part.get("image_url")
    if isinstance(value, dict):
        value = value.get("url")
    return value if isinstance(value, str) else ""


def _parseable(url: str) -> bool:
    try:
        urllib.parse.urlsplit(url)
    except ValueError:
        return False
    return True


def validate(messages: object) -> int:
    """How many images the request carries (IMG-4); `Invalid` (a 400) for one no seat could be sent.

    Also refuses what would otherwise be silently lost or crash later: a part that is
    neither text nor an image (IMP-11), a `content` that is not a string, list or null
    (IMP-12), and an image URL whose host cannot be parsed (IMP-13).
    """
    if not isinstance(messages, list):
        raise Invalid('"messages" must be a list of message objects')
    found = 0
    for number, message in enumerate(messages, 1):
        if not isinstance(message, dict):
            raise Invalid('"messages" must be a list of message objects')
        content = message.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            named = JSON_TYPES.get(type(content), type(content).__name__)
            raise Invalid(f'message {number}: "content" must be a string, a list of content parts'
                          f" or null, not {named}")
        for part in content:
            if not isinstance(part, dict):
                continue  # IMG-1: only object parts are inspected
            kind = part.get("type")
            if kind == "image_url":
                url = image_url(part)
                if not IMAGE_URL.match(url) or not _parseable(url):
                    shown = placeholder(url) if url else "empty"
                    raise Invalid("an image_url must be an http(s) URL or a data:image/...;base64, URL,"
                                     f" not {shown}")
                found += 1
            elif kind in OTHER_APIS:
                raise Invalid(f'a "{kind}" part is another API\'s shape; send each image as {ACCEPTED_FORM}')
            elif kind is not None and kind not in TEXT_PARTS:
                raise Invalid(f'a "{kind}" part cannot be put to a panel: only text and images can be passed;'
                                 f" send text parts, and each image as {ACCEPTED_FORM}")
    return found


def count(messages: object) -> int:
    """Valid images in the request, or 0 when validation would refuse it (EST-1)."""
    try:
        return validate(messages)
    except Invalid:
        return 0


def _text(content: object) -> str:
    """FLT-1. A `refusal` part's text is its `refusal` (as the other formats read it)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "image_url":
            texts.append(placeholder(image_url(part)))
        elif kind == "refusal":
            texts.append(str(part.get("refusal") or ""))
        else:
            texts.append(str(part.get("text") or ""))
    return "\n".join(texts)


def flatten(messages: Iterable[object]) -> tuple[str, str]:
    """`(system, prompt)` as a panel seat, the call log and the merger read it (FLT-1..3).

    A conversation is kept as labelled turns, never truncated; an image is its placeholder.
    """
    given = [m for m in messages if isinstance(m, dict)]
    lead = ("system", "developer")  # newer OpenAI SDKs send "developer" for "system"
    system = "\n\n".join(_text(m.get("content")) for m in given if m.get("role") in lead)
    turns = [m for m in given if m.get("role") not in lead]
    if len(turns) == 1:
        return system, _text(turns[0].get("content"))
    return system, "\n\n".join(f"{m.get('role') or 'user'}: {_text(m.get('content'))}" for m in turns)


def placeholder(url: str) -> str:
    """How an image is written down (IMG-6): a data URL by its size, any other URL without
    its user:password or query (a signed URL's signature is a credential), fragment dropped.

    A URL whose host cannot be parsed is `[url]` (IMP-13).
    """
    if url[:5].lower() == "data:":
        return f"[image: data URL, {_kb(len(url))} KB]"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "[url]"
    host = parts.netloc.rpartition("@")[2]
    query = "?..." if parts.query else ""
    return f"[image: {parts.scheme}://{host}{parts.path[:PATH_CAP]}{query}]"


def _nth(text: str, char: str, n: int) -> int:
    """The index of the (n+1)-th `char` in `text`, or `len(text)` when there are fewer (C-speed steps)."""
    if text.count(char) <= n:
        return len(text)
    return len(text) - len(text.split(char, n + 1)[-1]) - 1


def _given_back(run: str) -> int:
    """How many trailing `)`/`]` of a URL run are not its own: an unbalanced closer ends a
    markdown link or a placeholder (so redacting redacted text changes nothing).

    Walking back from the end, a closer is given back while its kind outnumbers its openers in
    what is left; so the walk stops at the (excess + 1)-th closer of a kind, found for both kinds
    by counting once. Linear: counting inside the walk made a URL and 700,000 `)` take minutes.
    """
    closers = run[len(run.rstrip(")]")):][::-1]  # the run's trailing closers, last first
    if not closers:
        return 0
    given = len(closers)
    for closer, opener in ((")", "("), ("]", "[")):
        given = min(given, _nth(closers, closer, max(run.count(closer) - run.count(opener), 0)))
    return given


def _bare_url(match: re.Match[str]) -> str:
    run = match.group()
    back = _given_back(run)
    url, rest = run[:len(run) - back], run[len(run) - back:]
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # an unparseable host, such as "[::1"
        return "[url]" + rest
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}{'?...' if parts.query else ''}{rest}"


def _data_url(match: re.Match[str]) -> str:
    return placeholder(match.group())


def _base64_run(match: re.Match[str]) -> str:
    return f"[base64, {_kb(len(match.group()))} KB]"


def inline_images(text: str) -> str:
    """`text` with each inline image (a data URL) as its placeholder: the part of `redact()` that shrinks a
    text, so a cleaner may run it before cutting a long text short and no image is cut to `…` (issue 30)."""
    return DATA_URL.sub(_data_url, text) if "64," in text else text


def redact(text: object) -> str:
    """`text` fit to be written down (IMG-7): inline images as placeholders, every http(s)
    URL without user:password or query, any other long base64 run as its size.

    Applied to any text that may echo a request (IMP-15): upstream errors repeat requests
    in whatever form, and errors are logged, shown and learned from. Short text is untouched.
    """
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    # Each scan runs only where a match could be: a data URL holds `64,` (of `;base64,` in any case),
    # a URL `://`, a base64 run 100 base64 bytes in a row. Most text holds none and costs a few µs.
    text = inline_images(text)
    if "://" in text:
        text = URL.sub(_bare_url, text)
    if BASE64_LEAST in text.encode("utf-8", "replace").translate(BASE64_BYTES):
        text = BASE64.sub(_base64_run, text)
    return text


def estimate(text: str) -> int:
    """Tokens in `text`, erring high (EST-1): learned errors correct the windows, not this."""
    if not text:
        return 0
    return max(1, int(len(text) / 4 * 1.1))


def request_estimate(system: str, prompt: str, images: int) -> int:
    """Tokens a request needs (EST-1, PNL-13): its text plus 2,500 per valid image."""
    return estimate((system + "\n\n" + prompt).strip()) + IMAGE_TOKENS * images

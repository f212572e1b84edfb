"""Endpoint keys (KEY-2..8): llm's own `keys.json`, overlaid by `BENCHWARMERS_KEY_<NAME>` variables.

Secrets live only in llm's user folder or the environment. Nothing here prints,
logs or returns a secret except `key()`/`keys()` to the caller that sends it.

Text that may echo a secret is written down through `clean()`, the one place for
the order: known keys hidden, then images and URL credentials redacted, then cut.
Text that goes back to a caller (an answer, a streamed piece, an upstream's error) goes
through `hide()`, or `Hider` when it comes in pieces (TM-9, issue 29 item 2): an upstream
that echoes the Authorization header it was sent must not hand its key to a gateway key's holder.
"""

import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import fileio, images, paths, settings
from .errors import Unusable

ENV_PREFIX = "BENCHWARMERS_KEY_"
MARK = "***"
SHORTEST = 8  # a secret shorter than this is not hidden: it would blank out ordinary words
# A gateway key (`server.gatekeys`: `bwk_` + token_urlsafe(32)). The bench keeps only their hashes, so every
# string of this shape is hidden; one pattern, run from the literal `bwk_`, so in linear time.
GATEWAY_KEY = re.compile(r"bwk_[A-Za-z0-9_-]{43}")
GATEWAY_KEY_BEGUN = re.compile(r"b(?:w(?:k(?:_[A-Za-z0-9_-]{0,42})?)?)?\Z")  # the start of one ending a text
BEGUN_SPAN = 46  # the longest such start: `bwk_` and 42 more
CLEAN_SPAN = 16  # `clean(text, n)` cleans only the first 16·n characters (room for what redaction takes out)


def store_path() -> Path:
    return paths.llm_dir() / "keys.json"


def stored() -> dict[str, str]:
    """The key store as written (KEY-2): `{name: secret}`, `{}` when missing or unreadable."""
    data = fileio.read_json(store_path(), comments=False)
    return {k: v for k, v in data.items() if isinstance(v, str)}


def env_keys() -> dict[str, str]:
    """Keys from the environment (KEY-3): `BENCHWARMERS_KEY_MY_HUB` names `my-hub`."""
    return {name.lower().replace("_", "-"): value for name, value in settings.family(ENV_PREFIX).items()}


def keys() -> dict[str, str]:
    """Stored keys overlaid by environment keys; the environment wins (KEY-4)."""
    merged = stored()
    merged.update(env_keys())
    return merged


def key(name: str) -> str:
    """The secret for key name `name`, or `""`."""
    if not name:
        return ""
    return keys().get(name, "")


def is_set(name: str) -> bool:
    return bool(key(name))


def _change_store(change: Callable[[dict[str, Any]], object]) -> None:
    """A locked read-change-write of keys.json (KEY-5, LOCK-2/3), written 0600.

    A store that exists but is not a JSON object is refused, not replaced: reading it
    as `{}` and writing back would throw away every other secret in it (the spec is
    silent on writers here; this is EP-1's rule for endpoints.json applied to keys).
    """
    where = store_path()
    with fileio.lock(where):
        try:
            data = json.loads(where.read_text(encoding="utf-8") or "{}")  # a blank file holds nothing to lose
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError, RecursionError) as exc:
            raise Unusable(f"{where} cannot be read ({type(exc).__name__}); fix or move it, then retry") from None
        if not isinstance(data, dict):
            raise Unusable(f"{where} is not a JSON object of keys; fix or move it, then retry")
        change(data)
        fileio.write_atomic(where, fileio.dumps(data), mode=0o600)


def set_key(name: str, value: str) -> None:
    """Store one key (KEY-5): only the stored set plus this one (never env keys), locked and atomic.
    Callers: the endpoint dialog and `init --endpoint` (a typed key, a hub's admin key), Connect and renewal
    (a sign-in's token and its `.refresh`)."""
    _change_store(lambda data: data.__setitem__(name, value))


def delete_key(name: str) -> None:
    """Take one key out of the store (KEY-5).
    Only the tests call it: removing an endpoint keeps its key in the store (dashboard.md EP-8)."""
    _change_store(lambda data: data.pop(name, None))


def admin_key(own: str, admin: str = "", fallback: bool = True) -> str:
    """A hub's admin key (KEY-8) from its endpoint's key names: `admin` if given, else `<own>-admin`; else the
    endpoint's own key (never with `fallback=False`: CLI Proxy API bans an address after refused keys). The hub
    adapters call it."""
    name = admin or (f"{own}-admin" if own else "")
    secret = key(name)
    if secret:
        return secret
    return key(own) if fallback else ""


def names() -> list[str]:
    """Key names only, for listings that must never show a secret."""
    return sorted(keys())


def secrets() -> list[str]:
    """Every known secret worth hiding (KEY-7, issue 29 item 2): the endpoints' keys and sign-in tokens (the
    key store and `BENCHWARMERS_KEY_<NAME>`), the admin token and the gateway key this process sends (the
    `bench` commands'). Longest first, so a key that contains another is hidden whole; secrets under
    SHORTEST characters are left out."""
    found = {*keys().values(), *(settings.env(name).strip() for name in ("BENCHWARMERS_ADMIN_TOKEN",
                                                                         "BENCHWARMERS_KEY"))}
    return sorted({s for s in found if len(s) >= SHORTEST}, key=len, reverse=True)


def hide(text: str, mark: str = MARK, known: Iterable[str] | None = None) -> str:
    """`text` with every known secret (`known`, else `secrets()`) and every gateway key replaced by `mark`
    (KEY-7): an upstream may echo the key it was sent. Hide before any cut: a cut key is no longer a known
    secret."""
    for secret in secrets() if known is None else known:
        text = text.replace(secret, mark)
    return GATEWAY_KEY.sub(mark, text) if "bwk_" in text else text


def hide_all(value: object, known: Sequence[str] | None = None) -> Any:
    """`value` (JSON: a dict, a list, a string, a number) with `hide()` applied to every string in it, keys
    included; a new object, the one given untouched."""
    known = secrets() if known is None else known
    if isinstance(value, str):
        return hide(value, known=known)
    if isinstance(value, dict):
        return {hide(k, known=known): hide_all(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [hide_all(v, known) for v in value]
    return value


def _begun(text: str, secret: str) -> int:
    """Where the longest end of `text` that is the start of `secret` (but not all of it) begins; `len(text)`
    when none is. An end of SHORTEST characters or more holds the secret's first SHORTEST, so only where
    they stand is looked at; shorter ends are compared one by one."""
    head = secret[:SHORTEST]
    at = text.find(head, max(0, len(text) - len(secret) + 1))
    while at != -1:
        if secret.startswith(text[at:]):
            return at
        at = text.find(head, at + 1)
    for size in range(min(SHORTEST - 1, len(text)), 0, -1):
        if secret.startswith(text[-size:]):
            return len(text) - size
    return len(text)


def _split(text: str, cut: int, known: Iterable[str]) -> int:
    """`cut` moved back to the start of any whole secret or gateway key in `text` it would split, until it splits
    none: which of two overlapping secrets is hidden may still depend on what comes after the cut."""
    moved = True
    while moved:
        moved = False
        for match in GATEWAY_KEY.finditer(text, max(0, cut - BEGUN_SPAN), cut + BEGUN_SPAN):
            if match.start() < cut < match.end():
                cut, moved = match.start(), True
        for secret in known:
            at = text.find(secret, max(0, cut - len(secret) + 1), cut + len(secret) - 1)
            if at != -1 and at < cut:
                cut, moved = at, True
    return cut


class Hider:
    """`hide()` for text that comes in pieces (a stream), so that a secret split across two pieces is hidden
    too: `feed(piece)` gives what may go out now, hidden, and holds back the end that could be the start of a
    secret or a gateway key (at most the longest one's length, usually nothing); `end()` gives what is held,
    hidden. What goes out adds up to `hide()` of the whole text."""

    def __init__(self, known: Sequence[str] | None = None) -> None:
        self.known = secrets() if known is None else known
        self.held = ""

    def feed(self, piece: str) -> str:
        text = self.held + piece
        found = GATEWAY_KEY_BEGUN.search(text, max(0, len(text) - BEGUN_SPAN))
        cut = min([_begun(text, secret) for secret in self.known] + [found.start() if found else len(text)])
        cut = _split(text, cut, self.known)
        self.held = text[cut:]
        return hide(text[:cut], known=self.known)

    def end(self) -> str:
        held, self.held = self.held, ""
        return hide(held, known=self.known)


def clean(text: str, limit: int | None = None, last: bool = False, known: Iterable[str] | None = None) -> str:
    """`text` fit to be written down (KEY-7, IMG-7, IMG-8, SEAT-3): every known secret hidden (`known` as for
    `hide()`), then inline images, URL queries and user:password redacted, then `cut()` to `limit` characters
    when given. In that order: a cut key is no longer a known secret, nor a cut URL a URL."""
    if limit is not None:
        # only the part that can show is cleaned (a prompt may be a megabyte, and the offload task is made
        # before any seat is asked); this cut too drops the word it splits, so it keeps no piece of a secret.
        # Inline images go first (one linear scan): cut, a data URL would show as `…`, not its placeholder
        text = cut(images.inline_images(text), limit * CLEAN_SPAN, last)
    text = images.redact(hide(text, known=known))
    return text if limit is None else cut(text, limit, last)


# A word as a cut sees one: a run that could be a key or a URL with user:password (IMG-7's URL run).
WORD = re.compile(r"[^\s\"'<>\\]*")


def cut(text: str, limit: int, last: bool = False) -> str:
    """The first `limit` characters of `text` (the last ones with `last`), a word the cut splits given up
    as `…`: it may be part of a secret no one knows, or of a URL whose user:password redaction could no
    longer recognise (KEY-7, IMG-8). Hide and redact first; this only keeps them from being undone."""
    if len(text) <= limit:
        return text
    if last:
        kept = text[-limit:]
        if WORD.fullmatch(text[-limit - 1] + kept[0]):  # both sides of the cut in one word
            kept = "…" + kept[_word(kept):]
        return kept
    kept = text[:limit]
    if WORD.fullmatch(kept[-1] + text[limit]):
        kept = kept[:limit - _word(kept[::-1])] + "…"
    return kept


def _word(text: str) -> int:
    """The length of the word `text` starts with (WORD matches at least the empty one)."""
    found = WORD.match(text)
    return found.end() if found else 0

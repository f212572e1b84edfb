"""Endpoint keys (KEY-2..8): llm's own `keys.json`, overlaid by `BENCHWARMERS_KEY_<NAME>` variables.

Secrets live only in llm's user folder or the environment. Nothing here prints,
logs or returns a secret except `key()`/`keys()` to the caller that sends it.

Text that may echo a secret is written down through `clean()`, the one place for
the order: known keys hidden, then images and URL credentials redacted, then cut.
"""

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import fileio, images, paths

ENV_PREFIX = "BENCHWARMERS_KEY_"
CLEAN_SPAN = 16  # `clean(text, n)` cleans only the first 16·n characters (room for what redaction takes out)


def store_path() -> Path:
    return paths.llm_dir() / "keys.json"


def stored() -> dict[str, str]:
    """The key store as written (KEY-2): `{name: secret}`, `{}` when missing or unreadable."""
    data = fileio.read_json(store_path(), comments=False)
    return {k: v for k, v in data.items() if isinstance(v, str)}


def env_keys() -> dict[str, str]:
    """Keys from the environment (KEY-3): `BENCHWARMERS_KEY_MY_HUB` names `my-hub`."""
    found = {}
    for name in os.environ:  # names only: every panel's call log asks, and decoding each value costs more
        upper = name.upper()
        if upper.startswith(ENV_PREFIX) and len(upper) > len(ENV_PREFIX) and os.environ[name]:
            found[name[len(ENV_PREFIX):].lower().replace("_", "-")] = os.environ[name]
    return found


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
            raise RuntimeError(f"{where} cannot be read ({type(exc).__name__}); fix or move it, then retry") from None
        if not isinstance(data, dict):
            raise RuntimeError(f"{where} is not a JSON object of keys; fix or move it, then retry")
        change(data)
        fileio.write_atomic(where, fileio.dumps(data), mode=0o600)


def set_key(name: str, value: str) -> None:
    """Store one key (KEY-5): only the stored set plus this one (never env keys), locked and atomic.
    No caller yet but the tests: the dashboard's endpoint dialog (a typed key) will call it."""
    _change_store(lambda data: data.__setitem__(name, value))


def delete_key(name: str) -> None:
    """Take one key out of the store (KEY-5).
    No caller yet but the tests: the dashboard's endpoint dialog will call it."""
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
    """Every known secret worth hiding (KEY-7), longest first, so a key that contains another is hidden
    whole; secrets under 8 characters are left out (they would blank out ordinary words)."""
    return sorted({s for s in keys().values() if len(s) >= 8}, key=len, reverse=True)


def hide(text: str, mark: str = "***", known: Iterable[str] | None = None) -> str:
    """`text` with every known secret (`known`, else `secrets()`) replaced by `mark` (KEY-7): an upstream
    may echo the key it was sent. Hide before any cut: a cut key is no longer a known secret."""
    for secret in secrets() if known is None else known:
        text = text.replace(secret, mark)
    return text


def clean(text: str, limit: int | None = None, last: bool = False, known: Iterable[str] | None = None) -> str:
    """`text` fit to be written down (KEY-7, IMG-7, IMG-8, SEAT-3): every known secret hidden (`known` as for
    `hide()`), then inline images, URL queries and user:password redacted, then `cut()` to `limit` characters
    when given. In that order: a cut key is no longer a known secret, nor a cut URL a URL."""
    if limit is not None:
        # only the part that can show is cleaned (a prompt may be a megabyte, and the offload task is made
        # before any seat is asked); this cut too drops the word it splits, so it keeps no piece of a secret
        text = cut(text, limit * CLEAN_SPAN, last)
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

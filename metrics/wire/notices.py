"""Provider notices: a credit or quota message delivered as a model's answer (PN-1..3).

Some providers answer a 200 whose text is "Insufficient credits ..." instead of
an error. Such a reply is not the model's work. Only short texts count (PN-2): a
real answer that discusses quotas is long.

The gateway turns a notice into a seat error (PN-3); the client only flags it in
its ledger line (models.md improvement 15) and returns the reply unchanged.
"""

from ..core import keys

MAX_LENGTH = 400
EXCERPT = 200

# In order: the first one contained in the text is the one reported.
PHRASES = (
    "run out of credits",
    "out of credits",
    "insufficient credits",
    "credit balance",
    "upgrade your plan",
    "upgrade to continue",
    "upgrade your account",
    "exceeded your current quota",
    "quota has been exhausted",
    "daily limit reached",
    "you have reached your",
    "free tier limit",
    "please add credits",
    "top up your",
)


def notice(text: str | None) -> str:
    """The first notice phrase in a short reply (case-insensitive), or `""` for a real answer."""
    stripped = (text or "").strip()
    if not stripped or len(stripped) > MAX_LENGTH:
        return ""
    lowered = stripped.lower()
    for phrase in PHRASES:
        if phrase in lowered:
            return phrase
    return ""


def as_error(text: str) -> str:
    """The seat error for a notice (PN-3), or `""` when `text` is not one; the answer quoted as written down
    (`keys.clean`: a notice may echo a key or a signed URL)."""
    phrase = notice(text)
    if not phrase:
        return ""
    return f"provider notice in a success reply ({phrase}): {keys.clean(text.strip(), EXCERPT)}"

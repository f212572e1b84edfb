"""How the readers of the data folder's files turn what a person may have written by hand into typed fields.

Each file has one reader, in the module that owns the file, returning a frozen dataclass (or a mapping of
them): `collections.Collection` and `collections.Settings`, `offload.Line`, `endpoints.Endpoint`,
`registry.Registration` and `registry.DecisionModel`, `roster.Retired`. A value of the wrong type reads as
absent (these helpers), so no caller meets a list where text belongs; where the contract says more (a refusal
naming the field, a default said on /health) the reader says it. `text()` is the forms' coercer: what the
dashboard's writers take from a request body.
"""

from collections.abc import Mapping
from typing import Any


def text(value: object, default: str = "") -> str:
    """A form field as trimmed text; `default` when it is not a string."""
    return value.strip() if isinstance(value, str) else default


def string(value: object) -> str:
    """A file's field that holds text, as written; `""` when it holds anything else."""
    return value if isinstance(value, str) else ""


def strings(value: object) -> tuple[str, ...]:
    """The strings of a list field, in order; `()` when the field is no list."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def mapping(value: object) -> Mapping[str, Any]:
    """An object field as it is; `{}` when the field is no object. Shared with the reader's cache: never mutated."""
    return value if isinstance(value, dict) else {}

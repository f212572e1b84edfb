"""The shapes of what the routes take and answer, as JSON Schema (issue 33): the pieces the route table's rows
and each API's `Format` name, which `server.openapi` puts into the `/openapi.json` document.

A shape here says what a client may rely on: the fields always present are `required`, the ones sometimes
present are listed as properties, and an object may carry more (a reply grows a field without breaking a
client). `obj(always, **sometimes)` builds one; `infer(value)` reads one off a value the code produced (an
error body), so a shape the code makes itself is never written down twice.
"""

from collections.abc import Mapping
from typing import Any

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
ANY: Schema = {}
OBJ: Schema = {"type": "object"}
STRS: Schema = {"type": "array", "items": STR}


def obj(always: Mapping[str, Schema] | None = None, /, **sometimes: Schema) -> Schema:
    """An object whose `always` fields are always there (`required`) and whose `sometimes` ones may be."""
    always = dict(always or {})
    schema: Schema = {"type": "object", "properties": {**always, **sometimes}}
    if always:
        schema["required"] = list(always)
    return schema


def arr(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def maybe(schema: Schema) -> Schema:
    """`schema` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def either(*schemas: Schema) -> Schema:
    return {"anyOf": list(schemas)}


def described(schema: Schema, text: str) -> Schema:
    return {**schema, "description": text}


def infer(value: Any) -> Schema:
    """The shape of `value`: its types, every key of an object required (a body the code builds whole)."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return NUM
    if isinstance(value, str):
        return STR
    if isinstance(value, list):
        return arr(infer(value[0])) if value else arr(ANY)
    if isinstance(value, dict):
        return obj({key: infer(item) for key, item in value.items()})
    return {"type": "null"}


# -- the dashboard's replies (RESP-1): `ok` on every one, `errors` beside it where something may be said

OK = obj({"ok": BOOL}, errors=STRS)


def view(**fields: Schema) -> Schema:
    """A dashboard reply: `ok` (and `errors`), then the view's own fields (absent when it says why it has none)."""
    return obj({"ok": BOOL}, errors=STRS, **fields)


# -- what several gateway routes share

# FMT-10: a falsy `model`, `with` or `bench` reads as none
FALSY: Schema = {"anyOf": [{"enum": [None, False, 0, ""]}, {"type": "array", "maxItems": 0},
                           {"type": "object", "maxProperties": 0}]}


def or_none(schema: Schema, text: str) -> Schema:
    """`schema`, or any falsy value, which reads as none (FMT-10)."""
    return described(either(schema, FALSY), text + "; any falsy value reads as none")


QUESTION = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"  # what the examples ask the demo
MODEL = or_none(STR, "a collection, `bench/<name>`, with `:merged`, `:all` or `:route` to choose the reply")
MESSAGE = obj({"role": STR}, content=ANY)
BENCH_ASK = or_none(obj({}, reply={"enum": ["all", "merged", "route"]}),
                    "the bench's own options (FMT-10): `reply`, and `with` beside it names nominees")
STREAM = described(ANY, "truthy: the reply is the API's stream")
SEAT = obj({"call": STR, "seat": STR, "alias": STR, "status": STR}, seconds=NUM, answer=STR)
PANEL_BENCH = described(obj({"panel": STR, "collection": STR, "seats": arr(SEAT)}, shape=STR, notes=STRS),
                        "who sat the panel: each seat's call id, which `POST /bench/verdict` judges")
ROUTE_BENCH = described(obj({"collection": STR, "reply": STR, "call": STR, "alias": STR}, conversation=STR,
                            turn=INT, verdict=STR),
                        "route mode (§11): the member that answered and the turn's call id, which a verdict judges")
BENCH = either(PANEL_BENCH, ROUTE_BENCH)
COLLECTION_ROW = obj({"id": STR, "object": STR, "owned_by": STR}, description=STR, members=STRS, reply=STR)
GEMINI_MODEL = obj({"name": STR}, baseModelId=STR, displayName=STR, supportedGenerationMethods=STRS)
LISTING = obj({"object": STR, "data": arr(COLLECTION_ROW)}, models=arr(GEMINI_MODEL))
GEMINI_MODELS = obj({"models": arr(GEMINI_MODEL)})
OLLAMA_TAGS = obj({"models": arr(obj({"name": STR, "model": STR}, modified_at=STR, size=INT, digest=STR,
                                     details=OBJ))})
OLLAMA_VERSION = obj({"version": STR})
OLLAMA_CARD = obj({}, modelfile=STR, parameters=STR, template=STR, details=OBJ, model_info=OBJ,
                  capabilities=STRS)
HEALTH = obj({"ok": BOOL}, problems=STRS, data_folder=obj({"writable": BOOL, "problem": STR}),
             store=described(obj({"kind": STR, "answers": BOOL}, problem=STR),
                             "on Postgres only: whether its server answers, and if not why (HEALTH-1)"))
TOKEN_COUNT = obj({"input_tokens": INT})
GEMINI_COUNT = obj({"totalTokens": INT})
RECORD = obj({"collection": STR, "task": STR, "aliases": OBJ})
BOARD_ROW = obj({"alias": STR}, rating=NUM, low=NUM, high=NUM, panels=INT, wins=NUM)
BOARD = obj({"collection": STR, "shape": STR, "panels": INT, "comparisons": INT, "models": arr(OBJ)},
            resamples=INT, level=NUM, unranked=arr(ANY), unfitted=arr(OBJ), left_out=OBJ, source=STR,
            rankers=arr(OBJ))
VERDICT_ASK = obj({"call": described(STR, "a seat's call id (`bench.seats[].call` of a panel reply)"),
                   "useful": BOOL}, note=STR, real=STRS, false=STRS)
VERDICT = obj({"ok": BOOL, "recorded": OBJ})
PENDING_ASK = obj({"calls": described(STRS, "call ids, at most 1,000")})
PENDING = obj({"pending": STRS})
COUNT_ASK = obj({}, model=MODEL, messages=arr(MESSAGE), system=ANY)
OLLAMA_SHOW_ASK = described(either(obj({"model": STR}), obj({"name": STR})),
                            "`model`, or `name` (the older spelling) when `model` is absent")
GEMINI_COUNT_ASK = obj({}, contents=arr(OBJ))
# MCP-5: any body is taken and answered in JSON-RPC's terms (-32600 for one that is no request, as a 200)
JSONRPC = described(ANY, "one JSON-RPC message (`jsonrpc`, `id`, `method`, `params`); anything else is answered "
                         "with JSON-RPC's invalid request (MCP-5)")
JSONRPC_REPLY = obj({"jsonrpc": STR}, id=ANY, result=ANY, error=obj({"code": INT, "message": STR}))
MCP_EVENT = described(JSONRPC_REPLY, "MCP-19: `event: message`, a progress notification (or a keep-alive comment) "
                                    "every 10 s, then the tool's reply")
MCP_GET = obj({"error": obj({"message": STR})})
OPENAPI = obj({"openapi": STR, "info": OBJ, "paths": OBJ}, components=OBJ)

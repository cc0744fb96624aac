"""Checks tool definitions in each provider's form against the providers' own Python
SDKs and their documented rules; run by `tests/provider_oracles.rs`.

    python oracle.py FORMS.json

FORMS.json is a list of `{"key", "canonical", "forms": {"openai", "anthropic",
"gemini", "mcp", "openai-strict-off"}}`, each form being `providers::definition(...)` of
the tool (and `openai-strict-off` OpenAI's with strict mode off, `openai_non_strict`, as
the clients without strict mode send it). Prints
one JSON document: `{"verdicts": [{"key", "provider", "ok", "advisory", "reasons"}],
"classes": {"provider | class": tools}, "versions": {...}}`.

A reason reads `class | detail`: the class groups the failures (see `classes`), the
detail names the place in the schema (`/properties/x/items`) and the source of the
rule. Verdicts with `advisory: true` are informative (Anthropic's strict-mode
transformer, what a form loses); the Rust test asserts only the others.

Every reason names the SDK function or the documented rule it comes from.
"""

from __future__ import annotations

import copy
import importlib.metadata as metadata
import json
import logging
import re
import sys
import warnings
from collections import Counter
from typing import Any, Callable, Iterator

import jsonschema
import pydantic

warnings.simplefilter("ignore")
logging.disable(logging.WARNING)

# ---------------------------------------------------------------------------------
# Walking schemas
# ---------------------------------------------------------------------------------

# Keywords whose value is a schema, a list of schemas, or a map of schemas.
SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
             "propertyNames", "unevaluatedItems", "unevaluatedProperties")
SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties",
                  "dependentSchemas")


def nodes(schema: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every schema node of a JSON Schema with its JSON pointer, `$defs` included."""
    yield path, schema
    if not isinstance(schema, dict):
        return
    for key in SUBSCHEMA:
        if key in schema and isinstance(schema[key], (dict, bool)):
            yield from nodes(schema[key], f"{path}/{key}")
    for key in SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield from nodes(sub, f"{path}/{key}/{i}")
    for key in SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield from nodes(sub, f"{path}/{key}/{escape(name)}")


def gemini_nodes(schema: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every node of a Gemini `Schema` (OpenAPI subset: items, properties, anyOf)."""
    yield path, schema
    if not isinstance(schema, dict):
        return
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from gemini_nodes(schema[key], f"{path}/{key}")
    if isinstance(schema.get("anyOf"), list):
        for i, sub in enumerate(schema["anyOf"]):
            yield from gemini_nodes(sub, f"{path}/anyOf/{i}")
    for key in ("properties", "defs"):
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield from gemini_nodes(sub, f"{path}/{key}/{escape(name)}")


def escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def types_of(node: dict) -> list[str]:
    t = node.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return []


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Where `b` differs from `a`, as JSON pointers with both values (first 6)."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b:
                out.append(f"{path}/{escape(k)} removed")
            elif k not in a:
                out.append(f"{path}/{escape(k)} added: {short(b[k])}")
            else:
                out.extend(diff(a[k], b[k], f"{path}/{escape(k)}"))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(diff(x, y, f"{path}/{i}"))
    elif a != b or type(a) is not type(b) and not (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
    ):
        out.append(f"{path or '/'}: {short(a)} -> {short(b)}")
    return out[:6]


def lower_types(value: Any) -> Any:
    """`value` with every string `type` lowercased."""
    if isinstance(value, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else lower_types(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [lower_types(v) for v in value]
    return value


def short(value: Any, n: int = 80) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= n else text[: n - 3] + "..."


def pydantic_errors(e: pydantic.ValidationError, limit: int = 6) -> list[str]:
    out = []
    for err in e.errors()[:limit]:
        loc = "/" + "/".join(str(x) for x in err["loc"])
        out.append(f"{loc}: {err['msg']} ({err['type']})")
    if len(e.errors()) > limit:
        out.append(f"... {len(e.errors()) - limit} more")
    return out


def check_dialect(schema: Any, provider: str) -> list[str]:
    """The form must itself be valid JSON Schema 2020-12 (every provider takes JSON Schema)."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        where = "/" + "/".join(str(p) for p in e.absolute_path)
        return [f"not valid JSON Schema 2020-12 | {where}: {e.message} (jsonschema "
                f"Draft202012Validator.check_schema)"]
    return []


# ---------------------------------------------------------------------------------
# OpenAI (Chat Completions function tool, strict: true)
# ---------------------------------------------------------------------------------

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Structured Outputs, "Supported schemas": keywords strict mode does not support.
OPENAI_UNSUPPORTED = ("oneOf", "allOf", "not", "if", "then", "else", "dependentRequired",
                      "dependentSchemas", "patternProperties", "propertyNames",
                      "unevaluatedProperties", "unevaluatedItems", "contains", "minContains",
                      "maxContains", "minProperties", "maxProperties", "uniqueItems",
                      "prefixItems")
OPENAI_FORMATS = ("date-time", "time", "date", "duration", "email", "hostname", "ipv4",
                  "ipv6", "uuid")
TYPE_BEARING = ("type", "$ref", "anyOf", "enum", "const")
TOP_LEVEL_REF = re.compile(r"^#(/(\$defs|definitions)/[^/]+)?$")


def check_openai(tool: dict, which: str = "openai") -> tuple[list[str], list[str]]:
    from openai.lib._pydantic import _ensure_strict_json_schema
    from openai.types.chat import ChatCompletionFunctionToolParam

    form = tool["forms"][which]
    reasons: list[str] = []
    try:
        pydantic.TypeAdapter(ChatCompletionFunctionToolParam).validate_python(form)
    except pydantic.ValidationError as e:
        reasons += [f"openai SDK type | {m} (openai.types.chat.ChatCompletionFunctionToolParam)"
                    for m in pydantic_errors(e)]
    function = form.get("function", {})
    name = function.get("name", "")
    if not OPENAI_NAME.match(name):
        reasons.append(f"function name | {name!r} is not [a-zA-Z0-9_-]{{1,64}} "
                       "(openai.types.shared_params.FunctionDefinition.name)")
    params = function.get("parameters")
    if not isinstance(params, dict):
        return reasons + ["no parameters | `parameters` is not an object"], []
    if params.get("type") != "object":
        reasons.append(f"parameters not an object schema | root type {short(params.get('type'))}: "
                       "the API answers 400 \"schema must be a JSON Schema of 'type: \"object\"'\" "
                       "(FunctionDefinition.parameters)")
    if function.get("strict") is not True:
        # A non-strict tool: any JSON Schema of an object goes, and the model's
        # arguments are not held to it (reported as an advisory).
        advisory = ["not strict | `strict` is not true: the arguments are not held to "
                    "the schema (openai.types.shared_params.FunctionDefinition.strict)"]
        return reasons + check_dialect(params, "openai"), advisory

    # 1. The SDK's own strict transformer leaves a strict form as it is.
    mine = copy.deepcopy(params)
    try:
        fixed = _ensure_strict_json_schema(mine, path=(), root=mine)
        changes = diff(params, fixed)
        if changes:
            reasons += [f"openai SDK changes a strict form | {c} "
                        "(openai.lib._pydantic._ensure_strict_json_schema)" for c in changes]
    except Exception as e:  # noqa: BLE001 - any raise is a verdict
        reasons.append(f"openai SDK raises | {type(e).__name__}: {e} "
                       "(openai.lib._pydantic._ensure_strict_json_schema)")

    # 2. pydantic-ai's judgment of strict compatibility, and its strict walk.
    try:
        try:
            from pydantic_ai.profiles.openai import _OpenAIJsonSchemaTransformer as T
        except ImportError:  # pragma: no cover
            from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer as T
        t = T(copy.deepcopy(params), strict=None)
        t.walk()
        if not t.is_strict_compatible:
            reasons.append("pydantic-ai: not strict-compatible | "
                           "_OpenAIJsonSchemaTransformer(strict=None).is_strict_compatible "
                           "is False (pydantic_ai/profiles/openai.py)")
        T(copy.deepcopy(params), strict=True).walk()
    except Exception as e:  # noqa: BLE001
        reasons.append(f"pydantic-ai raises | {type(e).__name__}: {e} "
                       "(pydantic_ai/profiles/openai.py, strict=True)")

    # 3. The documented rules.
    reasons += openai_rules(params)
    reasons += check_dialect(params, "openai")
    return reasons, []


def check_openai_strict_off(tool: dict) -> tuple[list[str], list[str]]:
    """OpenAI's form with strict mode off, as the clients without strict mode send every
    tool: a valid function tool, `strict` false, its parameters an object schema."""
    reasons, _ = check_openai(tool, "openai-strict-off")
    strict = tool["forms"]["openai-strict-off"].get("function", {}).get("strict")
    if strict is not False:
        reasons.append(f"strict not false | the form without strict mode says `strict`: "
                       f"{short(strict)}")
    return reasons, []


def openai_rules(params: dict) -> list[str]:
    out: list[str] = []
    src = "(OpenAI Structured Outputs, supported schemas)"
    if params.get("type") != "object":
        out.append(f"root not an object | root type is {short(params.get('type'))} {src}")
    if "anyOf" in params:
        out.append(f"anyOf at the root | the root must not be anyOf {src}")
    enum_values = 0
    total_properties = 0
    for path, node in nodes(params):
        where = path or "/"
        if isinstance(node, bool) and not path.endswith("/additionalProperties"):
            out.append(f"untyped schema | {where}: boolean schema `{str(node).lower()}` {src}")
            continue
        if not isinstance(node, dict):
            continue
        for key in OPENAI_UNSUPPORTED:
            if key in node:
                out.append(f"unsupported keyword {key} | {where} {src}")
        if "default" in node:
            out.append(f"keyword default | {where}: `default` is not allowed in strict mode "
                       "(pydantic_ai/profiles/openai.py OpenAIJsonSchemaTransformer.transform)")
        if not any(k in node for k in TYPE_BEARING):
            out.append(f"untyped schema | {where}: no type, anyOf, $ref, enum or const {src}")
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not TOP_LEVEL_REF.match(ref):
                out.append(f"$ref not to a top-level definition | {where}: {ref} "
                           "(pydantic_ai/profiles/openai.py _TOP_LEVEL_DEFINITION_REF)")
            if len(node) > 1:
                out.append(f"$ref with siblings | {where}: {sorted(k for k in node if k != '$ref')} "
                           "(openai.lib._pydantic._ensure_strict_json_schema unravels them)")
        types = types_of(node)
        if "object" in types or "properties" in node:
            props = node.get("properties")
            if node.get("additionalProperties") is not False:
                out.append(f"object without additionalProperties:false | {where}: "
                           f"{short(node.get('additionalProperties'))} {src}")
            if not isinstance(props, dict):
                out.append(f"object without properties | {where} {src}")
            else:
                total_properties += len(props)
                required = node.get("required")
                if not isinstance(required, list) or sorted(required) != sorted(props):
                    missing = sorted(set(props) - set(required or []))
                    out.append(f"not every property required | {where}: {missing} {src}")
        if "array" in types:
            items = node.get("items")
            if not (isinstance(items, dict) and any(k in items for k in TYPE_BEARING)):
                out.append(f"array without typed items | {where}: items {short(items)} {src}")
        fmt = node.get("format")
        if fmt is not None and fmt not in OPENAI_FORMATS:
            out.append(f"format not supported | {where}: {fmt!r} "
                       "(pydantic_ai/profiles/openai.py _STRICT_COMPATIBLE_STRING_FORMATS)")
        if isinstance(node.get("enum"), list):
            enum_values += len(node["enum"])
    depth = object_depth(params)
    if depth > 10:
        out.append(f"nesting too deep | {depth} levels of objects, at most 10 {src}")
    if total_properties > 5000:
        out.append(f"too many properties | {total_properties}, at most 5000 {src}")
    if enum_values > 1000:
        out.append(f"too many enum values | {enum_values}, at most 1000 {src}")
    return out


def object_depth(schema: Any, depth: int = 0) -> int:
    """Levels of objects with properties along properties, items and anyOf, not following $ref."""
    if not isinstance(schema, dict):
        return depth
    here = depth + 1 if isinstance(schema.get("properties"), dict) else depth
    children = list(schema.get("properties", {}).values()) if isinstance(
        schema.get("properties"), dict) else []
    children += [schema.get("items")] + list(schema.get("anyOf", []) or [])
    best = here
    for child in children:
        best = max(best, object_depth(child, here))
    for defs in ("$defs", "definitions"):
        for sub in (schema.get(defs) or {}).values():
            best = max(best, object_depth(sub, 0))
    return best


# ---------------------------------------------------------------------------------
# Anthropic (Messages API tool)
# ---------------------------------------------------------------------------------

ANTHROPIC_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def check_anthropic(tool: dict) -> tuple[list[str], list[str]]:
    from anthropic.types import ToolParam
    from anthropic.types.tool_param import InputSchemaTyped

    form = tool["forms"]["anthropic"]
    reasons: list[str] = []
    try:
        pydantic.TypeAdapter(ToolParam).validate_python(form)
    except pydantic.ValidationError as e:
        reasons += [f"anthropic SDK type | {m} (anthropic.types.ToolParam)"
                    for m in pydantic_errors(e)]
    name = form.get("name", "")
    if not ANTHROPIC_NAME.match(name):
        reasons.append(f"tool name | {name!r} is not [a-zA-Z0-9_-]{{1,64}} (Anthropic tool use)")
    schema = form.get("input_schema")
    if not isinstance(schema, dict):
        return reasons + ["no input_schema | `input_schema` is not an object"], []
    try:
        pydantic.TypeAdapter(InputSchemaTyped).validate_python(schema)
    except pydantic.ValidationError as e:
        reasons += [f"input_schema root | {m} (anthropic.types.tool_param.InputSchemaTyped: "
                    "type is Literal['object'])" for m in pydantic_errors(e)]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            reasons.append(f"{key} at the top level | input_schema does not support oneOf, "
                           "allOf, or anyOf at the top level (API 400, e.g. "
                           "anthropics/claude-code#5319)")
    reasons += check_dialect(schema, "anthropic")

    # Advisory: what `strict: true` would meet (the SDK's transform_schema).
    advisory: list[str] = []
    from anthropic.lib._parse._transform import transform_schema

    try:
        strict = transform_schema(copy.deepcopy(schema))
        moved = [f"{p or '/'}: {n['description'].rsplit(chr(10) * 2, 1)[-1]}"
                 for p, n in nodes(strict)
                 if isinstance(n, dict) and isinstance(n.get("description"), str)
                 and n["description"].endswith("}") and "{" in n["description"]
                 and not _described_in(schema, p, n["description"])]
        advisory += [f"strict would move keywords into descriptions | {m} "
                     "(anthropic.lib._parse._transform.transform_schema)" for m in moved[:6]]
        if any(isinstance(n, dict) and isinstance(n.get("additionalProperties"), dict)
               for _, n in nodes(schema)):
            advisory.append("strict would empty maps | additionalProperties schemas become "
                            "false (anthropic transform_schema; pydantic_ai/providers/"
                            "anthropic.py AnthropicJsonSchemaTransformer warns)")
    except Exception as e:  # noqa: BLE001
        advisory.append(f"strict transform raises | {type(e).__name__}: {e} "
                        "(anthropic.lib._parse._transform.transform_schema)")
    return reasons, advisory


def _described_in(schema: dict, path: str, description: str) -> bool:
    """Whether the original node at `path` already had this description."""
    node: Any = schema
    for part in [p for p in path.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return isinstance(node, dict) and node.get("description") == description


# ---------------------------------------------------------------------------------
# Gemini (FunctionDeclaration with `parameters`, the OpenAPI 3.0 subset)
# ---------------------------------------------------------------------------------

GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$")
GEMINI_PARAM = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
SRC_FD = "(google.genai.types.FunctionDeclaration)"


def check_gemini(tool: dict) -> tuple[list[str], list[str]]:
    from google.genai import types

    form = tool["forms"]["gemini"]
    reasons: list[str] = []
    name = form.get("name", "")
    if not GEMINI_NAME.match(name):
        reasons.append(f"function name | {name!r}: must start with a letter or _, then "
                       f"a-zA-Z0-9_.:- up to 128 {SRC_FD}.name")
    try:
        declaration = types.FunctionDeclaration.model_validate(form)
        sent = declaration.model_dump(mode="json", by_alias=True, exclude_none=True)
        # `Type` is a case-insensitive enum: "object" goes out as "OBJECT".
        changes = diff(lower_types(form), lower_types(sent))
        reasons += [f"google-genai changes the declaration | {c} "
                    f"(FunctionDeclaration.model_validate then model_dump)" for c in changes]
    except pydantic.ValidationError as e:
        reasons += [f"google-genai rejects | {m} {SRC_FD}.model_validate (Schema: extra=forbid)"
                    for m in pydantic_errors(e)]
    params = form.get("parameters")
    json_params = form.get("parametersJsonSchema", form.get("parameters_json_schema"))
    if params is not None and json_params is not None:
        reasons.append(f"parameters and parametersJsonSchema | both given: they are mutually "
                       f"exclusive {SRC_FD}.parameters_json_schema")
    if json_params is not None:
        reasons += gemini_json_schema_rules(json_params)
    if params is None:
        return reasons, gemini_advisory(tool)
    if not isinstance(params, dict):
        return reasons + ["parameters not an object | parameters is not a Schema"], []
    if str(params.get("type", "")).lower() != "object":
        reasons.append(f"parameters not OBJECT | type {short(params.get('type'))} "
                       f"{SRC_FD}.parameters")
    for prop in (params.get("properties") or {}):
        if not GEMINI_PARAM.match(prop):
            reasons.append(f"parameter name | {prop!r}: a letter or _, then a-zA-Z0-9_, up to 64 "
                           f"{SRC_FD}.parameters")
    for path, node in gemini_nodes(params):
        where = path or "/"
        if not isinstance(node, dict):
            continue
        t = node.get("type")
        t = t.lower() if isinstance(t, str) else t
        if t is None and "anyOf" not in node:
            reasons.append(f"schema without type | {where}: no type and no anyOf "
                           "(google.genai.types.Type: TYPE_UNSPECIFIED should not be used)")
        elif t is not None and t not in GEMINI_TYPES:
            reasons.append(f"unknown type | {where}: {short(t)} (google.genai.types.Type)")
        if t == "object" and not node.get("properties"):
            reasons.append(f"OBJECT without properties | {where}: properties should be non-empty "
                           "for OBJECT type (API 400, e.g. agno-agi/agno#2112)")
        if t == "array" and not isinstance(node.get("items"), dict):
            reasons.append(f"ARRAY without items | {where}: items is required for ARRAY "
                           "(google.genai.types.Schema.items; API 400 `items: missing field`)")
        enum = node.get("enum")
        if isinstance(enum, list) and not all(isinstance(v, str) for v in enum):
            reasons.append(f"enum not strings | {where}: {short(enum)} "
                           "(google.genai.types.Schema.enum is list[str])")
        required = node.get("required")
        if isinstance(required, list):
            missing = [r for r in required if r not in (node.get("properties") or {})]
            if missing:
                reasons.append(f"required names no property | {where}: {missing} "
                               "(API 400 `property is not defined`)")
        if node.get("additionalProperties") is not None:
            reasons.append(f"additionalProperties | {where}: not supported by the Gemini "
                           "Developer API (google.genai._transformers."
                           "_raise_for_unsupported_mldev_properties)")
        if "ref" in node or "defs" in node:
            reasons.append(f"ref/defs | {where}: `ref`/`defs` are Vertex-only in practice; "
                           "the SDK inlines $defs itself (google.genai._transformers.process_schema)")
    return reasons, gemini_advisory(tool)


def gemini_json_schema_rules(schema: Any) -> list[str]:
    """`parametersJsonSchema`: an object schema, valid JSON Schema, within the keywords
    google-genai models for Gemini's JSON Schema (`types.JSONSchema`, extra=forbid)."""
    from google.genai import types

    out: list[str] = []
    src = "(google.genai.types.FunctionDeclaration.parameters_json_schema)"
    if not isinstance(schema, dict) or schema.get("type") != "object":
        out.append(f"parametersJsonSchema not an object | root type "
                   f"{short(schema.get('type') if isinstance(schema, dict) else schema)}: the "
                   f"schema must describe an object {src}")
        return out
    out += check_dialect(schema, "gemini")
    try:
        types.JSONSchema.model_validate(schema)
    except pydantic.ValidationError as e:
        out += [f"parametersJsonSchema outside google.genai.types.JSONSchema | {m}"
                for m in pydantic_errors(e)]
    for path, node in nodes(schema):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if isinstance(ref, str) and resolve_pointer(schema, ref) is None:
            out.append(f"$ref does not resolve | {path or '/'}: {ref}")
    return out


def resolve_pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


# Keywords of the canonical schema `types.Schema` can carry (as camelCase).
GEMINI_KEEPABLE = ("minLength", "maxLength", "pattern", "minItems", "maxItems", "minimum",
                   "maximum", "description", "default", "title", "minProperties",
                   "maxProperties")


def gemini_advisory(tool: dict) -> list[str]:
    """What the Gemini form loses of the canonical schema that Gemini's Schema could hold,
    and whether pydantic-ai's own conversion of the canonical schema passes the SDK."""
    from google.genai import types

    out: list[str] = []
    canonical = tool["canonical"]
    declaration = tool["forms"]["gemini"]
    if "parametersJsonSchema" in declaration:
        form = declaration["parametersJsonSchema"]
        have = Counter(k for _, n in nodes(form) if isinstance(n, dict) for k in n)
    else:
        form = declaration.get("parameters") or {}
        have = Counter(k for _, n in gemini_nodes(form) if isinstance(n, dict) for k in n)
    want = Counter(k for _, n in nodes(canonical) if isinstance(n, dict) for k in n
                   if k in GEMINI_KEEPABLE)
    for key, count in sorted(want.items()):
        if have.get(key, 0) < count:
            out.append(f"drops {key} | {count} in the canonical schema, {have.get(key, 0)} in "
                       "the Gemini form (google.genai.types.Schema has it)")
    try:
        from pydantic_ai.profiles.google import GoogleOpenAPISchemaTransformer

        reference = GoogleOpenAPISchemaTransformer(copy.deepcopy(canonical)).walk()
        try:
            types.FunctionDeclaration.model_validate(
                {"name": "f", "parameters": reference})
        except pydantic.ValidationError as e:
            out.append("pydantic-ai's conversion fails too | "
                       + "; ".join(pydantic_errors(e, 2)))
    except Exception as e:  # noqa: BLE001
        out.append(f"pydantic-ai's conversion raises | {type(e).__name__}: {e} "
                   "(pydantic_ai/profiles/google.py GoogleOpenAPISchemaTransformer)")
    return out


# ---------------------------------------------------------------------------------
# MCP (tools/list entry)
# ---------------------------------------------------------------------------------

def check_mcp(tool: dict) -> tuple[list[str], list[str]]:
    import mcp.types
    from mcp_types import _v2025_11_25 as v2025

    form = tool["forms"]["mcp"]
    reasons: list[str] = []
    for model, label in ((mcp.types.Tool, "mcp.types.Tool"), (v2025.Tool, "mcp_types 2025-11-25 Tool")):
        try:
            model.model_validate(form)
        except pydantic.ValidationError as e:
            reasons += [f"mcp SDK rejects | {m} ({label})" for m in pydantic_errors(e)]
    schema = form.get("inputSchema")
    if isinstance(schema, dict):
        reasons += check_dialect(schema, "mcp")
    return reasons, []


# ---------------------------------------------------------------------------------

CHECKS: list[tuple[str, Callable[[dict], tuple[list[str], list[str]]]]] = [
    ("openai", check_openai),
    ("openai-strict-off", check_openai_strict_off),
    ("anthropic", check_anthropic),
    ("gemini", check_gemini),
    ("mcp", check_mcp),
]

ADVISORY_NAMES = {"openai": "openai-nonstrict (advisory)", "anthropic": "anthropic-strict (advisory)",
                  "gemini": "gemini-lossy (advisory)"}

VERSIONS = ("openai", "anthropic", "google-genai", "pydantic-ai-slim", "mcp", "jsonschema",
            "pydantic")


def capped(reasons: list[str], per_class: int = 3) -> list[str]:
    """`reasons` without repeats, at most `per_class` of each class (then a count)."""
    seen: Counter[str] = Counter()
    out: list[str] = []
    for reason in dict.fromkeys(reasons):
        cls = reason.split(" | ", 1)[0]
        seen[cls] += 1
        if seen[cls] <= per_class:
            out.append(reason)
    for cls, n in seen.items():
        if n > per_class:
            out.append(f"{cls} | ... and {n - per_class} more of this class")
    return out


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        tools = json.load(f)
    verdicts = []
    classes: Counter[str] = Counter()
    for tool in tools:
        for provider, check in CHECKS:
            try:
                reasons, advisory = check(tool)
            except Exception as e:  # noqa: BLE001 - a checker bug is a verdict too
                reasons, advisory = [f"checker raised | {type(e).__name__}: {e}"], []
            reasons = capped(reasons)
            verdicts.append({"key": tool["key"], "provider": provider, "ok": not reasons,
                             "advisory": False, "reasons": reasons})
            for c in sorted({r.split(" | ", 1)[0] for r in reasons}):
                classes[f"{provider} | {c}"] += 1
            if provider in ADVISORY_NAMES:
                verdicts.append({"key": tool["key"], "provider": ADVISORY_NAMES[provider],
                                 "ok": not advisory, "advisory": True,
                                 "reasons": capped(advisory)})
    versions = {}
    for dist in VERSIONS:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    json.dump({"verdicts": verdicts, "classes": dict(sorted(classes.items())),
               "versions": versions}, sys.stdout, indent=1)
    sys.stdout.write("\n")

if __name__ == "__main__":
    main(sys.argv[1])

"""The config boundary: raw stack config -> validated Settings, or ONE error listing every problem."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .check import check
from .model import Settings
from .problems import ROOT, Problem, field_path

PROJECT = "ck8s-gpu"
SETTINGS_KEY = f"{PROJECT}:settings"
KUBECONFIG_KEY = f"{PROJECT}:kubeconfig"
KNOWN_KEYS = {SETTINGS_KEY, KUBECONFIG_KEY}


class SettingsError(Exception):
    """Bad stack settings. `str()` is the whole user-facing message; no traceback is wanted."""

    def __init__(self, source: str, problems: Iterable[Problem], excerpt: Sequence[str] = ()) -> None:
        self.source = source
        self.problems = sorted(set(problems))
        # Lines of the file that show where (a YAML error: the line and a caret under the column).
        self.excerpt = tuple(excerpt)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        n = len(self.problems)
        lines = [f"invalid settings in {self.source} ({n} problem{'s' if n != 1 else ''}):"]
        lines += [f"  {_cut(_printable(path), 200)}: {_cut(_printable(reason))}" for path, reason in self.problems]
        lines += [f"    {_cut(_printable(line), 200)}" for line in self.excerpt]
        return "\n".join(lines)


def _cut(text: str, limit: int = 500) -> str:
    """Bad values are echoed in reasons; a 1 MB value must not become a 1 MB message."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def _printable(text: str) -> str:
    """Control characters of a key or value (a newline, \\x1e) escaped: one problem stays one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


_TYPE_ERRORS = {"int_type", "bool_type", "string_type", "float_type", "tuple_type", "dict_type", "model_type"}
_TYPE_NAMES = {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list", dict: "a mapping",
               type(None): "null"}


def pydantic_reason(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown setting (check the spelling; settings are camelCase)"
    if kind == "missing":
        return "required"
    if kind in _TYPE_ERRORS:
        # Strict parsing: say what was given, so `true` for a count or "2" for a number is plain.
        given = _TYPE_NAMES.get(type(err.get("input")), type(err.get("input")).__name__)
        return f"{err['msg']}, got {given} (values are not converted: write the type the setting takes)"
    return str(err["msg"])


# Go's encoding/json writes a float64 without a fraction as an integer below 1e21 (strconv 'g'-style
# formatting in encode.go floatEncoder), and the Pulumi CLI hands the program its structured config
# as that JSON (components/settings/secrets.py cites value.go): under the engine `count: 2.0` arrives
# as 2. The stack file read here is made to agree, so `plan` and `up` judge the same value.
_GO_JSON_INTEGRAL_BELOW = 1e21


def as_engine_reads(value: Any) -> Any:
    """`value` with integral floats as the ints the engine hands the program (see above)."""
    if (isinstance(value, float) and math.isfinite(value) and value.is_integer()
            and abs(value) < _GO_JSON_INTEGRAL_BELOW):
        return int(value)
    if isinstance(value, dict):
        return {k: as_engine_reads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_engine_reads(v) for v in value]
    return value


def parse_model(raw: Any, source: str = "stack config") -> Settings:
    """Raw settings (camelCase mapping) -> the typed model, or SettingsError naming every structural
    problem (types, ranges, unknown keys). No cross-field rule runs: components/validate.py does."""
    if not isinstance(raw, Mapping):
        raise SettingsError(source, [(ROOT, f"must be a mapping, got {type(raw).__name__}")])
    try:
        # Strict: no coercion (a boolean is no count, "2" no number, "yes" no boolean); a stack
        # file's lists become the model's tuples first (model.py _Model._lists_as_tuples).
        return Settings.model_validate(as_engine_reads(raw), strict=True)
    except ValidationError as exc:
        raise SettingsError(source, [(field_path(e["loc"]), pydantic_reason(e)) for e in exc.errors()]) from None


def parse_settings(raw: Any, source: str = "stack config") -> Settings:
    """The model plus the settings' own cross-field rules. Programs and commands load settings
    through components.validate (every rule, the add-on graph, platform and names included)."""
    settings = parse_model(raw, source)
    problems = check(settings)
    if problems:
        raise SettingsError(source, problems)
    return settings


MAX_DEPTH = 64  # deeper YAML is no stack file; PyYAML's recursive composer would crash on it
MAX_VALUES = 100_000  # values after alias expansion: an alias bomb is refused, not expanded


class DuplicateKeys(yaml.YAMLError):
    """Mapping keys given twice: (key path from the document root, key, first line, repeated line)."""

    def __init__(self, found: list[tuple[tuple[Any, ...], str, int, int]]) -> None:
        super().__init__(f"{len(found)} duplicate mapping key(s)")
        self.found = found


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses nesting past MAX_DEPTH while composing (before recursion runs out),
    refuses a mapping key given twice, and resolves plain scalars as YAML 1.2 (see _YAML12)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.line + 1  # the reader's position: where the nesting went too deep
                raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels (line {line})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None and (found := duplicate_keys(node)):
            raise DuplicateKeys(found)
        return node


_MERGE = "tag:yaml.org,2002:merge"


def duplicate_keys(root: yaml.Node) -> list[tuple[tuple[Any, ...], str, int, int]]:
    """Keys given twice in one mapping, anywhere: PyYAML keeps the last silently, the Pulumi CLI
    refuses the file (go-yaml v3 decode.go: "mapping key %#v already defined at line %d", which
    compares scalar keys by their text, as this does). Each node is walked once, so aliases (which
    share nodes) cost nothing extra: an alias bomb is refused later, by size."""
    found: list[tuple[tuple[Any, ...], str, int, int]] = []
    seen: set[int] = set()
    todo: list[tuple[yaml.Node, tuple[Any, ...]]] = [(root, ())]
    while todo:
        node, path = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[str, int] = {}
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE:
                    todo.append((value, path))
                    continue
                line = key.start_mark.line + 1
                if key.value in lines:
                    found.append(((*path, key.value), key.value, lines[key.value], line))
                else:
                    lines[key.value] = line
                todo.append((value, (*path, key.value)))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return sorted(found, key=lambda f: f[3])


# YAML 1.2 plain scalars, as the Pulumi CLI's go-yaml v3 reads them into untyped values (its
# README, "Compatibility": YAML 1.1 booleans only into typed bools; no base-60 numbers): `yes`,
# `no`, `on`, `off` stay text (so a boolean setting refuses them under `plan` and `up` alike) and
# `1:30` is no number. PyYAML's SafeLoader is YAML 1.1 and would read them as True/False/90.
_BOOL, _INT, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BoundedLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT)]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_BoundedLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_BoundedLoader.add_implicit_resolver(  # PyYAML's int pattern less its base-60 form
    _INT, re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"))
_BoundedLoader.add_implicit_resolver(  # PyYAML's float pattern less its base-60 form
    _FLOAT, re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))


def _dup_path(path: tuple[Any, ...]) -> str:
    """A duplicate key's place as settings errors name it: settings.a.b under the settings key,
    config.<key> elsewhere in `config:`, else `file`."""
    if len(path) >= 2 and path[0] == "config" and path[1] == SETTINGS_KEY:
        return field_path(path[2:])
    if len(path) >= 2 and path[0] == "config" and isinstance(path[1], str) and re.fullmatch(r"[\w:-]+", path[1]):
        return field_path(path[2:], root=f"config.{path[1]}")
    return "file"


def _expanded_size(value: Any, limit: int) -> int:
    """Values counted as a consumer that copies or serializes them would expand them (aliases
    repeat); stops counting past `limit`, so a bomb costs at most `limit` steps."""
    count, todo = 0, [value]
    while todo and count <= limit:
        v = todo.pop()
        count += 1
        if isinstance(v, dict):
            todo.extend(v.keys())
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
    return count


def _yaml_error(exc: yaml.YAMLError, text: str) -> tuple[str, list[str]]:
    """PyYAML's error as one reason with its line and column (1-based, as editors count), and the
    line it points at with a caret under the column. A problem at the end of the file points at
    where the unfinished construct began (its context mark) instead of an empty line."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem is None or mark is None:
        return f"not valid YAML: {_cut(str(exc), 300)}", []
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    reason = f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    if context and context_mark is not None:
        reason += f" ({context} at line {context_mark.line + 1}, column {context_mark.column + 1})"
    elif context:
        reason += f" ({context})"
    lines = text.splitlines()
    shown = mark
    if (mark.line >= len(lines) or not lines[mark.line].strip()) and context_mark is not None:
        shown = context_mark
    if shown.line >= len(lines):
        return reason, []
    gutter = f"{shown.line + 1} | "
    return reason, [gutter + lines[shown.line], " " * (len(gutter) + shown.column) + "^"]


def parse_stack_text(data: bytes, source: str) -> Any:
    """Bytes of a stack file -> YAML document, or SettingsError: not UTF-8, not YAML, too deep, too big."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(source, [("file", f"not valid UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})")]
                            ) from None
    try:
        doc = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass: plain data only
    except DuplicateKeys as exc:
        raise SettingsError(source, [
            (_dup_path(path), f"key '{_cut(key, 80)}' is given twice (lines {first} and {again}): YAML would keep the "
                              "last one silently and the Pulumi CLI refuses the file; keep one")
            for path, key, first, again in exc.found]) from None
    except yaml.YAMLError as exc:
        reason, excerpt = _yaml_error(exc, text)
        raise SettingsError(source, [("file", reason)], excerpt) from None
    except RecursionError:
        raise SettingsError(source, [("file", "not valid YAML: nested too deeply to parse")]) from None
    if _expanded_size(doc, MAX_VALUES) > MAX_VALUES:
        raise SettingsError(source, [("file", f"expands to more than {MAX_VALUES} values (YAML aliases repeat what "
                                              "they point to); write the values out")])
    return doc


def read_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` mapping of a Pulumi stack file. Raises SettingsError on unreadable YAML."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SettingsError(str(path), [("file", "does not exist")]) from None
    except OSError as exc:
        raise SettingsError(str(path), [("file", f"cannot be read: {exc.strerror}")]) from None
    doc = parse_stack_text(data, str(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise SettingsError(str(path), [("config", "a stack file needs a `config:` mapping")])
    return dict(doc.get("config") or {})

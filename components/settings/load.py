"""The config boundary: raw stack config -> validated Settings, or ONE error listing every problem."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.settings.model import Settings
from components.settings.rules import ROOT, Problem, check, path_key

PROJECT = "ck8s-gpu"
SETTINGS_KEY = f"{PROJECT}:settings"
KUBECONFIG_KEY = f"{PROJECT}:kubeconfig"
KNOWN_KEYS = {SETTINGS_KEY, KUBECONFIG_KEY}


class SettingsError(Exception):
    """Bad stack settings. `str()` is the whole user-facing message; no traceback is wanted."""

    def __init__(self, source: str, problems: Iterable[Problem]) -> None:
        self.source = source
        self.problems = sorted(set(problems))
        super().__init__(self.message)

    @property
    def message(self) -> str:
        n = len(self.problems)
        lines = [f"invalid settings in {self.source} ({n} problem{'s' if n != 1 else ''}):"]
        lines += [f"  {_cut(_printable(path), 200)}: {_cut(_printable(reason))}" for path, reason in self.problems]
        return "\n".join(lines)


def _cut(text: str, limit: int = 500) -> str:
    """Bad values are echoed in reasons; a 1 MB value must not become a 1 MB message."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def _printable(text: str) -> str:
    """Control characters of a key or value (a newline, \\x1e) escaped: one problem stays one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def field_path(loc: tuple[int | str, ...], root: str = ROOT) -> str:
    """A pydantic error location as the user writes it: settings.nodePools[0].labels["a b"]."""
    out = root
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else path_key(part)
    return out


def pydantic_reason(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown setting (check the spelling; settings are camelCase)"
    if kind == "missing":
        return "required"
    return str(err["msg"])


def parse_model(raw: Any, source: str = "stack config") -> Settings:
    """Raw settings (camelCase mapping) -> the typed model, or SettingsError naming every structural
    problem (types, ranges, unknown keys). No cross-field rule runs: components/validate.py does."""
    if not isinstance(raw, Mapping):
        raise SettingsError(source, [(ROOT, f"must be a mapping, got {type(raw).__name__}")])
    try:
        return Settings.model_validate(raw)
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


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses nesting past MAX_DEPTH while composing (before recursion runs out)."""

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


def parse_stack_text(data: bytes, source: str) -> Any:
    """Bytes of a stack file -> YAML document, or SettingsError: not UTF-8, not YAML, too deep, too big."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(source, [("file", f"not valid UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})")]
                            ) from None
    try:
        doc = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass: plain data only
    except yaml.YAMLError as exc:
        raise SettingsError(source, [("file", f"not valid YAML: {_cut(str(exc), 300)}")]) from None
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

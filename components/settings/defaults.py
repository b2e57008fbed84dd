"""The settings model's own default at a field path (`smokeTest.gpus`, camelCase as in a stack file):
what the typed components document for an argument they leave unset (pure; the model is the one
place defaults live)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .model import Settings


def default_at(path: str) -> Any:
    """The default of the field at `path`; KeyError naming the first segment that is no field."""
    model: type[BaseModel] = Settings
    parts = path.split(".")
    for i, part in enumerate(parts):
        name = next((n for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if name is None:
            raise KeyError(f"{'.'.join(parts[:i + 1])}: no such settings field")
        info = model.model_fields[name]
        if i == len(parts) - 1:
            return info.get_default(call_default_factory=True)
        annotation = info.annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            raise KeyError(f"{'.'.join(parts[:i + 1])}: not a section of the settings")
        model = annotation
    raise KeyError(path)

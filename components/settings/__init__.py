"""Typed stack settings: the model (all defaults), derived facts, the settings' own cross-field
rules, the loader. Programs and commands load settings through components.validate (the one gate)."""

from .load import SettingsError, parse_model, parse_settings
from .model import Settings

__all__ = ["Settings", "SettingsError", "parse_model", "parse_settings"]

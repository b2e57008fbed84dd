"""Typed stack settings: the model (all defaults), derived facts, cross-field rules, the loader."""

from components.settings.load import SettingsError, load_stack, parse_settings, settings_from_config
from components.settings.model import Settings

__all__ = ["Settings", "SettingsError", "load_stack", "parse_settings", "settings_from_config"]

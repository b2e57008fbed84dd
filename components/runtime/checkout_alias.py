"""One module tree when an installed `ck8s_gpu` runs this checkout's program (ADR 0044).

The checkout's `__main__.py` imports the package as `components`; the console script of an
editable install imports it as `ck8s_gpu`. Were both names loaded, every module would exist twice
(two `Settings` classes, two `SettingsError`s: an error raised by one is not caught by the other).
Before `ck8s-gpu plan` runs the program in its own process, `components.*` is therefore made to
resolve to the modules already loaded under the installed name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

CHECKOUT_NAME = "components"
INSTALLED_NAME = __name__.split(".")[0]


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, alias: str, real: str) -> None:
        self.alias, self.real = alias, real

    def real_name(self, fullname: str) -> str | None:
        if fullname == self.alias or fullname.startswith(self.alias + "."):
            return self.real + fullname[len(self.alias):]
        return None

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        real = self.real_name(fullname)
        if real is None:
            return None
        module = importlib.import_module(real)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        real = self.real_name(spec.name)
        assert real is not None
        return sys.modules[real]  # the same module object under both names

    def exec_module(self, module: ModuleType) -> None:
        pass  # already executed under its installed name


def alias_checkout_name() -> None:
    """Make `components.*` the modules of this package when it runs under another name."""
    if INSTALLED_NAME == CHECKOUT_NAME or any(isinstance(f, _Alias) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Alias(CHECKOUT_NAME, INSTALLED_NAME))

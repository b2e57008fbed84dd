"""Kubeconfig text -> document, without ever echoing the text (pure; YAML only)."""

from __future__ import annotations

from typing import Any

import yaml


def parse_kubeconfig(kubeconfig: str) -> Any:
    """The kubeconfig's YAML document. A parse error names the line and column only: PyYAML's own
    message quotes the offending line, and a kubeconfig's lines are tokens and keys."""
    try:
        return yaml.safe_load(kubeconfig)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ValueError(f"kubeconfig is not valid YAML{where}; its content is not shown: it holds "
                         "credentials") from None

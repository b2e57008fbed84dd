"""Packages and package data of the wheel (the rest of the metadata is in pyproject.toml).

The checkout keeps the package at the top as `components/` (the Pulumi program and the tests
import it so); the distribution installs that same tree as `ck8s_gpu`, its only top-level name
(ADR 0044). charts/ stays at the top of the checkout and ships inside it as `ck8s_gpu._charts`.
"""

from setuptools import find_packages, setup

NAME = "ck8s_gpu"
subpackages = find_packages(where="components")

setup(
    packages=[NAME, *(f"{NAME}.{p}" for p in subpackages), f"{NAME}._charts"],
    package_dir={NAME: "components", f"{NAME}._charts": "charts"},
    package_data={NAME: ["aws/scripts/*", "py.typed"], f"{NAME}._charts": ["**/*", "**/.helmignore"]},
)

"""Packages and package data of the wheel (the rest of the metadata is in pyproject.toml).

charts/ stays at the top of the checkout and ships inside the wheel as `components._charts`."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["components", "components.*", "ck8s_gpu"]), "components._charts"],
    package_dir={"components._charts": "charts"},
    package_data={"components": ["aws/scripts/*"], "components._charts": ["**/*", "**/.helmignore"]},
)

"""The package list: pyproject.toml holds everything else.

`boards/` and `hls_configs/` live at the repository root, where users read, copy and add their own. The wheel
ships them inside the package as `fpgaprune/boards` and `fpgaprune/hls_configs`; `fpgaprune.hls.yaml_files`
finds either layout.
"""

from setuptools import find_packages, setup

ROOT_DATA = {"fpgaprune.boards": "boards", "fpgaprune.hls_configs": "hls_configs"}

setup(packages=find_packages(include=["fpgaprune", "fpgaprune.*"]) + list(ROOT_DATA), package_dir=ROOT_DATA)

"""The benchmark suite is the end-to-end tier's main job (``pytest -m e2e``); run by path
(``pytest benchmarks``) it runs whatever the marker expression."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marked before ``-m`` selects: conftest hooks see every item, so only this folder's."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)

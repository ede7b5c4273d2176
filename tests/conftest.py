"""Shared test configuration: tests that read ``../shared/data`` (the labelled cases and the
tau-bench runs kept next to the repository) carry the ``shared_data`` marker and are
skipped, with the reason, where that directory is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if SHARED_DATA.exists():
        return
    skip = pytest.mark.skip(reason="../shared/data is not next to this checkout (the shared labelled data and tau-bench runs)")
    for item in items:
        if item.get_closest_marker("shared_data") is not None:
            item.add_marker(skip)

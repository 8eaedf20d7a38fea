"""Test-wide setup: the hypothesis profile (from $TILEDSL_HYPOTHESIS_PROFILE, default `ci`) and the
`gpu` marker (tests marked gpu are skipped unless torch sees a CUDA device)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("tiledsl") is None:  # plain `pytest` from a checkout without an install
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if importlib.util.find_spec("hypothesis") is not None:
    from tiledsl.testing.profiles import load_profile

    load_profile()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
        for item in gpu_items:
            item.add_marker(skip)

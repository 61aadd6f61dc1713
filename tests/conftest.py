"""Shared test settings: deterministic seeds and a small hypothesis budget."""

import os

import pytest
import torch
from hypothesis import settings

settings.register_profile("aiayn", max_examples=25, deadline=None, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "aiayn"))


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)

"""Shared test settings: deterministic seeds and a small hypothesis budget."""

import os

import pytest
import torch
from hypothesis import settings

settings.register_profile("aiayn", max_examples=25, deadline=None, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "aiayn"))


# One intra-op thread: the tests use tiny tensors, where a second thread only adds overhead
# (and on a busy 2-core machine, two threads can run ~50 times slower).
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _one_thread():
    """Every test starts on one thread and leaves the count as it found it (a verb's
    ``--threads`` called in process would otherwise change it for the tests after)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def explore_model(tmp_path_factory):
    """The explorer's tests' tiny trained run (tests/explore_support.py): the averaged model."""
    from tests.explore_support import make_run

    return make_run(tmp_path_factory.mktemp("explore"))

"""Fixtures shared by the test modules."""
import pytest


@pytest.fixture
def torch_single_thread():
    """Tiny models gain nothing from intra-op threads, and one thread keeps the tests fast on a
    busy machine (OpenMP barriers stall when cores are shared)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)

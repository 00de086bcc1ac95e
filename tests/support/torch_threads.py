"""A fixture for test modules that run networks: one torch thread, as in the self-play workers."""

from __future__ import annotations

from typing import Iterator

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """One torch thread in the module that imports this (as in the workers; two threads crawl on a busy
    2-core machine, and a network's float sums may depend on the count), restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

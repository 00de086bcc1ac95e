"""derive_seed: one seed and a few keys name a random stream, the same everywhere."""

import subprocess
import sys

import numpy as np
import pytest

from envs.seeding import derive_seed


def test_the_same_keys_give_the_same_seed_and_other_keys_another() -> None:
    a = derive_seed(7, "selfplay", 3)
    assert a == derive_seed(7, "selfplay", 3)
    assert 0 <= a < 2**63
    others = {
        derive_seed(7, "selfplay", 4),
        derive_seed(8, "selfplay", 3),
        derive_seed(7, "eval", 3),
        derive_seed(7, 3, "selfplay"),
        derive_seed(7, "selfplay"),
        derive_seed(7, "selfplay", 3, 0),
    }
    assert a not in others and len(others) == 6
    assert derive_seed(7, 5) != derive_seed(7, "5")  # a string never meets a small int key


@pytest.mark.slow
def test_seeds_do_not_depend_on_the_process() -> None:
    """The streams replay on another machine, in a worker process, after a resume: no per-process hashing."""
    code = "from envs.seeding import derive_seed; print(derive_seed(123, 'game', 4, 'red'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "1"}
    ).stdout
    assert int(out) == derive_seed(123, "game", 4, "red")


def test_streams_look_independent() -> None:
    draws = np.array([np.random.default_rng(derive_seed(0, "game", k)).random() for k in range(2000)])
    assert 0.45 < draws.mean() < 0.55 and len(set(draws.tolist())) == 2000


@pytest.mark.parametrize("bad", [-1, 1.5, None, True])
def test_bad_seeds_and_keys_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative int or a string"):
        derive_seed(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key"):
        derive_seed(0, "game", bad)  # type: ignore[arg-type]

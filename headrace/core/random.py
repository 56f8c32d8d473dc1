"""Random number generators: the global one (``paddle.seed``) and per-program ones.

Random ops draw from, in this order of preference:
1. a fixed seed carried by the op (attribute ``seed`` != 0, or a ``Seed`` input): a fresh generator
   seeded with it on every run, so the op repeats its draw exactly (what recompute relies on);
2. the program's own generator when ``Program.random_seed`` is non-zero: reproducible across
   runs that start from the same seed, yet fresh numbers at every step;
3. the global generator, reseeded by ``paddle.seed(n)``.
"""
from __future__ import annotations

import numpy as np


class Generator:
    """A seedable NumPy generator with the reference system's state API."""

    def __init__(self, seed: int | None = None):
        self._initial = seed if seed is not None else int(np.random.SeedSequence().entropy % (2**63))
        self._rng = np.random.Generator(np.random.PCG64(self._initial))

    @property
    def numpy(self) -> np.random.Generator:
        return self._rng

    def manual_seed(self, seed: int) -> "Generator":
        self._initial = int(seed)
        self._rng.bit_generator.state = np.random.PCG64(self._initial).state
        return self

    seed = manual_seed

    def initial_seed(self) -> int:
        return self._initial

    def get_state(self) -> dict:
        """A snapshot of the stream (a new dict each call)."""
        return self._rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        if not isinstance(state, dict) or "state" not in state:
            raise TypeError(f"Generator.set_state: expected a state from get_state(), got {state!r}")
        self._rng.bit_generator.state = state

    get_rng_state = get_state
    set_rng_state = set_state

_global = Generator(0)


def default_generator() -> Generator:
    return _global


def seed(value: int) -> Generator:
    """Reseed the global generator (``paddle.seed``) and return it."""
    return _global.manual_seed(value)


def get_rng_state() -> list:
    """``paddle.get_rng_state()``: the states of every device's generator (here: the CPU one)."""
    return [_global.get_state()]


def set_rng_state(states) -> None:
    """``paddle.set_rng_state(states)``: restore what ``get_rng_state()`` returned."""
    if isinstance(states, dict):
        states = [states]
    states = list(states)
    if len(states) != 1:
        raise ValueError(f"set_rng_state: this CPU-only build has one generator, got {len(states)} states")
    _global.set_state(states[0])


def get_cuda_rng_state() -> list:
    """No CUDA devices in this build: the list of CUDA generator states is empty."""
    return []


def set_cuda_rng_state(states) -> None:
    """Accepts the empty list ``get_cuda_rng_state()`` returns; anything else is an error."""
    if states is None or len(states) == 0:
        return
    raise ValueError(f"set_cuda_rng_state: this CPU-only build has no CUDA generators, got {len(states)} states")


def fixed_generator(seed_value: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(int(seed_value)))


# Named seed generators (the reference's ``set_random_seed_generator``): a ``seed`` op with
# ``deterministic=True`` draws from the one named by its ``rng_name`` attribute.
_named: dict = {}


def set_random_seed_generator(name: str, seed_value: int) -> Generator:
    """Create (or reseed) the generator called ``name``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"set_random_seed_generator: name must be a non-empty str, got {name!r}")
    _named[name] = Generator(int(seed_value))
    return _named[name]


def get_random_seed_generator(name: str) -> Generator:
    gen = _named.get(name)
    if gen is None:
        known = ", ".join(sorted(_named)) or "none"
        raise ValueError(f"no random seed generator named {name!r} (set one with "
                         f"set_random_seed_generator(name, seed); known: {known})")
    return gen

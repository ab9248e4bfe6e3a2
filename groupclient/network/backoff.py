"""Exponential backoff with jitter, as Kafka's clients compute it (``ExponentialBackoff`` in Java,
used for ``reconnect.backoff.ms`` and, since KIP-580, ``retry.backoff.ms``).

The n-th wait after consecutive failures is ``initial * multiplier**n``, capped at ``max`` once
it would pass it, times a random factor in ``[1 - jitter, 1 + jitter)`` so that clients that
failed together do not retry together.  The random draws come from the caller's ``random.Random``:
the consumer's, seeded by the simulator, so that a seed replays every wait exactly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class ExponentialBackoff:
    """``initial_ms * multiplier**attempts``, capped at ``max_ms``, times 1 +- ``jitter``."""

    initial_ms: int
    max_ms: int
    multiplier: float = 2.0
    jitter: float = 0.2

    def backoff_ms(self, attempts: int, rng: random.Random) -> int:
        """The wait after the ``attempts``-th consecutive failure, counting from 0."""
        if self.initial_ms <= 0:
            return 0
        if self.max_ms <= self.initial_ms:
            return self.initial_ms  # nothing to grow into, nothing to spread (as Java)
        else:
            # the exponent at which the term reaches max_ms: no need to go higher (nor to overflow)
            cap = math.log(self.max_ms / self.initial_ms) / math.log(self.multiplier)
            term = self.initial_ms * self.multiplier ** min(max(attempts, 0), cap)
        if self.jitter > 0:
            term *= rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(int(term), self.max_ms)

"""The randomization mechanisms a config may sweep on profiles dataviews (Olivier and Quertier,
randomized sanitization mechanisms,
section III): their names, the profile kind each randomizes, and one setting's privacy
parameters. The mechanisms themselves are in randomized/mechanisms.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

MECHANISMS = {"randomized_response": "boolean", "laplace": "count", "geometric": "count"}
DEFAULT_MECHANISM = {"boolean": "randomized_response", "count": "laplace"}


@dataclass(frozen=True)
class Setting:
    """One mechanism with its privacy parameters."""

    mechanism: str
    epsilon: float
    neighbourhood: int | None = None  # n_i; None: χ_i = every location
    flip: float | None = None  # randomized response: p (None: the lower end of the range)

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {self.mechanism!r}")
        if not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise ValueError(f"epsilon {self.epsilon!r} must be a positive number")
        if self.flip is not None:
            low, high = flip_range(self.epsilon)
            if not low <= self.flip <= high:
                raise ValueError(
                    f"p = {self.flip:g} is outside [{low:.4g}, {high:.4g}], the range of "
                    f"Proposition 7 for epsilon {self.epsilon:g}"
                )

    @property
    def kind(self) -> str:
        return MECHANISMS[self.mechanism]

    @property
    def p(self) -> float | None:
        """The flip probability of randomized response (None for count mechanisms)."""
        if self.mechanism != "randomized_response":
            return None
        return self.flip if self.flip is not None else flip_range(self.epsilon)[0]

    @property
    def chi(self) -> str:
        return "all" if self.neighbourhood is None else f"N(b_i, {self.neighbourhood})"


def flip_range(epsilon: float) -> tuple[float, float]:
    """Proposition 7: the flip probabilities p for which randomized response is ε-private."""
    return 1.0 / (1.0 + math.exp(epsilon)), math.exp(epsilon) / (1.0 + math.exp(epsilon))

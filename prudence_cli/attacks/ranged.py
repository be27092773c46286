"""An attack's levels made where they are counted: on an engine of several workers, the
view's users are cut into ranges (engine/ranged.py), each range's rows sent to its
worker, and the level's instances drawn there from the rows of its users — only for
attacks whose instances of a person are made of that person's rows alone, with the
view's location codes as elements, or elements the whole view numbers once for its
ranges (`CountingAttack.local`, `numbering`: a trajectory's visits, a segments view's
triples). The planning process holds the view, and vectors per person; never a level's
lists.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import numpy as np

from prudence_cli.config.knowledge import KnowledgeLevel
from prudence_cli.dataviews.base import Dataview, ViewRange
from prudence_cli.engine import CountingProblem, Elements, QuerySpec
from prudence_cli.engine.ranged import Part, RangedProblem, of_parts, surveyed, user_ranges

if TYPE_CHECKING:
    from prudence_cli.dataviews.on_workers import KeptView
    from prudence_cli.engine import Engine


class Instances(Protocol):
    """What makes an attack's levels (attacks/base.CountingAttack)."""

    match: ClassVar[str]
    ordered: ClassVar[bool]
    local: ClassVar[bool]
    numbering: ClassVar[str | None]

    def instances(self, view: Any, level: KnowledgeLevel) -> tuple[Elements, QuerySpec]: ...


def level_problem(
    members: Elements, spec: QuerySpec, known_ones: np.ndarray | None, match: str, ordered: bool
) -> CountingProblem:
    """The counting problem of an attack's instances; `known_ones` users ask nothing."""
    if known_ones is not None:
        spec = replace(
            spec,
            size_lo=np.where(known_ones, 0, spec.size_lo),
            size_hi=np.where(known_ones, 0, spec.size_hi),
        )
    return CountingProblem(members, spec, match=match, ordered=ordered)


class Local(Protocol):
    """An attack that says whether its levels are made in ranges (`local`)."""

    local: ClassVar[bool]


def in_ranges(attack: Local, engine: Engine) -> bool:
    """Whether `attack`'s levels are made in ranges of users on `engine`'s workers."""
    return attack.local and engine.runner.shards > 1


def ranged_level(
    attack: Instances,
    view: Dataview,
    level: KnowledgeLevel,
    known_ones: np.ndarray | None,
    engine: Engine,
) -> RangedProblem:
    """The level's problem in ranges of users, each made on the worker its rows are sent
    to (and let go once it is made: a worker holds a level, not the view besides it);
    `known_ones` ask nothing (`level_problem`)."""
    runner = engine.runner
    first, ranges = view_ranges(view, runner, attack.numbering)
    # each range's own people's, sent to its worker only (not the whole vector to each)
    bounds = zip(first[:-1].tolist(), first[1:].tolist(), strict=True)
    known = [None if known_ones is None else known_ones[a:b] for a, b in bounds]
    parts = runner.each_kept(_range_level, ranges, attack, level, paired=known)
    del ranges, known  # each range's rows go once its level is made
    return of_parts(parts, first, runner)


def view_ranges(
    view: Dataview, runner: Any, numbering: str | None = None
) -> tuple[np.ndarray, list[Any]]:
    """The first user of each range of the view's users (and |U| last), and each range's
    rows as a ViewRange kept on the runner's workers: the ranges of a view kept there
    (KeptView), or ranges of about equal rows sent there. With a `numbering`
    (Dataview.numberings), its elements numbered as the whole view numbers them."""
    if view.on_workers:  # its ranges are there already
        return cast("KeptView", view).kept_ranges(runner, numbering)
    if numbering is not None:  # numbered as a whole, for its ranges
        view = view.numbered(numbering)
    first = user_ranges(view.offsets, runner.shards)
    pairs = zip(first[:-1].tolist(), first[1:].tolist(), strict=True)
    return first, runner.place(ViewRange(view.users(a, b), a, b) for a, b in pairs)


def _range_level(
    rows: ViewRange, known: np.ndarray | None, attack: Instances, level: KnowledgeLevel
) -> Part:
    """The range's level, its people of `known` (at risk 1 already) asking nothing."""
    members, spec = attack.instances(rows.view, level)
    return surveyed(level_problem(members, spec, known, attack.match, attack.ordered))


class Held:
    """A dataview as a run's attacks see it. A view kept on the workers (KeptView)
    serves the attacks whose levels are made in its ranges (`in_ranges`) and those that
    read its ranges themselves (`reads_kept`: the cluster attack); the others see it
    gathered here (`whole`), once."""

    def __init__(self, view: Dataview) -> None:
        self.view = view
        self._whole: Dataview | None = None

    def view_for(self, attack: Any, engine: Engine) -> Dataview:
        """The view `attack` reads on `engine`."""
        if self.view.on_workers and getattr(attack, "reads_kept", False):
            return self.view  # on any number of workers
        serves = self.view.on_workers and getattr(attack, "local", False)
        return self.view if serves and in_ranges(attack, engine) else self.whole()

    def whole(self) -> Dataview:
        """The view with its rows here."""
        if not self.view.on_workers:
            return self.view
        if self._whole is None:
            self._whole = cast("KeptView", self.view).whole()
        return self._whole

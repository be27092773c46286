"""Literal, slow implementations of the papers' definitions, for the tests only."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping

import numpy as np


def known_count(count: int, visits: str) -> int:
    if visits == "exact":
        return count
    if visits == "half":
        return math.ceil(count / 2)
    return 1


def presence_risks(
    view: Mapping[object, Mapping[object, int]],
    universe: list[object],
    f: int,
    h: int | str,
    visits: str,
) -> dict[object, float]:
    """Seed 000, section 4.1.1, as written: every h-combination of the target's
    (location, known count) pairs, L_s = pairs with known count ≥ f, candidates R = users
    of the dataview holding each location of L_s with count ≥ the known count (all users
    of the dataview when L_s is empty); Risk = max 1/|R|; 0 for users not in the view."""
    in_view = [u for u in universe if view.get(u)]
    risks: dict[object, float] = {}
    for u in universe:
        pairs = sorted(view.get(u, {}).items())
        if not pairs:
            risks[u] = 0.0
            continue
        size = len(pairs) if h == "all" or len(pairs) < h else h
        best = 0.0
        for instance in itertools.combinations(pairs, size):
            known = [(loc, known_count(c, visits)) for loc, c in instance]
            usable = [(loc, k) for loc, k in known if k >= f]
            candidates = [v for v in in_view if all(view[v].get(loc, 0) >= k for loc, k in usable)]
            best = max(best, 1.0 / len(candidates))
        risks[u] = best
    return risks


def engine_support(problem) -> list[int]:
    """The engine's problem statement (prudence_cli/engine/problem.py), literally: every
    query of every user, every candidate checked; min support per user (0: no query)."""
    members = problem.members
    spec = problem.queries
    q = spec.elements
    upper = spec.upper
    lists = []
    for u in range(members.n_users):
        a, b = members.offsets[u], members.offsets[u + 1]
        lists.append(
            list(zip(members.elements[a:b].tolist(), members.values[a:b].tolist(), strict=True))
        )

    def holds(v: int, query: list[tuple[int, float, float]], ref: int) -> bool:
        mine = lists[v]
        if problem.ordered:
            it = iter(e for e, _ in mine)
            return all(any(x == e for x in it) for e, _, _ in query)
        values = dict(mine)
        if any(e not in values for e, _, _ in query):
            return False
        if problem.match == "contains":
            return True
        base = values[query[ref][0]] if problem.match == "ratio" else 1.0
        return all(lo <= values[e] / base <= hi for e, lo, hi in query)

    out = []
    for u in range(q.n_users):
        a, b = q.offsets[u], q.offsets[u + 1]
        elements = q.elements[a:b].tolist()
        lower = q.values[a:b].tolist()
        highs = upper[a:b].tolist() if upper is not None else [float("inf")] * (b - a)
        best = None
        for s in range(int(spec.size_lo[u]), int(spec.size_hi[u]) + 1):
            if s == 0:
                continue
            for combo in itertools.combinations(range(b - a), s):
                for query, ref in _draw(spec, combo, elements, lower, highs):
                    support = sum(holds(v, query, ref) for v in range(members.n_users))
                    best = support if best is None else min(best, support)
        out.append(best or 0)
    return out


def _draw(spec, combo, elements, lower, highs):
    if spec.mode == "subsets":
        yield [(elements[i], lower[i], highs[i]) for i in combo], 0
    elif spec.mode == "ratios":
        ref = max(range(len(combo)), key=lambda j: (lower[combo[j]], -j))
        base = lower[combo[ref]]
        yield (
            [
                (elements[i], lower[i] / base - spec.delta, lower[i] / base + spec.delta)
                for i in combo
            ],
            ref,
        )
    else:
        target = min(spec.compose, sum(lower))
        for parts in itertools.product(*(range(1, int(lower[i]) + 1) for i in combo)):
            if sum(parts) == target:
                yield [(elements[i], p, float("inf")) for i, p in zip(combo, parts, strict=True)], 0


# --- Pellungrini et al., section 4.1: every attack as written -------------------------------------


def _risk(universe, in_view, instances_of, matches):
    """Max over a user's instances of 1 / |{v in view: matches(v, instance)}|; 0 if absent."""
    risks = {}
    for u in universe:
        if u not in in_view:
            risks[u] = 0.0
            continue
        best = 0.0
        for b in instances_of(u):
            candidates = sum(1 for v in in_view if matches(v, b))
            best = max(best, 1.0 / candidates)
        risks[u] = best
    return risks


def _k(h, n):
    return n if h == "all" or n < h else h


def is_subsequence(small, big) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def ranking(counts: dict) -> list:
    """Locations by descending count, ties by ascending id."""
    return sorted(counts, key=lambda loc: (-counts[loc], loc))


def trajectory_attack_risks(trajectories: dict, universe: list, attack: str, h) -> dict:
    """trajectories: user -> [(location, tbin), ...] in time order (the dataview)."""
    in_view = {u for u, t in trajectories.items() if t}
    locs = {u: [loc for loc, _ in t] for u, t in trajectories.items()}
    if attack == "location":

        def instances(u):
            return {tuple(sorted(c)) for c in itertools.combinations(locs[u], _k(h, len(locs[u])))}

        def matches(v, b):
            have = Counter(locs[v])
            return all(have[loc] >= n for loc, n in Counter(b).items())
    elif attack == "location_sequence":

        def instances(u):
            return set(itertools.combinations(locs[u], _k(h, len(locs[u]))))

        def matches(v, b):
            return is_subsequence(b, locs[v])
    elif attack == "visit":

        def instances(u):
            visits = trajectories[u]
            return {frozenset(c) for c in itertools.combinations(visits, _k(h, len(visits)))}

        def matches(v, b):
            return b <= set(trajectories[v])
    else:
        raise ValueError(attack)
    return _risk(universe, in_view, instances, matches)


def vector_attack_risks(view: dict, universe: list, attack: str, h=None, delta=0.0) -> dict:
    """view: user -> {location: count} (a presence dataview)."""
    in_view = {u for u, d in view.items() if d}
    totals = {u: sum(d.values()) for u, d in view.items()}

    def pairs(u):
        return sorted(view[u].items())

    if attack == "unique_location":

        def instances(u):
            return itertools.combinations(sorted(view[u]), _k(h, len(view[u])))

        def matches(v, b):
            return all(loc in view[v] for loc in b)
    elif attack == "unique_location_sequence":

        def instances(u):
            order = ranking(view[u])
            return itertools.combinations(order, _k(h, len(order)))

        def matches(v, b):
            return is_subsequence(b, ranking(view[v]))
    elif attack in ("frequency", "home_work"):

        def instances(u):
            if attack == "home_work":
                top = ranking(view[u])[:2]
                return [[(loc, view[u][loc]) for loc in top]]
            return itertools.combinations(pairs(u), _k(h, len(view[u])))

        def matches(v, b):
            return all(view[v].get(loc, 0) >= c for loc, c in b)
    elif attack == "probability":

        def instances(u):
            shares = [(loc, c / totals[u]) for loc, c in pairs(u)]
            return itertools.combinations(shares, _k(h, len(shares)))

        def matches(v, b):
            return all(
                loc in view[v] and p - delta <= view[v][loc] / totals[v] <= p + delta
                for loc, p in b
            )
    elif attack == "proportion":

        def instances(u):
            for combo in itertools.combinations(pairs(u), _k(h, len(view[u]))):
                ref = min(combo, key=lambda pair: (-pair[1], pair[0]))[0]
                yield ref, [(loc, c / view[u][ref]) for loc, c in combo]

        def matches(v, b):
            ref, known = b
            if any(loc not in view[v] for loc, _ in known):
                return False
            return all(pr - delta <= view[v][loc] / view[v][ref] <= pr + delta for loc, pr in known)
    else:
        raise ValueError(attack)
    return _risk(universe, in_view, instances, matches)


# --- the disclosure thesis, chapter 4: disclosure measures on a dense 0/1 matrix, as written ------


def dense_disclosure(x, known_bins):
    """x: list of 0/1 rows (users × bins); known_bins: per user, the bins of A_i.
    Returns |E_i|, EM_ij and KL_ij as nested lists (users with no activity skipped)."""
    n = len(x)
    d = len(x[0])
    active = [sum(x[i][j] for i in range(n)) for j in range(d)]
    sizes, em, kl = [], [], []
    for i in range(n):
        e = [v for v in range(n) if all(x[v][j] == 1 for j in known_bins[i])]
        sizes.append(len(e))
        em_row, kl_row = [], []
        for j in range(d):
            p1 = sum(x[v][j] for v in e) / len(e)
            q1 = active[j] / n
            em_row.append(abs(p1 - q1))
            total = 0.0
            for p, q in ((p1, q1), (1 - p1, 1 - q1)):
                if p > 0:
                    total += p * math.log(p / q)
            kl_row.append(total)
        em.append(em_row)
        kl.append(kl_row)
    return sizes, em, kl


# --- Olivier and Quertier: randomized profiles ----------------------------------------------------


def literal_neighbourhood(b, aff, n_i):
    """χ_i = N(b_i, n_i) (Definition 8): b_i's visited locations and the n_i unvisited ones
    of largest Aff(i, j) = Σ_{j1: b_ij1 = 1} Aff_{j1 j} > 0, ties to the smaller j (`aff`
    as whole counts, or any multiple of Aff whose sums are exact)."""
    b = np.asarray(b)
    aff = np.asarray(aff, dtype=float)
    out = np.zeros_like(b, dtype=bool)
    for i in range(b.shape[0]):
        visited = [j for j in range(b.shape[1]) if b[i, j] > 0]
        score = {j: sum(aff[j1, j] for j1 in visited) for j in range(b.shape[1])}
        others = sorted(
            (j for j in range(b.shape[1]) if j not in visited and score[j] > 0),
            key=lambda j: (-score[j], j),
        )
        for j in visited + others[:n_i]:
            out[i, j] = True
    return out


def literal_reidentification(true, noisy, leaked_rows, delta, m_max):
    """r(δ, M, n) of Algorithm 11: the share of noisy profiles ã_i whose guess
    {k : |a_k − ã_i|_1 ≤ δ} over the leaked profiles holds i's own and at most M."""
    true = np.asarray(true)
    noisy = np.asarray(noisy)
    hits = 0
    for i in range(noisy.shape[0]):
        guess = [k for k in leaked_rows if np.abs(true[k] - noisy[i]).sum() <= delta]
        if i in guess and len(guess) <= m_max:
            hits += 1
    return hits / noisy.shape[0]


# --- the engine's instance counts, by enumeration ---------------------------------------------


def queries_of_size(problem, s: int) -> list[int]:
    """Per user, the number of queries of size s its knowledge draws (tests/reference.py
    `engine_support` enumerates the same ones)."""
    spec = problem.queries
    q = spec.elements
    upper = spec.upper
    out = []
    for u in range(q.n_users):
        a, b = q.offsets[u], q.offsets[u + 1]
        if not (spec.size_lo[u] <= s <= spec.size_hi[u]) or s == 0:
            out.append(0)
            continue
        elements = q.elements[a:b].tolist()
        lower = q.values[a:b].tolist()
        highs = upper[a:b].tolist() if upper is not None else [float("inf")] * (b - a)
        out.append(
            sum(
                1
                for combo in itertools.combinations(range(b - a), s)
                for _ in _draw(spec, combo, elements, lower, highs)
            )
        )
    return out


def subsets_by_first_element(lists, s: int, n_elements: int) -> list[int]:
    """For each element id, how many s-subsets (in list order) of all lists start with it."""
    out = [0] * n_elements
    for u in range(lists.n_users):
        items = lists.elements[lists.offsets[u] : lists.offsets[u + 1]].tolist()
        for combo in itertools.combinations(items, s):
            out[combo[0]] += 1
    return out

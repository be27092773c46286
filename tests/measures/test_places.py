"""The location measures of the people a mask keeps (measures/places.py), taken a chunk
of pairs at a time, are those of a copy of their tables — bit for bit, whatever the
chunk — and the measures of a copy are the literal reference's (tests/measures/
test_mobility.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prudence_cli.measures import places
from prudence_cli.measures.places import Tables


def _copy(tables: Tables, people: np.ndarray) -> Tables:
    """The tables of the people of the mask, copied (how they were measured before)."""
    pairs, moves = people[tables.pair_person], people[tables.move_person]
    return Tables(
        tables.pair_person[pairs],
        tables.pair_location[pairs],
        tables.pair_weight[pairs],
        tables.move_person[moves],
        tables.origin[moves],
        tables.destination[moves],
        tables.n_locations,
        tables.trips,
    )


def _in_one_pass(tables: Tables) -> dict[str, np.ndarray]:
    """Each location measure of every pair of `tables` at once, as numpy's bincount
    sums them (the measures before they were taken a chunk at a time)."""
    n = tables.n_locations
    visited = np.flatnonzero(np.bincount(tables.pair_location, minlength=n))
    entropy = places._normalised_entropy(tables.pair_location, tables.pair_weight, n)
    out = {
        "location_entropy": entropy[visited],
        "location_density": np.bincount(tables._top(), minlength=n)[visited].astype(float),
    }
    if tables.trips:
        flow = np.bincount(tables.origin, minlength=n) + np.bincount(
            tables.destination, minlength=n
        )
        out["flow"] = flow[visited].astype(float)
    return out


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    people=st.integers(0, 30),
    locations=st.integers(1, 12),
    trips=st.booleans(),
    chunk=st.sampled_from([1, 2, 7, 1 << 20]),
)
def test_the_measures_of_a_mask_are_those_of_a_copy(seed, people, locations, trips, chunk):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 6, people)
    person = np.repeat(np.arange(people), rows)
    location = rng.integers(0, locations, person.shape[0])
    weight = rng.integers(1, 5, person.shape[0]).astype(float) * rng.random(person.shape[0])
    tables = Tables.of(person, location, weight, locations, trips)
    kept = rng.random(people) < 0.6
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(places, "_CHUNK", chunk)
        for mask in (kept, np.ones(people, dtype=bool), np.zeros(people, dtype=bool)):
            copy = _copy(tables, mask)
            want = _in_one_pass(copy)
            got = tables.measured(people=mask)
            assert want.keys() == got.keys()
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=name)
            visited = np.flatnonzero(np.bincount(copy.pair_location, minlength=locations))
            for name, values in tables.measured(visited=visited, people=mask).items():
                np.testing.assert_array_equal(values, want[name], err_msg=name)
        # everyone's, chunk by chunk, as everyone's in one pass
        whole = places._normalised_entropy(tables.pair_location, tables.pair_weight, locations)
        members = np.bincount(tables.pair_location, minlength=locations)
        np.testing.assert_array_equal(tables._entropy(None, members), whole)

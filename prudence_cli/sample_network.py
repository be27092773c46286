"""Seeded synthetic map-matched trips on a synthetic street network over Pisa.

The network is a grid of streets 300 m apart whose crossings are moved a little, with a
few blocks closed and every fifth street an arterial (50 km/h instead of 30). The people
and their days are those of `prudence_cli.sample` (home, work, favourite places); each
drive follows the quickest route between the crossings nearest to its ends, and every
street segment on it becomes one row: user, trip, segment, time entered, time left.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from prudence_cli.sample import (
    HALF_HEIGHT,
    HALF_WIDTH,
    Progress,
    local_start,
    people,
    stays_of,
    to_lonlat,
)

SPACING = 300.0


@dataclass(frozen=True)
class Network:
    nodes: np.ndarray  # (n, 2) metres from the centre
    edges: np.ndarray  # (m, 2) node indices; edge i is segment i
    seconds: np.ndarray  # (m,) travel time of each segment

    def segments_table(self) -> pd.DataFrame:
        """segment, wkt (a LineString in lon/lat)."""
        lon, lat = to_lonlat(self.nodes)
        wkt = [
            f"LINESTRING ({lon[a]:.6f} {lat[a]:.6f}, {lon[b]:.6f} {lat[b]:.6f})"
            for a, b in self.edges
        ]
        return pd.DataFrame({"segment": [f"s{i:04d}" for i in range(len(self.edges))], "wkt": wkt})


def street_network(seed: int) -> Network:
    rng = np.random.default_rng([seed, 2])
    xs = np.arange(-HALF_WIDTH, HALF_WIDTH + 1, SPACING)
    ys = np.arange(-HALF_HEIGHT, HALF_HEIGHT + 1, SPACING)
    grid = np.array([(x, y) for y in ys for x in xs])
    nodes = grid + rng.normal(0, 40, grid.shape)
    nx = len(xs)
    edges, arterial = [], []
    for j in range(len(ys)):
        for i in range(nx):
            here = j * nx + i
            if i + 1 < nx:
                edges.append((here, here + 1))
                arterial.append(j % 5 == 0)
            if j + 1 < len(ys):
                edges.append((here, here + nx))
                arterial.append(i % 5 == 0)
    edge_array = np.array(edges)
    open_street = (rng.random(len(edges)) > 0.06) | np.array(arterial)
    edge_array = edge_array[open_street]
    speed = np.where(np.array(arterial)[open_street], 50 / 3.6, 30 / 3.6)
    length = np.linalg.norm(nodes[edge_array[:, 0]] - nodes[edge_array[:, 1]], axis=1)
    return Network(nodes, edge_array, length / speed)


def generate_segments(
    users: int,
    days: int,
    seed: int,
    start: dt.date = dt.date(2011, 6, 1),
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Map-matched trips (uid, trip, segment, entered, left; naive Europe/Rome times) and
    the segments table."""
    network = street_network(seed)
    n = len(network.nodes)
    both = np.concatenate([network.edges, network.edges[:, ::-1]])
    weights = np.concatenate([network.seconds, network.seconds])
    graph = coo_matrix((weights, (both[:, 0], both[:, 1])), shape=(n, n)).tocsr()
    edge_of = {(int(a), int(b)): i for i, (a, b) in enumerate(network.edges)}
    edge_of.update({(b, a): i for (a, b), i in list(edge_of.items())})
    rng = np.random.default_rng(seed)
    t0 = local_start(start)
    rows: list[tuple[int, int, int, float, float]] = []
    for index, person in people(users, rng, progress):
        stays = stays_of(person, days, start, rng)
        ends = np.array([_nearest(network.nodes, stay.place) for stay in stays])
        sources = np.unique(ends)
        _, predecessors = dijkstra(graph, indices=sources, return_predecessors=True)
        row_of = {int(s): k for k, s in enumerate(sources)}
        for trip, before in enumerate(stays[:-1]):
            a, b = int(ends[trip]), int(ends[trip + 1])
            path = _path(predecessors[row_of[a]], a, b)
            clock = before.end
            for u, v in zip(path, path[1:], strict=False):
                edge = edge_of[(u, v)]
                took = network.seconds[edge] * rng.uniform(0.9, 1.4)
                rows.append((index, trip, edge, clock, clock + took))
                clock += took
    frame = pd.DataFrame(rows, columns=["user", "trip", "edge", "enter", "leave"])

    def stamp(seconds: pd.Series) -> pd.Index:
        local = t0 + pd.to_timedelta(np.round(seconds.to_numpy()), unit="s")
        return local.tz_localize(None).strftime("%Y-%m-%dT%H:%M:%S")

    trips = pd.DataFrame(
        {
            "uid": [f"v{u:04d}" for u in frame["user"]],
            "trip": [f"t{t:03d}" for t in frame["trip"]],
            "segment": [f"s{e:04d}" for e in frame["edge"]],
            "entered": stamp(frame["enter"]),
            "left": stamp(frame["leave"]),
        }
    )
    return trips, network.segments_table()


def _nearest(nodes: np.ndarray, place: np.ndarray) -> int:
    return int(np.argmin(np.linalg.norm(nodes - place, axis=1)))


def _path(predecessors: np.ndarray, source: int, target: int) -> list[int]:
    path = [target]
    while path[-1] != source and predecessors[path[-1]] >= 0:
        path.append(int(predecessors[path[-1]]))
    return path[::-1] if path[-1] == source else [source]

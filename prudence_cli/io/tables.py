"""Reference tables as CSV: towers and road segments (the positions of a cdr or segments
input), trajectories (`prudence evaluate`) and expert utility scores per profile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from prudence_cli import columns as C
from prudence_cli.errors import InputError
from prudence_cli.io.specs import SegmentsSpec, TowersSpec
from prudence_cli.io.text import check_columns, read_csv, read_header, read_text_table
from prudence_cli.io.values import Check, coordinates, raise_first_failure


def towers_columns(spec: TowersSpec) -> dict[str, str]:
    """Canonical field → column of the towers table."""
    return {"tower": spec.tower, "lat": spec.lat, "lon": spec.lon}


def segments_columns(spec: SegmentsSpec, header: list[str]) -> dict[str, str]:
    """Canonical field → column of the segments table: the WKT column when the header
    has it, else the two ends."""
    if spec.wkt in header:
        return {"segment": spec.segment, "wkt": spec.wkt}
    return {
        "segment": spec.segment,
        "start_lat": spec.start_lat,
        "start_lon": spec.start_lon,
        "end_lat": spec.end_lat,
        "end_lon": spec.end_lon,
    }


def read_towers(spec: TowersSpec) -> pd.DataFrame:
    """The tower table: tower (str, unique), lat, lon."""
    needed = towers_columns(spec)
    header = read_header(spec.path)
    check_columns(spec.path, header, needed, "input.towers.columns")
    frame = read_csv(spec.path)
    frame = frame[list(needed.values())].rename(columns={v: k for k, v in needed.items()})
    if frame.empty:
        raise InputError(spec.path, "holds a header but no towers")
    lat, lon, checks = coordinates(frame)
    tower = frame["tower"].str.strip()
    checks.append(Check(tower.eq("").to_numpy(dtype=bool), "empty tower id"))
    checks.append(
        Check(tower.duplicated().to_numpy(dtype=bool), "tower id listed twice", frame["tower"])
    )
    raise_first_failure(spec.path, checks, first_line=2)
    return pd.DataFrame({C.TOWER: tower.to_numpy(dtype=object), C.LAT: lat, C.LON: lon})


def read_segments(spec: SegmentsSpec) -> pd.DataFrame:
    """The segments table: segment (str, unique), geometry (LineString in lon/lat) and the
    lat / lon of its midpoint. Geometry from a WKT column, else from the two ends."""
    import shapely

    header = read_header(spec.path)
    needed = segments_columns(spec, header)
    check_columns(spec.path, header, needed, "input.segments.columns")
    frame = read_csv(spec.path)
    frame = frame[list(needed.values())].rename(columns={v: k for k, v in needed.items()})
    if frame.empty:
        raise InputError(spec.path, "holds a header but no segments")
    segment = frame["segment"].str.strip()
    checks = [
        Check(segment.eq("").to_numpy(dtype=bool), "empty segment id"),
        Check(
            segment.duplicated().to_numpy(dtype=bool), "segment id listed twice", frame["segment"]
        ),
    ]
    if "wkt" in frame:
        geometry = shapely.from_wkt(frame["wkt"].to_numpy(dtype=object), on_invalid="ignore")
        kinds = shapely.get_type_id(geometry)
        checks.append(Check(kinds != 1, "wkt is not a LineString in lon/lat", frame["wkt"]))
    else:
        ends = {
            k: pd.to_numeric(frame[k].str.strip(), errors="coerce").to_numpy(dtype=float)
            for k in ("start_lat", "start_lon", "end_lat", "end_lon")
        }
        bad = np.zeros(len(frame), dtype=bool)
        for key, value in ends.items():
            limit = 90 if key.endswith("lat") else 180
            bad |= ~(np.abs(value) <= limit)
        checks.append(Check(bad, "segment ends are not coordinates in degrees"))
        coords = np.stack(
            [
                np.column_stack([ends["start_lon"], ends["start_lat"]]),
                np.column_stack([ends["end_lon"], ends["end_lat"]]),
            ],
            axis=1,
        )
        geometry = shapely.linestrings(np.nan_to_num(coords))
    raise_first_failure(spec.path, checks, first_line=2)
    middle = shapely.line_interpolate_point(geometry, 0.5, normalized=True)
    return pd.DataFrame(
        {
            "segment": segment.to_numpy(dtype=object),
            "geometry": geometry,
            C.LAT: shapely.get_y(middle),
            C.LON: shapely.get_x(middle),
        }
    )


def read_trajectories(
    path: Path, trajectory: str, location: str, time: str | None, order: str | None
) -> pd.DataFrame:
    """A table of trajectories (one row per point): trajectory (str, exactly as written,
    as the user ids of `read_points`), element (str: the location, with its time label
    when a time column is given), in order."""
    needed = {"trajectory": trajectory, "location": location}
    if time:
        needed["time"] = time
    if order:
        needed["order"] = order
    header = read_header(path)
    check_columns(path, header, needed, "evaluate.columns")
    frame = read_text_table(path)
    frame = frame[list(needed.values())].rename(columns={v: k for k, v in needed.items()})
    if frame.empty:
        raise InputError(path, "holds a header but no points")
    ids = frame["trajectory"]
    checks = [
        Check(ids.str.strip().eq("").to_numpy(dtype=bool), "empty trajectory"),
        Check(frame["location"].str.strip().eq("").to_numpy(dtype=bool), "empty location"),
    ]
    if order:
        position = pd.to_numeric(frame["order"], errors="coerce")
        checks.append(Check(position.isna().to_numpy(), "order is not a number", frame["order"]))
    raise_first_failure(path, checks, first_line=2)
    element = frame["location"].str.strip()
    if time:
        element = element + "@" + frame["time"].str.strip()
    codes = pd.factorize(ids)[0]
    within = pd.to_numeric(frame["order"]).to_numpy() if order else np.arange(len(frame))
    rows = np.lexsort((within, codes))
    out = pd.DataFrame(
        {
            "trajectory": ids.to_numpy(dtype=object)[rows],
            "element": element.to_numpy(dtype=object)[rows],
            "location": frame["location"].str.strip().to_numpy(dtype=object)[rows],
        }
    )
    if time:
        out["time"] = frame["time"].str.strip().to_numpy(dtype=object)[rows]
    return out


def read_utility_scores(path: Path, dimensions: list[str]) -> pd.DataFrame:
    """Utility scores per generalization profile: one column per data dimension (values
    as written in a config, e.g. 1h, district) and `score` (a number)."""
    header = read_header(path)
    check_columns(path, header, {d: d for d in [*dimensions, "score"]}, "utility.scores")
    frame = read_csv(path)
    score = pd.to_numeric(frame["score"].str.strip(), errors="coerce")
    raise_first_failure(
        path,
        [Check(score.isna().to_numpy(), "score is not a number", frame["score"])],
        first_line=2,
    )
    out = frame[dimensions].apply(lambda c: c.str.strip())
    out["score"] = score.to_numpy()
    return out

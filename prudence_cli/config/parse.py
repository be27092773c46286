"""YAML config → frozen, typed objects. Every error names the file and the key path.

The contract is DESIGN.md section 7; the README's "Config reference" documents each key.
The objects are in config/schema.py, the typed accessors in config/reader.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prudence_cli.config.dimensions import FORMATS, SEGMENT_FORMATS
from prudence_cli.config.engine import parse_engine
from prudence_cli.config.inputs import parse_input
from prudence_cli.config.knowledge import ATTACK_SCHEMAS, KnowledgeLevel
from prudence_cli.config.loader import read_yaml
from prudence_cli.config.mechanisms import MECHANISMS, Setting
from prudence_cli.config.mobility import parse_mobility
from prudence_cli.config.policy import parse_policy
from prudence_cli.config.reader import Reader
from prudence_cli.config.schema import (
    COVERAGES,
    POINT_MODES,
    Aggregate,
    Area,
    AttackConfig,
    Config,
    DataviewConfig,
    RandomizeConfig,
    SelectConfig,
)
from prudence_cli.errors import shown
from prudence_cli.units import parse_duration, parse_size

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def load_config(path: Path | str) -> Config:
    """Read and validate a config file; raise ConfigError naming the key path."""
    file = Path(path)
    return parse_config(read_yaml(file), file)


def parse_config(data: object, file: Path) -> Config:
    """Validate an already-loaded YAML document (see load_config)."""
    r = Reader(file)
    top = r.mapping(data, "", required={"input", "dataview", "attacks"}, allowed=_TOP_KEYS)
    name = top.get("name", file.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        r.fail("name", f"{shown(name)} is not a name of letters, digits, '.', '_' or '-'")
    input_config = parse_input(r, top["input"])
    select = _parse_select(r, top.get("select", {}), input_config.timezone)
    dataview = _parse_dataview(r, top["dataview"], input_config.format)
    if dataview.format in SEGMENT_FORMATS and input_config.format != "segments":
        r.fail(
            "dataview.format",
            f"{dataview.format!r} dataviews need input.format: segments (map-matched trips)",
        )
    attacks = _parse_attacks(r, top["attacks"], dataview.format)
    coverage = r.choice(top.get("coverage", "locations"), "coverage", COVERAGES)
    if coverage == "segments" and dataview.format not in SEGMENT_FORMATS:
        r.fail("coverage", "segments coverage is for segments dataviews")
    output = r.path(top.get("output", f"catalog/{name}"), "output")
    mechanisms = _parse_mechanisms(r, top.get("mechanisms"), dataview)
    if "randomize" in top and dataview.format != "profiles":
        r.fail("randomize", "is for profiles dataviews (dataview.format: profiles)")
    return Config(
        file=file,
        name=name,
        seed=r.integer(top.get("seed", 0), "seed", minimum=0),
        input=input_config,
        select=select,
        dataview=dataview,
        attacks=attacks,
        coverage=coverage,
        output=output,
        engine=parse_engine(r, top.get("engine", {})),
        crs=r.convert(top["crs"], "crs", _projected_crs) if "crs" in top else None,
        utility_scores=_parse_utility(r, top.get("utility")),
        utility_aggregate=_parse_aggregate(r, top.get("utility"), dataview),
        mobility=parse_mobility(
            r, top.get("utility"), dataview.format, input_config.format, select.points
        ),
        mechanisms=mechanisms,
        randomize=_parse_randomize(r, top.get("randomize", {}), input_config.timezone),
        policy=parse_policy(
            r, top.get("policy"), [lv for a in attacks for lv in a.levels], dataview
        ),
        raw=top,
    )


_TOP_KEYS = {
    "name",
    "seed",
    "input",
    "select",
    "dataview",
    "attacks",
    "coverage",
    "output",
    "engine",
    "crs",
    "utility",
    "mechanisms",
    "randomize",
    "policy",
}


def _projected_crs(text: object) -> str:
    """`crs`: checked by pyproj, loaded only for a config that names one (the catalog
    commands read the config's policy, not its projection)."""
    from prudence_cli.projections import check_projected_crs

    return check_projected_crs(text)


def _parse_select(r: Reader, data: object, timezone: str) -> SelectConfig:
    m = r.mapping(
        data,
        "select",
        allowed={"area", "period", "points", "trips", "min_points", "min_trips"},
    )
    area = _parse_area(r, m["area"]) if "area" in m else None
    start = end = None
    if "period" in m:
        period = r.mapping(m["period"], "select.period", allowed={"start", "end"})
        if "start" in period:
            start = r.timestamp(period["start"], "select.period.start", timezone)
        if "end" in period:
            end = r.timestamp(period["end"], "select.period.end", timezone)
        if start is not None and end is not None and end <= start:
            r.fail("select.period", "end must be after start (the period is [start, end))")
    trips = r.mapping(m.get("trips", {}), "select.trips", allowed={"max_gap"})
    max_gap = r.convert(trips.get("max_gap", "20min"), "select.trips.max_gap", parse_duration)
    return SelectConfig(
        area=area,
        start=start,
        end=end,
        points=r.choice(m.get("points", "all"), "select.points", POINT_MODES),
        max_gap=max_gap,
        min_points=r.integer(m.get("min_points", 1), "select.min_points", minimum=1),
        min_trips=r.integer(m.get("min_trips", 0), "select.min_trips", minimum=0),
    )


def _parse_area(r: Reader, data: object) -> Area:
    m = r.mapping(data, "select.area", allowed={"bbox", "wkt", "geojson"})
    if len(m) != 1:
        r.fail("select.area", "give exactly one of bbox, wkt or geojson")
    kind, value = next(iter(m.items()))
    key = f"select.area.{kind}"
    if kind == "bbox":
        if not (isinstance(value, list) and len(value) == 4):
            r.fail(key, "must be [min_lon, min_lat, max_lon, max_lat]")
        nums = [r.number(v, f"{key}[{i}]") for i, v in enumerate(value)]
        min_lon, min_lat, max_lon, max_lat = nums
        if not (-180 <= min_lon < max_lon <= 180 and -90 <= min_lat < max_lat <= 90):
            r.fail(key, f"{nums} is not [min_lon, min_lat, max_lon, max_lat] in degrees")
        return Area(kind="bbox", bbox=(min_lon, min_lat, max_lon, max_lat))
    if kind == "wkt":
        import shapely  # here: loading GEOS costs every command that reads a catalog

        text = r.string(value, key)
        try:
            geom = shapely.from_wkt(text)
        except shapely.errors.GEOSException as exc:
            r.fail(key, f"not valid WKT: {exc}")
        if geom.geom_type not in ("Polygon", "MultiPolygon"):
            r.fail(key, f"must be a Polygon or MultiPolygon in lon/lat, not a {geom.geom_type}")
        return Area(kind="wkt", wkt=text)
    return Area(kind="geojson", path=r.path(value, key))


def _parse_dataview(r: Reader, data: object, input_format: str) -> DataviewConfig:
    m = r.mapping(data, "dataview", required={"format"}, allowed={"format", "dimensions", "layers"})
    fmt = r.choice(m["format"], "dataview.format", tuple(FORMATS))
    spec = FORMATS[fmt]
    dims_data = r.mapping(
        m.get("dimensions", {}), "dataview.dimensions", allowed=set(spec.dimensions)
    )
    dimensions = []
    for name, dim in spec.dimensions.items():
        key = f"dataview.dimensions.{name}"
        if name not in dims_data:
            if dim.default is None:
                if name == "grid" and input_format == "gps" and "regions" not in dims_data:
                    r.fail(key, "a gps input needs a grid size, e.g. grid: [500m]")
                continue
            dimensions.append((name, dim.default))
            continue
        values = dims_data[name]
        if not isinstance(values, list):
            values = [values]
        if not values:
            r.fail(key, "is empty: give at least one value")
        parsed = tuple(r.convert(v, f"{key}[{i}]", dim.parse) for i, v in enumerate(values))
        if len(set(parsed)) != len(parsed):
            r.fail(key, "repeats a value")
        dimensions.append((name, parsed))
    layers_data = r.mapping(m.get("layers", {}), "dataview.layers")
    layers = tuple(
        (name, r.path(path, f"dataview.layers.{name}")) for name, path in layers_data.items()
    )
    names = dict(dimensions)
    for i, layer in enumerate(names.get("regions", ())):
        if layer not in layers_data:
            r.fail(
                f"dataview.dimensions.regions[{i}]",
                f"{shown(layer)} is not a layer of dataview.layers "
                f"({', '.join(layers_data) or 'none declared'})",
            )
    if "grid" in names and "regions" in names:
        r.fail("dataview.dimensions", "give grid or regions, not both")
    return DataviewConfig(format=fmt, dimensions=tuple(dimensions), layers=layers)


def _parse_attacks(r: Reader, data: object, view_format: str) -> tuple[AttackConfig, ...]:
    if not isinstance(data, list) or not data:
        r.fail("attacks", "must be a non-empty list of {attack: NAME, knowledge: {...}}")
    attacks: list[AttackConfig] = []
    seen: dict[KnowledgeLevel, str] = {}
    for i, item in enumerate(data):
        key = f"attacks[{i}]"
        m = r.mapping(item, key, required={"attack"}, allowed={"attack", "knowledge"})
        name = r.choice(m["attack"], f"{key}.attack", tuple(ATTACK_SCHEMAS))
        attack = ATTACK_SCHEMAS[name]
        if view_format not in attack.formats:
            valid = ", ".join(sorted(attack.formats))
            r.fail(
                f"{key}.attack",
                f"{name!r} does not apply to {view_format!r} dataviews (it needs: {valid})",
            )
        knowledge = r.mapping(
            m.get("knowledge", {}), f"{key}.knowledge", allowed={d.name for d in attack.knowledge}
        )
        values: dict[str, tuple[Any, ...]] = {}
        for dim in attack.knowledge:
            dkey = f"{key}.knowledge.{dim.name}"
            raw = knowledge.get(dim.name, list(dim.default))
            raw_list = raw if isinstance(raw, list) else [raw]
            if not raw_list:
                r.fail(dkey, "is empty: give at least one value")
            parsed = tuple(r.convert(v, f"{dkey}[{j}]", dim.parse) for j, v in enumerate(raw_list))
            if len(set(parsed)) != len(parsed):
                r.fail(dkey, "repeats a value")
            values[dim.name] = parsed
        levels = attack.levels(values)
        for level in levels:
            if level in seen:
                r.fail(key, f"level {level.label} is already declared by {seen[level]}")
            seen[level] = key
        attacks.append(AttackConfig(attack=name, levels=levels))
    return tuple(attacks)


def _parse_utility(r: Reader, data: object) -> Path | None:
    if data is None:
        return None
    m = r.mapping(data, "utility", allowed={"scores", "aggregate", "measures", "thresholds"})
    if "scores" in m and "aggregate" in m:
        r.fail("utility", "give scores (a CSV of expert scores) or aggregate, not both")
    if "scores" not in m:
        return None
    return r.path(m["scores"], "utility.scores")


def _parse_aggregate(r: Reader, data: object, dataview: DataviewConfig) -> Aggregate | None:
    """utility.aggregate: {regions: LAYER | grid: SIZE, time: DURATION} on bins views."""
    if not isinstance(data, dict) or "aggregate" not in data:
        return None
    key = "utility.aggregate"
    if dataview.format != "bins":
        r.fail(key, "is the error of a declared aggregate over bins dataviews (format: bins)")
    m = r.mapping(data["aggregate"], key, required={"time"}, allowed={"regions", "grid", "time"})
    if ("regions" in m) == ("grid" in m):
        r.fail(key, "give the aggregate's space as regions: LAYER or grid: SIZE")
    layer = None
    if "regions" in m:
        layer = r.string(m["regions"], f"{key}.regions")
        if layer not in dict(dataview.layers):
            r.fail(f"{key}.regions", f"{shown(layer)} is not a layer of dataview.layers")
    grid = r.convert(m["grid"], f"{key}.grid", parse_size) if "grid" in m else None
    seconds = r.convert(m["time"], f"{key}.time", parse_duration)
    return Aggregate(grid=grid, layer=layer, seconds=seconds)


def _parse_mechanisms(r: Reader, data: object, dataview: DataviewConfig) -> tuple[Setting, ...]:
    """`mechanisms:` a list of {mechanism, epsilon: [...], neighbourhood: [all, n_i, ...],
    p: flip probability (randomized response only)}; one setting per combination."""
    if dataview.format != "profiles":
        if data is not None:
            r.fail("mechanisms", "is for profiles dataviews (dataview.format: profiles)")
        return ()
    if not isinstance(data, list) or not data:
        r.fail(
            "mechanisms",
            "a profiles dataview needs a non-empty list of "
            "{mechanism: randomized_response|laplace|geometric, epsilon: [...]}",
        )
    kinds = set(dict(dataview.dimensions).get("profile", ("boolean",)))
    settings: list[Setting] = []
    for i, item in enumerate(data):
        key = f"mechanisms[{i}]"
        m = r.mapping(
            item,
            key,
            required={"mechanism", "epsilon"},
            allowed={"mechanism", "epsilon", "neighbourhood", "p"},
        )
        name = r.choice(m["mechanism"], f"{key}.mechanism", tuple(MECHANISMS))
        if MECHANISMS[name] not in kinds:
            r.fail(
                f"{key}.mechanism",
                f"{name!r} randomizes {MECHANISMS[name]} profiles, and "
                f"dataview.dimensions.profile has only {', '.join(sorted(kinds))}",
            )
        epsilons = _number_list(r, m["epsilon"], f"{key}.epsilon")
        hoods: list[int | None] = []
        raw_hoods = m.get("neighbourhood", ["all"])
        for j, value in enumerate(raw_hoods if isinstance(raw_hoods, list) else [raw_hoods]):
            if value == "all":
                hoods.append(None)
            else:
                hoods.append(r.integer(value, f"{key}.neighbourhood[{j}]", minimum=0))
        flip = m.get("p")
        if flip is not None and name != "randomized_response":
            r.fail(f"{key}.p", "is the flip probability of randomized_response only")
        for j, eps in enumerate(epsilons):
            if eps <= 0:
                r.fail(f"{key}.epsilon[{j}]", f"{eps:g} is not a positive privacy parameter")
            for hood in hoods:
                try:
                    setting = Setting(
                        name,
                        eps,
                        hood,
                        None if flip is None else r.number(flip, f"{key}.p"),
                    )
                except ValueError as exc:
                    r.fail(f"{key}.p", str(exc))
                if setting in settings:
                    r.fail(key, f"repeats the setting {name} epsilon={eps:g}")
                settings.append(setting)
    return tuple(settings)


def _number_list(r: Reader, data: object, key: str) -> list[float]:
    values = data if isinstance(data, list) else [data]
    if not values:
        r.fail(key, "is empty: give at least one value")
    return [r.number(v, f"{key}[{j}]") for j, v in enumerate(values)]


def _parse_randomize(r: Reader, data: object, timezone: str) -> RandomizeConfig:
    m = r.mapping(data, "randomize", allowed={"users", "leak", "max_error", "split"})
    users = m.get("users", 1000)
    leak = r.mapping(m.get("leak", {}), "randomize.leak", allowed={"users", "locations"})
    shares = {}
    for name in ("users", "locations"):
        value = r.number(leak.get(name, 0.5), f"randomize.leak.{name}")
        if not 0 < value <= 1:
            r.fail(f"randomize.leak.{name}", f"{value:g} is not a share in (0, 1]")
        shares[name] = value
    max_error = r.number(m.get("max_error", 0.1), "randomize.max_error")
    if max_error < 0:
        r.fail("randomize.max_error", f"{max_error:g} is not a relative error ≥ 0")
    split = m.get("split", "middle")
    return RandomizeConfig(
        users=None if users == "all" else r.integer(users, "randomize.users", minimum=2),
        leak_users=shares["users"],
        leak_locations=shares["locations"],
        max_error=max_error,
        split=None if split == "middle" else r.timestamp(split, "randomize.split", timezone),
    )

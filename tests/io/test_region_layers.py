"""Regions layers (GeoJSON polygons, io/geojson.read_region_layer): a layer that cannot be
used is refused with the file and what is wrong, exit 2 — and so is one that no selected
point falls in, for the profiles that would be empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from prudence_cli.errors import InputError
from prudence_cli.io.geojson import read_region_layer

SQUARE = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}
ROOT = Path(__file__).parents[2]


def _feature(geometry=SQUARE, properties=None):
    return {"type": "Feature", "geometry": geometry, "properties": properties or {"name": "a"}}


def _layer(*features):
    return {"type": "FeatureCollection", "features": list(features)}


@pytest.mark.parametrize(
    ("layer", "message"),
    [
        ({"type": "FeatureCollection", "features": 5}, "`features` is not a list"),
        (
            _layer(_feature(properties=[1])),
            "feature 0: its `properties` are not an object",
        ),
        (
            {
                "type": "FeatureCollection",
                "features": [_feature({"type": "Polygon", "coordinates": []})],
            },
            "feature 0 is an empty Polygon",
        ),
        (
            {
                "type": "FeatureCollection",
                "features": [_feature({"type": "Point", "coordinates": [0, 0]})],
            },
            "feature 0 is a Point; regions are polygons",
        ),
        ({"type": "FeatureCollection", "features": []}, "holds no polygon feature"),
    ],
)
def test_unusable_layers_are_refused_with_the_file(tmp_path, layer, message):
    path = tmp_path / "layer.geojson"
    path.write_text(json.dumps(layer))
    with pytest.raises(InputError, match=message) as refused:
        read_region_layer(path)
    assert str(refused.value).startswith(str(path))


def test_profiles_in_regions_no_point_falls_in_are_refused(tmp_path):
    """A layer far from the data: every profile would be empty (the sweep draws its
    sample from nobody). Exit 2, the layer named, no catalog."""
    far = _layer(_feature())  # at 0°N 0°E
    (tmp_path / "far.geojson").write_text(json.dumps(far))
    config = (ROOT / "configs" / "randomize.yaml").read_text()
    config = config.replace("../sample_data", str(ROOT / "sample_data"))
    config = config.replace(
        "  format: profiles\n",
        f"  format: profiles\n  layers: {{far: {tmp_path / 'far.geojson'}}}\n",
    ).replace("  dimensions:\n", "  dimensions:\n    regions: [far]\n", 1)
    (tmp_path / "r.yaml").write_text(config)
    out = tmp_path / "catalog"
    result = CliRunner().invoke(main, ["assess", str(tmp_path / "r.yaml"), "-q", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "far.geojson: no selected point falls in any of its 1 regions" in result.stderr
    assert not out.exists()

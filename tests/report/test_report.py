"""The HTML report: the verdict first, self-contained, every chart present, opened in a
real headless browser (Debian's chromium, driven by Playwright) with no console error and
the verdict and the map on screen; PNG export."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from tests.explore.test_explore import CONFIG

ROOT = Path(__file__).parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory, sample_gps):
    folder = tmp_path_factory.mktemp("report")
    (folder / "x.yaml").write_text(CONFIG.format(path=sample_gps))
    result = CliRunner().invoke(
        main, ["assess", str(folder / "x.yaml"), "--quiet", "--out", str(folder / "cat")]
    )
    assert result.exit_code == 0, result.output
    return folder / "cat"


ARGS = ("--max-risk", "0.5", "--where", "visits=half")


def front_and_chosen(catalog) -> tuple[set[str], str]:
    """The Pareto front of `catalog best` under the report's policy, and its top dataview
    whose release keeps anyone."""
    result = CliRunner().invoke(
        main, ["catalog", "best", "--catalog", str(catalog), *ARGS, "--format", "json"]
    )
    rows = json.loads(result.stdout)
    chosen = next(r["dataview"] for r in rows if r["users_released"] > 0)
    return {r["dataview"] for r in rows if r["pareto"] == "front"}, chosen


def expected_charts(catalog) -> int:
    """1 map, 2 charts of mobility measures (the release; D_t by threshold), 1 Pareto
    chart, 5 planes (one per attack level: 3 counted, 2 folded), and RAC curves per
    attack for the front's dataviews and the recommended one."""
    front, chosen = front_and_chosen(catalog)
    return 1 + 2 + 1 + 5 + 2 * len(front | {chosen})


@pytest.fixture(scope="module")
def report(catalog, tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = CliRunner().invoke(
        main, ["report", "--catalog", str(catalog), "--out", str(out), *ARGS]
    )
    assert result.exit_code == 0, result.output
    assert f"Report with {expected_charts(catalog)} charts" in result.stderr
    return out


def test_report_opens_with_the_verdict(report, catalog):
    page = report.read_text()
    _, chosen = front_and_chosen(catalog)
    verdict = page[page.index('id="verdict"') : page.index('id="summary"')]
    assert page.index('id="verdict"') < page.index('id="summary"') < page.index('id="map"')
    assert "tolerated risk <b>R = 0.5</b> against 3 counted attack levels" in verdict
    assert f"Recommended dataview <b>{chosen}</b>" in verdict
    assert f"prudence sanitize --dataview {chosen} --threshold 0.5" in verdict
    # the levels assessed but not counted are named when they single people out
    release = CliRunner().invoke(
        main,
        [
            "sanitize",
            "--catalog",
            str(catalog),
            "--dataview",
            chosen,
            *ARGS,
            "--out",
            str(report.parent / "rel"),
        ],
    )
    report_json = json.loads((report.parent / "rel" / "report.json").read_text())
    listed = verdict.partition("Not covered by this release")[2].partition("</ul>")[0]
    if all(level["covered"] for level in report_json["levels_assessed"]):
        assert "stays at or below 0.5 on the released data" in verdict
    for level in report_json["levels_assessed"]:
        assert (f"<code>{level['level']}</code>" in listed) == (not level["covered"]), level
    assert release.exit_code == 0
    people = f"{report_json['users']['released']:,} of {report_json['users']['in_view']:,} people"
    assert people in verdict
    assert report.stat().st_size < 1_000_000


def test_report_is_self_contained(report, catalog):
    page = report.read_text()
    assert page.count('<img class="chart"') == expected_charts(catalog)
    # nothing fetched from elsewhere: every src is a data URI, no external link or script
    assert all(src.startswith("data:") for src in re.findall(r'src="([^"]+)"', page))
    assert "http://" not in page.replace("http://www.w3.org", "")
    assert "<script" not in page
    for section in (
        "verdict",
        "summary",
        "map",
        "mobility",
        "pareto",
        "planes",
        "curves",
        "releases",
    ):
        assert f'id="{section}"' in page
    assert page.count('class="how"') == 5
    assert '<section id="not-counted"><details>' in page
    assert "RdYlGn" not in page


def test_png_export(catalog, tmp_path):
    out = tmp_path / "charts"
    result = CliRunner().invoke(
        main, ["report", "--catalog", str(catalog), "--format", "png", "--out", str(out), *ARGS]
    )
    assert result.exit_code == 0
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == expected_charts(catalog) and all(f.endswith(".png") for f in files)
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium: `make test` installs Debian's "
    "chromium where apt-get can (apt-get install chromium)",
)
def test_report_in_a_headless_browser(report, catalog, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("file:", "data:"))
                else problems.append(f"network request to {r.url}")
            ),
        )
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        loaded = page.eval_on_selector_all(
            "img.chart", "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)"
        )
        # the answer is on the first screen; the map is drawn and visible once scrolled to
        verdict_box = page.locator("div.verdict").bounding_box()
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        the_map = page.locator("#map img.chart")
        the_map.scroll_into_view_if_needed()
        map_visible = the_map.is_visible()
        map_box = the_map.bounding_box()
        page.screenshot(path=str(tmp_path / "map.png"), full_page=False)
        browser.close()
    assert problems == []
    assert len(loaded) == expected_charts(catalog) and all(loaded)
    assert verdict_box is not None and verdict_box["y"] + verdict_box["height"] < 900
    assert map_visible and map_box is not None and map_box["width"] > 400
    assert shot.stat().st_size > 10_000


def test_report_of_a_disclosure_catalog(tmp_path, monkeypatch):
    """Bins dataviews over regions (configs/unicity.yaml): the verdict, the map of the
    regions as points, the disclosure table."""
    root = Path(__file__).parent.parent.parent
    for name in ("configs", "sample_data"):
        shutil.copytree(root / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["assess", "configs/unicity.yaml", "-q"]).exit_code == 0
    result = CliRunner().invoke(main, ["report", "--out", "u.html", "--max-risk", "0.5"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "u.html").read_text()
    assert 'id="verdict"' in page and 'id="disclosure"' in page


def test_report_tells_the_analyst_what_the_release_keeps(report, catalog):
    page = report.read_text()
    assert page.index('id="map"') < page.index('id="mobility"') < page.index('id="pareto"')
    section = page[page.index('id="mobility"') :]
    section = section[: section.index("</section>")]
    _, chosen = front_and_chosen(catalog)
    rows = json.loads(
        CliRunner()
        .invoke(main, ["catalog", "best", "--catalog", str(catalog), *ARGS, "--format", "json"])
        .stdout
    )
    best = next(r for r in rows if r["dataview"] == chosen)
    people = f"{best['users_in_view']:,} → {best['users_released']:,}"
    # a presence view: no trip measures; every person measure counts the released people
    for measure in ("radius of gyration (m)", "mobility entropy", "visits per person"):
        assert re.search(rf"<td>{re.escape(measure)}</td><td>people</td>.*?{people}", section)
    assert "longest trip" not in section and "location entropy" in section
    assert "Pearson" in section and 'alt="What a release of' in section
    assert f'alt="Each measure on the people of {chosen} at risk ≤ t (D_t)"' in section


def test_a_release_that_keeps_none_of_the_data_is_a_no(tmp_path):
    """The shipped clusters config's dataview at frequency 5 and 50 m: at R = 0.3 its
    release keeps people but not one clustered segment — the verdict says no."""
    config = (ROOT / "configs" / "clusters.yaml").read_text()
    config = config.replace("../sample_data", str(ROOT / "sample_data"))
    config = config.replace("[2, 3, 5]", "[5]").replace("[50m, 100m, 200m]", "[50m]")
    (tmp_path / "c.yaml").write_text(config)
    runner = CliRunner()
    out = tmp_path / "cat"
    assessed = runner.invoke(main, ["assess", str(tmp_path / "c.yaml"), "-q", "--out", str(out)])
    assert assessed.exit_code == 0, assessed.output
    html = tmp_path / "r.html"
    made = runner.invoke(main, ["report", "--catalog", str(out), "--out", str(html)])
    assert made.exit_code == 0, made.output
    verdict = html.read_text().partition('id="verdict"')[2].partition("</section>")[0]
    assert "<b>No.</b> The best release keeps none of the segments" in verdict
    assert "Yes" not in verdict and 'class="verdict no"' in verdict
    assert "0.0% of the segments" in verdict  # and what it keeps: people only
    # `catalog best` says it too: people kept, none of the data
    shown = ["catalog", "best", "--catalog", str(out), "--max-risk", "0.3", "--format", "json"]
    best = runner.invoke(main, shown)
    assert best.exit_code == 0, best.output
    assert "No dataview keeps any of its segments after suppression" in best.stderr

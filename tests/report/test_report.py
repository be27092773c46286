"""The HTML report: self-contained, every chart present, opened in a real headless
browser (Debian's chromium, driven by Playwright) with no console error; PNG export."""

from __future__ import annotations

import re
import shutil

import pytest
from click.testing import CliRunner

from prudence_cli.cli import main
from tests.explore.test_explore import CONFIG

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


# 6 dataviews: 5 attack levels → 5 plane charts, 6 × 2 attacks curve charts, 1 Pareto
CHARTS = 5 + 12 + 1


@pytest.fixture(scope="module")
def report(catalog, tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = CliRunner().invoke(
        main, ["report", "--catalog", str(catalog), "--out", str(out), "--where", "visits=half"]
    )
    assert result.exit_code == 0, result.output
    assert f"Report with {CHARTS} charts" in result.stderr
    return out


def test_report_is_self_contained(report):
    page = report.read_text()
    assert page.count('<img class="chart"') == CHARTS
    # nothing fetched from elsewhere: every src is a data URI, no external link or script
    assert all(src.startswith("data:") for src in re.findall(r'src="([^"]+)"', page))
    assert "http://" not in page.replace("http://www.w3.org", "")
    assert "<script" not in page
    for section in ("summary", "pareto", "planes", "curves", "releases"):
        assert f'id="{section}"' in page
    assert page.count('class="how"') == 3


def test_png_export(catalog, tmp_path):
    out = tmp_path / "charts"
    result = CliRunner().invoke(
        main, ["report", "--catalog", str(catalog), "--format", "png", "--out", str(out)]
    )
    assert result.exit_code == 0
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == CHARTS and all(f.endswith(".png") for f in files)
    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium: `make test` installs Debian's "
    "chromium where apt-get can (apt-get install chromium)",
)
def test_report_in_a_headless_browser(report, tmp_path):
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
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    assert problems == []
    assert len(loaded) == CHARTS and all(loaded)
    assert shot.stat().st_size > 10_000

"""Progress bars (issue 16): on stderr, only on a terminal and without -q, fed by every
long step — reading the input (bytes of its size), the fixpoint per dataview, the charts
of the report, the choice and re-assessment of a release, each h of evaluate."""

from __future__ import annotations

import gzip
import re
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from rich.progress import Progress

from prudence_cli.catalog import open_catalog
from prudence_cli.catalog.query import catalog_policy, counted_levels
from prudence_cli.cli import progress as bars
from prudence_cli.cli.bar import _Count
from prudence_cli.cli.progress import progress_bar
from prudence_cli.config.evaluate import EvaluationSettings, TrajectoryColumns
from prudence_cli.evaluation import run_evaluation
from prudence_cli.io.points import read_points
from prudence_cli.io.specs import ColumnMap, PointsSpec
from prudence_cli.report.page import write_report
from prudence_cli.sanitize.release import SanitizeRequest, run_sanitize
from tests.assessed import run


class Heard:
    """A progress callback that keeps what it hears."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def __call__(self, done: int, total: int, message: str, unit: str = "") -> None:
        self.calls.append((done, total, message))

    def messages(self, start: str) -> list[str]:
        return [m for _, _, m in self.calls if m.startswith(start)]


def test_no_bar_with_quiet_or_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    with progress_bar(quiet=True) as bar:
        assert bar is None
    with progress_bar(quiet=False) as bar:  # pytest's stderr is no terminal: no bar,
        assert bar is not None and not bars._live
        bar(1, 2, "reading x.csv")  # and no line from a command done within LOG_EVERY
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich: a terminal
    with progress_bar(quiet=False) as bar:
        assert bar is not None
        bar(1, 2, "reading x.csv")
        assert bars._live  # messages meanwhile go above the bar
    assert not bars._live


def test_a_log_gets_the_step_a_command_is_at_every_log_every_seconds(monkeypatch, capsys):
    """Where stderr is not a terminal, a line every LOG_EVERY seconds while the command
    runs, of the step it is at; none before a step is said, none once it is done."""
    monkeypatch.setattr(bars, "LOG_EVERY", 0.05)
    with progress_bar(quiet=False) as step:
        assert step is not None
        time.sleep(0.3)  # no step said yet: nothing to tell
        assert capsys.readouterr().err == ""
        step(3, 1_200, "d1 grid=250m time=1h visit[h=2]")
        time.sleep(0.3)
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(
        re.fullmatch(r"\[0m 0\ds\] d1 grid=250m time=1h visit\[h=2\] \(3/1,200\)", line)
        for line in lines
    ), lines
    time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_a_log_whose_reader_left_gets_no_more_lines(monkeypatch):
    """stderr closed under the command (`2>&1 | head -1`): the lines stop, quietly."""
    tried: list[str] = []

    def closed(text: str) -> None:
        tried.append(text)
        raise BrokenPipeError(32, "Broken pipe")

    failed: list[BaseException | None] = []
    monkeypatch.setattr(bars, "LOG_EVERY", 0.02)
    monkeypatch.setattr(bars, "message", closed)
    with pytest.MonkeyPatch.context() as hook:  # undone before pytest's own hook is
        hook.setattr(threading, "excepthook", lambda raised: failed.append(raised.exc_value))
        with progress_bar(quiet=False) as step:
            assert step is not None
            step(1, 2, "reading x.csv")
            time.sleep(0.3)
    assert len(tried) == 1 and failed == []  # the thread ended, raising nothing


def test_a_log_line_says_the_time_the_step_and_how_far():
    """The time since the command began, the step, and its count (sizes of bytes read;
    none without a total)."""
    step = bars._Step()
    assert step.line() is None
    step.began -= 725.4  # begun 12 minutes and 5 seconds ago
    step(1_500_000, 4_000_000, "reading x.csv", "bytes")
    assert step.line() == "[12m 05s] reading x.csv (1.5 MB/4.0 MB)"
    step(3, 1_200, "d1 grid=250m time=1h visit[h=2]")
    assert step.line() == "[12m 05s] d1 grid=250m time=1h visit[h=2] (3/1,200)"
    step(0, 0, "choosing the dataview")
    assert step.line() == "[12m 05s] choosing the dataview"


def test_a_long_assessment_says_where_it_is_in_its_log(project, monkeypatch):
    monkeypatch.setattr(bars, "LOG_EVERY", 0.01)
    result = run("assess", "demo.yaml")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    steps = [line for line in lines if line.startswith("[0m")]
    assert any("presence" in line and "/" in line for line in steps), lines
    assert lines[-1].startswith("Catalog written to")  # the last: none after the command
    quiet = run("assess", "demo.yaml", "-q")
    assert quiet.exit_code == 0 and quiet.output == ""


def test_the_count_shows_sizes_when_reading_bytes():
    with Progress() as progress:
        task = progress.add_task("reading", total=4_000_000, completed=1_500_000, unit="bytes")
        assert str(_Count().render(progress.tasks[task])) == "1.5 MB/4.0 MB"
        steps = progress.add_task("assessing", total=1_200, completed=3)
        assert str(_Count().render(progress.tasks[steps])) == "3/1,200"
        unknown = progress.add_task("choosing", total=None)
        assert str(_Count().render(progress.tasks[unknown])) == ""


def test_assess_draws_its_bar_on_stderr_on_a_terminal(project, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    result = run("assess", "demo.yaml")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "done" in result.stderr  # the bar's last state
    assert "Catalog written to" in result.stderr
    quiet = run("assess", "demo.yaml", "-q")
    assert quiet.exit_code == 0 and quiet.output == ""


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_reading_reports_the_bytes_read_of_the_file_size(sample_gps, tmp_path, suffix):
    path = tmp_path / f"points{suffix}"
    if suffix == ".csv.gz":
        path.write_bytes(gzip.compress(sample_gps.read_bytes()))
    elif suffix == ".parquet":
        pd.read_csv(sample_gps, dtype=str).to_parquet(path)
    else:
        path.write_bytes(sample_gps.read_bytes())
    spec = PointsSpec(path=path, columns=ColumnMap(user="uid", time="datetime", lon="lng"))
    heard: list[tuple[int, int]] = []
    read_points(spec, lambda done, size: heard.append((done, size)))
    size = path.stat().st_size
    assert heard and heard[-1] == (size, size)
    assert all(0 < done <= size and total == size for done, total in heard)


def test_the_long_steps_report_their_progress(catalog, tmp_path):
    opened = open_catalog(catalog)
    policy, source = catalog_policy(opened, 0.5, (), ())
    levels = counted_levels(opened)
    heard = Heard()
    write_report(opened, tmp_path / "r.html", "html", policy, source, levels, (), heard)
    dataviews = len(opened.dataviews)
    assert len(heard.messages("suppressing")) == dataviews  # the fixpoint of each
    drawn = heard.messages("drawing")
    assert drawn and [d for d, t, m in heard.calls if m.startswith("drawing")] == list(
        range(len(drawn))
    )
    heard = Heard()
    # h=2 is re-assessed on the release
    request = SanitizeRequest(0.5, where=("h=1",), method="suppress-locations")
    result = run_sanitize(opened, request, tmp_path / "rel", work=heard)
    assert result.met
    assert len(heard.messages("choosing the dataview")) == dataviews
    assert heard.messages("assessing") == [
        "assessing presence[h=2,visits=exact]",
        "assessing presence[h=2,visits=none]",
    ]


def test_evaluate_reports_reading_and_each_h(tmp_path):
    rows = [(t, f"L{(t + i) % 5}") for t in range(6) for i in range(3)]
    pd.DataFrame(rows, columns=["trajectory", "location"]).to_csv(tmp_path / "o.csv", index=False)
    heard = Heard()
    settings = EvaluationSettings(max_h=2)
    run_evaluation(
        tmp_path / "o.csv",
        tmp_path / "o.csv",
        TrajectoryColumns(),
        settings,
        Path(tmp_path / "ev"),
        heard,
    )
    assert heard.messages("reading") == ["reading o.csv", "reading o.csv"]
    assert heard.messages("attacks with") == ["attacks with h = 1", "attacks with h = 2"]


def test_sample_reports_each_person_made():
    from prudence_cli.sample import generate_gps

    heard = Heard()
    quiet = generate_gps(users=3, days=1, seed=5)
    shown = generate_gps(users=3, days=1, seed=5, progress=heard)
    pd.testing.assert_frame_equal(quiet, shown)  # the same sample, whether watched or not
    assert [(d, t) for d, t, _ in heard.calls] == [(0, 3), (1, 3), (2, 3)]

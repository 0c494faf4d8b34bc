"""The HTML report: self-contained, escaped, and rendered by a real browser (headless
Chromium, which `make install-test` installs; a missing one fails this test)."""

from __future__ import annotations

from pathlib import Path

from browser_support import PNG, browser
from check_fixtures.support import SLOPPY, check
from strictmcp.check.cases import Case
from strictmcp.check.report_html import render_html
from strictmcp.check.results import CaseResult, CheckReport, ToolReport


def test_report_renders_in_chromium(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    result = check(
        "--cases",
        "2",
        "--call",
        "--format",
        "html",
        "--output",
        str(report),
        "--",
        *SLOPPY,
        "--faults",
    )
    assert result.exit_code == 1, result.stderr
    html = report.read_text(encoding="utf-8")
    # Self-contained: nothing to fetch, nothing to run.
    assert "<script" not in html
    assert 'src="' not in html
    assert 'href="http' not in html
    screenshot = tmp_path / "report.png"
    shot = browser(
        tmp_path / "profile-1",
        f"--screenshot={screenshot}",
        "--window-size=1280,2000",
        report.as_uri(),
    )
    assert screenshot.is_file(), shot.stderr
    data = screenshot.read_bytes()
    assert data.startswith(PNG)
    assert len(data) > 20_000  # a blank page of that size is a few kilobytes
    dom = browser(tmp_path / "profile-2", "--dump-dom", report.as_uri()).stdout
    assert "<title>strictmcp check report: check-fixture" in dom
    assert 'id="verdict-matrix"' in dom
    assert '<th scope="row" class="tool">crash_long</th>' in dom
    assert 'class="case fail"' in dom
    assert 'class="reproducer"' in dom
    assert "strictmcp check --seed 0 --cases 2 --call --tool extra_args --" in dom
    assert "accepted invalid input" in dom


def test_everything_is_escaped() -> None:
    hostile = '<script>alert("x")</script>'
    case = Case("extra-property", f"/{hostile}", hostile, {hostile: hostile}, "invalid")
    tool = ToolReport(hostile, [CaseResult(1, case, False, "fail", (hostile,))], [hostile])
    report = CheckReport(
        target=["server", hostile],
        via_url=False,
        mode="call",
        seed=0,
        per_kind=1,
        server={"name": hostile},
        tools=[tool],
    )
    html = render_html(report)
    assert "<script" not in html
    assert "&lt;script&gt;" in html

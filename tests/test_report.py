"""``fabricsim report``: one self-contained HTML page for a run or a sweep, checked in a
real headless browser (Chromium and its driver from Debian's packages, driven by
Selenium). ``scripts/test`` installs them under CI; elsewhere the browser tests are
skipped with a message when they are missing.
"""

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import fabricsim
from conftest import cli
from fabricsim import _core
from fabricsim.fabric_view import view_data
from fabricsim.plots import draw_all, sample_interval_ns

#: A leaf-spine run with a cable down from 10 to 50 us and loss on another from 20 us.
FAULTY = {
    "name": "faulty",
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
    "workload": {"kind": "permutation", "size": "1MB"},
    "faults": [{"at": "10us", "kind": "link_down", "link": "leaf[0].up[0]"},
               {"at": "50us", "kind": "link_up", "link": "leaf[0].up[0]"},
               {"at": "20us", "kind": "link_loss", "link": "leaf[1].up[1]", "loss": 0.01}],
    "output": {"sample_interval": "5us", "plots": False},
}


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("Selenium is not installed (pip install selenium; CI installs it)")
    driver = shutil.which("chromedriver")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if driver is None or binary is None:
        pytest.skip("Chromium or its driver is not installed (apt-get install chromium chromium-driver; CI installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1300,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver), options=options)
    yield d
    d.quit()


def open_page(browser, path: Path) -> dict:
    """Loads a report and returns what rendered: every image's load state and size, every
    table's rows, and the browser's errors."""
    browser.get(path.resolve().as_uri())
    state = browser.execute_script("""
        return {
          images: Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.alt]),
          tables: Array.from(document.querySelectorAll('table')).map(t => [t.className, t.tBodies[0].rows.length,
                  t.offsetHeight, t.tBodies[0].rows[0] ? t.tBodies[0].rows[0].cells.length : 0]),
          sections: Array.from(document.querySelectorAll('section h2')).map(h => h.textContent),
        };""")
    state["errors"] = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    return state


def assert_renders(state: dict) -> None:
    assert not state["errors"], state["errors"]
    assert state["images"], "no plot on the page"
    for complete, width, height, alt in state["images"]:
        assert complete and width > 100 and height > 100, alt
    for cls, rows, height, cells in state["tables"]:
        assert rows >= 1 and cells >= 2 and height > 0, cls


def self_contained(page: str) -> None:
    """Nothing the page would fetch: every src and href is inline data or an anchor."""
    outside = re.findall(r"""(?:src|href)\s*=\s*['"](?!data:|#)([^'"]*)""", page)
    assert not outside, outside
    assert "<link" not in page and "@import" not in page


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "faulty"
    fabricsim.run(FAULTY).save(out)
    return out


def test_a_runs_report_renders_its_plots_tables_and_fabric(browser, faulty_run, tmp_path):
    page = fabricsim.report(faulty_run, tmp_path / "r.html")
    self_contained(page.read_text())
    state = open_page(browser, page)
    assert_renders(state)
    assert state["sections"] == ["Summary", "Fabric", "Plots", "Tables", "Scenario"]
    expected = draw_all(fabricsim.load(faulty_run), tmp_path)
    assert len(state["images"]) == len(expected) >= 4
    assert {c for c, *_ in state["tables"]} == {"summary", ""} and len(state["tables"]) == 3  # + flows, faults

    js = "return Array.from(document.querySelectorAll('#fabric-svg line.cable')).map(l => [l.firstChild.textContent, " \
         "l.getAttribute('stroke'), l.getAttribute('stroke-dasharray'), +l.getAttribute('data-util')]);"
    lines = browser.execute_script(js)
    # 8 host cables and 4 leaf-spine cables, each its own line (a small fabric starts open).
    assert len(lines) == 12
    assert browser.execute_script("return document.querySelectorAll('#fabric-svg rect.host').length") == 8
    down = [l for l in lines if l[0].startswith("leaf[0].up[0] ")]
    assert len(down) == 1 and down[0][2] == "5,3" and down[0][1] == "#8b0000"  # down during the run
    assert all(l[3] > 0 for l in lines if l[0].startswith("host["))  # every host sent and received

    frames = browser.execute_script("return JSON.parse(document.getElementById('fabric-data').textContent).frames")
    at = {name: i for i, (a, b) in enumerate(frames) for name, t in (("during", 30e3), ("after", 100e3)) if i and a < t <= b}

    def move(i):
        browser.execute_script("var s = document.getElementById('fabric-time'); s.value = arguments[0];"
                               "s.dispatchEvent(new Event('input'));", i)
        return browser.execute_script(js)

    during, after = move(at["during"]), move(at["after"])
    assert [l for l in during if l[0].startswith("leaf[0].up[0] ")][0][2] == "5,3"
    assert [l for l in after if l[0].startswith("leaf[0].up[0] ")][0][2] == ""
    lossy = [l for l in after if l[0].startswith("leaf[1].up[1] ")][0]
    assert "link_loss 0.01" in lossy[0]
    assert [l[1] for l in during] != [l[1] for l in after]  # the colours follow the slider
    when = browser.execute_script("return document.getElementById('fabric-when').textContent")
    assert "us" in when and "whole run" not in when
    browser.execute_script("var m = document.getElementById('fabric-mode'); m.value = 'queue';"
                           "m.dispatchEvent(new Event('change'));")
    assert "queue" in browser.execute_script("return document.getElementById('fabric-legend').textContent")


def test_a_large_fabric_is_drawn_by_aggregates_that_open_on_a_click(browser, tmp_path):
    out = tmp_path / "ft"
    fabricsim.run({"topology": {"kind": "fat_tree", "k": 6}, "workload": {"kind": "permutation", "size": "100KB"},
                   "output": {"plots": False}}).save(out)
    page = fabricsim.report(out)
    assert page == out / "report.html"
    assert_renders(open_page(browser, page))
    count = "return [document.querySelectorAll('#fabric-svg rect.agg').length, " \
            "document.querySelectorAll('#fabric-svg rect.host').length, " \
            "document.querySelectorAll('#fabric-svg line.cable').length]"
    # 54 hosts and 45 switches: per pod the hosts, the edges, the aggregation switches
    # (6 pods), and the 9 cores.
    assert browser.execute_script(count) == [19, 0, 6 + 6 + 6]
    browser.execute_script("document.querySelector('#fabric-svg rect.agg').dispatchEvent(new MouseEvent('click'))")
    assert browser.execute_script(count) == [18, 9, 9 + 5 + 6 + 6]  # pod 0's hosts, each its own cable
    browser.execute_script("document.querySelector('#fabric-svg rect.host').dispatchEvent(new MouseEvent('click'))")
    assert browser.execute_script(count) == [19, 0, 18]
    browser.execute_script("document.getElementById('fabric-open').click()")
    assert browser.execute_script(count) == [0, 54, 54 + 54 + 54]


def test_a_sweeps_report_draws_each_figure_against_each_parameter(browser, tmp_path):
    out = tmp_path / "sw"
    base = dict(FAULTY, faults=[])
    fabricsim.sweep(base, {"fabric.link_loss": [0.0, 0.005, 0.02], "workload.size": ["200KB", "1MB"]},
                    seeds=[1, 2], out=out, jobs=2)
    p = cli("report", str(out))
    assert p.returncode == 0 and p.stdout.strip() == str(out / "report.html"), p.stderr
    page = out / "report.html"
    self_contained(page.read_text())
    state = open_page(browser, page)
    assert_renders(state)
    assert state["sections"] == ["Overview", "Figures against the varied parameters", "Points", "Failures", "Base scenario"]
    captions = [alt for *_, alt in state["images"]]
    for param in ("fabric.link_loss", "workload.size"):
        assert any(f"FCT p99 (us) against {param} (mean over seeds, bars from the lowest" in c for c in captions)
    assert not any("against seed" in c for c in captions)
    rows = {cls: n for cls, n, *_ in state["tables"]}
    assert rows["points"] == 12 and rows["axes"] == 3


def test_the_fabric_view_figures(faulty_run):
    r = fabricsim.load(faulty_run)
    data = view_data(_core.layout(r.scenario_text), r, sample_interval_ns(r))
    names = [(c[2], c[3]) for c in data["cables"]]
    assert len(names) == 12 and ("host[0].nic[0]", "leaf[0].down[0]") in names
    # Whole run: each direction's utilisation summed over the samples and divided by the
    # run's sampling intervals, the busier direction shown.
    intervals = math.ceil(r.summary["sim_time_ns"] / 5000)
    ports = r.ports
    for i, (a, b) in enumerate(names):
        mean = max(ports.loc[ports["port"] == n, "utilization"].sum() / intervals for n in (a, b))
        assert data["util"][0][i] == round(mean * 100), (a, b)
        deepest = max([ports.loc[ports["port"].isin([a, b]), "queue_max_bytes"].max()] + [0])
        assert data["queue"][0][i] == math.ceil(np.nan_to_num(deepest) / 1e3)
    link = names.index(("leaf[0].up[0]", "spine[0].down[0]"))
    assert link in data["down"][0]
    for (start, end), down in zip(data["frames"][1:], data["down"][1:]):
        assert (link in down) == (start < 50e3 and end >= 10e3), (start, end)
    assert data["frames"][0] == [0.0, float(r.summary["sim_time_ns"])]
    assert not data["collapsed"] and data["nodeDown"][0] == []


def test_report_refuses_what_is_not_a_run_or_a_sweep(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "unfinished").mkdir()
    (tmp_path / "unfinished" / "sweep.json").write_text("{}")
    for target, needle in [
        (tmp_path / "empty", "is neither a run's output folder (summary.json and flows.parquet"),
        (tmp_path / "none", "is not a folder"),
        (tmp_path / "unfinished", "has not finished (no sweep.parquet yet): run the same fabricsim sweep again"),
    ]:
        p = cli("report", str(target))
        assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.count("\n") == 1
    assert list((tmp_path / "empty").iterdir()) == []


def test_without_port_sampling_the_fabric_is_drawn_for_the_whole_run(tmp_path):
    sc = dict(FAULTY, output={"sample_interval": "0us", "plots": False})
    r = fabricsim.run(sc)
    data = view_data(_core.layout(r.scenario_text), r, sample_interval_ns(r))
    assert len(data["frames"]) == len(data["util"]) == len(data["down"]) == 1
    link = [(c[2], c[3]) for c in data["cables"]].index(("leaf[0].up[0]", "spine[0].down[0]"))
    assert data["down"][0] == [link] and data["util"][0] == [0] * 12
    r.save(tmp_path / "o")
    assert "fabric-data" in fabricsim.report(tmp_path / "o").read_text()

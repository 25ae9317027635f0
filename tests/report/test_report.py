"""The report: self-contained HTML that headless Chromium renders with every image loaded, plus Markdown and CSV."""

import csv
import os
import re
import shutil
from pathlib import Path

import pytest
from hls_helpers import X8, trained
from markupsafe import escape
from text_helpers import negative_zeros

import fpgaprune as fp
from fpgaprune.hls import find_hls_tool
from fpgaprune.record import record_of
from fpgaprune.report import write_report
from fpgaprune.resources import estimate_resources
from fpgaprune.resources.estimate import COLUMN_SOURCES

X = X8


@pytest.fixture(scope="module")
def report(tmp_path_factory, digits_cnn_and_dense):
    base, dense = digits_cnn_and_dense
    pruned = trained(base, ["conv2[:, :, 1, :]", "conv2[:, :, 3, 2]", "fc[0:30, 4]"], None, epochs=0)
    root = tmp_path_factory.mktemp("report")
    exported = fp.export(pruned, "resource_parallel", "pynq-z2", root / "prj", x=X)
    estimate = estimate_resources(exported, record_of(dense))
    paths = write_report(
        root / "report",
        exported,
        estimate,
        record_of(pruned),
        dense_model=record_of(dense),
        accuracies={"dense": 0.95, "pruned": 0.94, "quantized": 0.93},
    )
    return paths, estimate


def test_report_files_carry_the_same_figures(report):
    paths, estimate = report
    html, md = paths["html"].read_text(), paths["md"].read_text()
    assert not re.search(r'(src|href)="(?!data:)', html)  # self-contained: every image inline
    rows = list(csv.DictReader(paths["csv"].open()))
    assert [(r["layer"], r["model"]) for r in rows] == [
        (layer.name, m) for layer in estimate.layers for m in ("dense", "pruned")
    ]
    for saving in estimate.savings():
        partly = "" if saving.whole else " (partly)"
        assert f"<code>{saving.name}</code>{partly}" in html
        assert (
            f"`{saving.name}`{partly}: {saving.products} weights removed ({saving.per_inference} products per "
            "inference)"
        ) in md
    assert "fc[:, 4]" in md and "conv2[:, :, 3, 2]" in md
    for layer in estimate.layers:  # a section per layer, with its totals
        assert f'<section class="layer" id="layer-{layer.name}">' in html
        assert (
            f"- **{layer.name}** ({layer.kind}): live weights {layer.dense.products} → {layer.pruned.products}, "
            f"products per inference {layer.dense.per_inference} → {layer.pruned.per_inference}"
        ) in md
    assert "dense <b>95.00%</b> &rarr; pruned <b>94.00%</b> &rarr; quantized <b>93.00%</b>" in html
    assert "Accuracy: dense 95.00% → pruned 94.00% → quantized 93.00%" in md
    assert "estimate (fpgaprune rules" in html
    for column, source in COLUMN_SOURCES.items():  # each column says where it stands against vendor results
        assert f"<li>{column}: {escape(source)}</li>" in html and f"- {column}: {source}" in md
    assert ("skipped: vitis_hls not found" in html) == (find_hls_tool() is None)  # true where Vitis is installed too
    assert estimate.fits() and "it fits on PYNQ-Z2 (estimate)" in md
    assert not list(paths["html"].parent.glob(".*"))  # atomic writes leave no temporary files


def test_no_negative_zero_anywhere(report):
    """A saving of nothing reads "0": no "−0" in the HTML or the Markdown, no "-0" in the CSVs."""
    paths, estimate = report
    assert any(s.dsp == 0 for s in estimate.savings())  # the case exists: LUT-only savings
    for text in (paths[key].read_text() for key in ("html", "md", "csv", "savings_csv")):
        assert not negative_zeros(text), negative_zeros(text)
    for row in csv.DictReader(paths["csv"].open()):
        assert not any(re.fullmatch(r"-0(\.0*)?", value.strip()) for value in row.values()), row


ARTIFACTS = Path(os.environ.get("FPGAPRUNE_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"))
# Elements whose right edge passes the viewport, unless a scrolling container (overflow-x: auto) holds them.
OVERFLOW_JS = """
const width = document.documentElement.clientWidth;
const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
  const x = getComputedStyle(p).overflowX; if (x === 'auto' || x === 'scroll') return true; } return false; };
return Array.from(document.body.querySelectorAll('*')).filter(el => {
  const box = el.getBoundingClientRect(); return box.width > 0 && box.right > width + 1 && !scrolls(el); })
  .map(el => el.tagName + (el.id ? '#' + el.id : '') + ' right=' + Math.round(el.getBoundingClientRect().right));
"""


def _overflowing(driver, width: int, name: str) -> list:
    """At `width` px: what overflows the page horizontally; saves a full-page screenshot as a test artifact."""
    driver.set_window_size(width, 1000)
    driver.execute_script("window.scrollTo(0, 0)")
    found = driver.execute_script(OVERFLOW_JS)
    found += ["document scrolls sideways"] * bool(
        driver.execute_script("return document.documentElement.scrollWidth > document.documentElement.clientWidth + 1")
    )
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(height, 12000))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}-{width}px.png"))
    return found


@pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="chromium/chromedriver not installed (.ci/run installs them)",
)
def test_html_report_renders_in_headless_chromium(report):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    paths, estimate = report
    options = Options()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.get(paths["html"].resolve().as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])"
        )
        failed = driver.execute_script(
            "return performance.getEntriesByType('resource').filter(r => r.responseStatus >= 400).map(r => r.name)"
        )
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        tables = driver.execute_script("return document.querySelectorAll('table').length")
        first = "return document.querySelector('#savings tbody tr:not([hidden]) td code').textContent"
        by_lut = driver.execute_script(first)
        driver.execute_script("document.querySelectorAll('#savings th')[1].click()")  # weights, largest first
        by_products = driver.execute_script(first)
        driver.execute_script(
            "const f = document.getElementById('savings-filter'); f.value = 'fc';f.dispatchEvent(new Event('input'))"
        )
        filtered = driver.execute_script(
            "return Array.from(document.querySelectorAll('#savings tbody tr'))"
            ".filter(r => !r.hidden).map(r => r.cells[0].textContent)"
        )
        overflow = {width: _overflowing(driver, width, paths["html"].parent.name) for width in (1300, 800)}
    finally:
        driver.quit()
    assert overflow == {1300: [], 800: []}, overflow
    rows = list(csv.DictReader(paths["savings_csv"].open()))
    assert by_lut == rows[0]["group"]  # the page opens sorted as savings.csv is: largest LUT saving first
    assert by_products == max(rows, key=lambda r: (int(r["weights_removed"]), -rows.index(r)))["group"]
    assert filtered and all(name.startswith("fc") for name in filtered)
    assert len(images) == 1 + sum(1 for layer in estimate.layers if layer.kind == "conv2d")
    assert all(complete and width > 0 for _, complete, width in images), images
    assert failed == [] and errors == [] and tables >= 4

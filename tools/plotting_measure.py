"""Measure the page's plotting: the generated SVG against maintained in-browser plotting libraries.

    python tools/plotting_measure.py LIBS_DIR

One test page per candidate, each drawing the same widget (chapter 07's roofline: two curves of
200 points, log-log, ticks, a hover readout) from the same formulas (SymPy's JavaScript, as the
book's pages get them), opened from disk in Chromium with the network off. For each: the page
weight (the HTML and every script it loads), the load time (navigation to the first complete
drawing, median of 5 loads) and the update time (a control moved: the 200 points recomputed and
redrawn, median of 40 updates, the layout flushed). The numbers are in README.md's design notes.

LIBS_DIR holds the libraries, fetched with their ordinary clients (nothing is fetched here):

    pip download plotly==7.1.0 --no-deps -d LIBS_DIR    # plotly.js 4.1.1: package_data/
    cd LIBS_DIR && npm pack uplot@1.6.32 vega@6.4.0 vega-lite@6.4.3 vega-embed@7.3.0

(each wheel or .tgz unpacked in place: see ``_FILES`` for the paths read).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

import inference_arithmetic as ia
from inference_arithmetic.formulas import roofline

ARGS = ["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND"]
_FILES = {
    "plotly": ["plotly/package_data/plotly.min.js"],
    "uplot": [
        "uplot-1.6.32/package/dist/uPlot.iife.min.js",
        "uplot-1.6.32/package/dist/uPlot.min.css",
    ],
    "vega": [
        "vega-6.4.0/package/build/vega.min.js",
        "vega-lite-6.4.3/package/build/vega-lite.min.js",
        "vega-embed-7.3.0/package/build/vega-embed.min.js",
    ],
}


def widget():
    """Chapter 07's roofline widget, as the book builds it."""
    llama = ia.model("llama-3.1-70b")
    return ia.widgets.formula_widget(
        {
            "compute time": roofline.compute_time(roofline.matmul_flops()),
            "memory time": roofline.memory_time(roofline.matmul_bytes()),
        },
        x="batch",
        controls={
            "batch": ia.widgets.Range(1, 8192, 64, log=True),
            "d_model": ia.widgets.Range(1024, 16384, llama.d_model, step=1024),
            "d_ff": ia.widgets.Range(1024, 65536, llama.d_ff, step=1024),
            "bytes_per_number": ia.widgets.Choice(ia.DTYPE_BYTES, "bf16"),
            "gpu": ia.widgets.gpu_preset("h100-sxm"),
            "compute_efficiency": ia.widgets.Range(0.1, 1.0, 1.0, step=0.05),
            "bandwidth_efficiency": ia.widgets.Range(0.1, 1.0, 1.0, step=0.05),
        },
        value_format=ia.format.seconds,
        title="Compute and memory time of one feed-forward product",
        ylabel="seconds",
        logx=True,
        logy=True,
    )


# Each library page: the curves from the spec's JavaScript, drawn once (window.drawn set when
# done) and redrawn by window.update(d_model), which resolves when the drawing is complete.
_COMMON = """
const spec = JSON.parse(document.getElementById("spec").textContent);
const values = Object.assign({}, spec.values);
const fns = spec.curves.map(c => new Function(c.args.join(","), "return (" + c.js + ");"));
const at = (i, x) => fns[i].apply(null, spec.curves[i].args.map(a => a === spec.x ? x : values[a]));
const ys = () => spec.curves.map((c, i) => spec.grid.map(x => at(i, x)));
"""

_PAGES = {
    "plotly": """
const box = document.getElementById("plot");
function traces() {
  return ys().map((y, i) => ({x: spec.grid, y, name: spec.curves[i].label, mode: "lines",
    line: {color: spec.curves[i].color}}));
}
const layout = {xaxis: {type: "log", title: {text: spec.xlabel}},
  yaxis: {type: "log", title: {text: spec.ylabel}}, hovermode: "x unified",
  width: 640, height: 360, margin: {l: 70, r: 20, t: 30, b: 50}};
Plotly.newPlot(box, traces(), layout).then(() => { window.drawn = performance.now(); });
window.update = (d) => { values.d_model = d; return Plotly.react(box, traces(), layout); };
""",
    "uplot": """
const opts = {width: 640, height: 360, scales: {x: {distr: 3}, y: {distr: 3}},
  series: [{}].concat(spec.curves.map(c => ({label: c.label, stroke: c.color, width: 2}))),
  axes: [{label: spec.xlabel}, {label: spec.ylabel}]};
const u = new uPlot(opts, [spec.grid].concat(ys()), document.getElementById("plot"));
window.drawn = performance.now();
window.update = (d) => {
  values.d_model = d; u.setData([spec.grid].concat(ys())); return Promise.resolve(); };
""",
    "vega": """
function rows() {
  const y = ys(), out = [];
  spec.grid.forEach((x, j) => spec.curves.forEach((c, i) =>
    out.push({x, y: y[i][j], curve: c.label})));
  return out;
}
const chart = {$schema: "https://vega.github.io/schema/vega-lite/v6.json", width: 560, height: 280,
  data: {name: "table", values: rows()}, mark: {type: "line", tooltip: true},
  encoding: {x: {field: "x", type: "quantitative", scale: {type: "log"}, title: spec.xlabel},
             y: {field: "y", type: "quantitative", scale: {type: "log"}, title: spec.ylabel},
             color: {field: "curve", type: "nominal"}}};
let view;
vegaEmbed("#plot", chart, {renderer: "svg", actions: true}).then(r => {
  view = r.view; window.drawn = performance.now(); });
window.update = (d) => { values.d_model = d;
  return view.data("table", rows()).runAsync(); };
""",
}


def pages(libs: Path, out: Path, w) -> dict[str, tuple[Path, int]]:
    """Write each candidate's test page; return its path and its weight in bytes."""
    out.mkdir(parents=True, exist_ok=True)
    spec = ia.live.embed_json(ia.live.spec(w))
    made = {}
    svg = out / "svg.html"
    svg.write_text(
        "<!doctype html><meta charset=utf-8><title>svg</title><body>"
        + ia.live.live_html(w)
        + "<script>window.drawn = performance.now();"
        "window.update = (d) => { const e = document.querySelector('[name=d_model]');"
        " e.value = d; e.dispatchEvent(new Event('input')); return Promise.resolve(); };"
        "</script></body>"
    )
    made["generated SVG (this book)"] = (svg, svg.stat().st_size)
    for name, files in _FILES.items():
        paths = [libs / f for f in files]
        tags = "".join(
            f'<link rel="stylesheet" href="{p.as_uri()}">'
            if p.suffix == ".css"
            else f'<script src="{p.as_uri()}"></script>'
            for p in paths
        )
        page = out / f"{name}.html"
        page.write_text(
            f"<!doctype html><meta charset=utf-8><title>{name}</title>{tags}<body>"
            f'<script type="application/json" id="spec">{spec}</script><div id="plot"></div>'
            f"<script>{_COMMON}{_PAGES[name]}</script></body>"
        )
        made[name] = (page, page.stat().st_size + sum(p.stat().st_size for p in paths))
    return made


def measure(browser, page_path: Path, loads=5, updates=40) -> tuple[float, float]:
    """Median load time (navigation to drawn) and update time, in milliseconds."""
    load = []
    for _ in range(loads):
        page = browser.new_page(viewport={"width": 800, "height": 700})
        errors = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_function("() => window.drawn !== undefined")
        load.append(page.evaluate("() => window.drawn"))
        if errors:
            raise RuntimeError(f"{page_path.name}: {errors}")
        page.close()
    page = browser.new_page(viewport={"width": 800, "height": 700})
    page.goto(page_path.as_uri(), wait_until="load")
    page.wait_for_function("() => window.drawn !== undefined")
    times = page.evaluate(
        """async (n) => {
          const out = [];
          for (let i = 0; i < n; i++) {
            const t = performance.now();
            await window.update(4096 + 1024 * (i % 8));
            document.body.getBoundingClientRect();  // the layout, as the reader waits for it
            out.push(performance.now() - t);
          }
          return out; }""",
        updates,
    )
    page.close()
    return statistics.median(load), statistics.median(times)


def main(libs: str, out: str = "/tmp/ia-plotting-pages") -> None:
    made = pages(Path(libs), Path(out), widget())
    print(f"{'candidate':28s} {'page weight':>12s} {'load':>9s} {'update':>9s}")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        results = {}
        for name, (path, weight) in made.items():
            load, update = measure(browser, path)
            results[name] = {"kB": weight / 1e3, "load_ms": load, "update_ms": update}
            print(f"{name:28s} {weight / 1e3:9.0f} kB {load:6.0f} ms {update:6.1f} ms")
        browser.close()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])

// The page's renderer of a live widget (live.py's spec): controls, an SVG plot with ticks, a
// hover readout and shaded regions. It holds no formula and no message of its own: both come
// from the spec (core/printing.py's JavaScript and live.py's templates); numbers print with
// iaShow (core/format.js, the twin of ia.format.show). Each formula is the body of a function
// of its args (printing.javascript).
var iaLive = window.iaLive || (window.iaLive = function (root) {
  var spec = JSON.parse(root.querySelector(".ia-live-spec").textContent);
  var values = Object.assign({}, spec.values), labels = {};
  function compile(f) { return new Function(f.args.join(","), f.body); }
  var fns = spec.curves.map(compile), limits = spec.bounds.map(compile);
  function call(f, args, x) {
    return f.apply(null, args.map(function (a) { return a === spec.x ? x : values[a]; }));
  }
  function at(i, x) { return call(fns[i], spec.curves[i].args, x); }
  function bound(i) { return call(limits[i], spec.bounds[i].args, NaN); }
  function inside(x, i) {  // widgets.in_region: a bound that is NaN puts every x inside
    var v = bound(i);
    return spec.bounds[i].side === "above" ? !(x <= v) : !(x >= v);
  }
  function show(v) { return iaShow(v, spec.format, spec.unit); }
  spec.keys = spec.keys || [];
  var conds = spec.keys.map(compile);
  // A key number: the least x at which its condition holds, NaN where none does
  // (widgets.least_where, step for step): the first x of the x control's step grid (or of its
  // only values) where it holds, then the crossing between it and the x before, bisected to
  // the least whole number (spec.key_whole) or the least float.
  function key(i) {
    var g = spec.key_grid, n = xc.only ? xc.stops.length : Math.floor((g[1] - g[0]) / g[2] + 1e-9) + 1;
    var holds = function (x) { return call(conds[i], spec.keys[i].args, x); };
    for (var k = 0; k < n; k++) {
      var x = xc.only ? xc.stops[k] : g[0] + g[2] * k;
      if (!holds(x)) continue;
      if (xc.only || k === 0) return x;
      var low = g[0] + g[2] * (k - 1), high = x, middle;
      if (spec.key_whole) {
        low = Math.floor(low); high = Math.ceil(high);
        while (high - low > 1) {
          middle = Math.floor((low + high) / 2);
          if (holds(middle)) high = middle; else low = middle;
        }
        return high;
      }
      for (;;) {  // halve until no float lies between the two
        middle = low + (high - low) / 2;
        if (!(low < middle && middle < high)) return high;
        if (holds(middle)) high = middle; else low = middle;
      }
    }
    return NaN;
  }
  var byName = {};
  spec.controls.forEach(function (c) { byName[c.name] = c; });
  var xc = byName[spec.x];
  function showControl(c, v) {
    return c.name in labels ? labels[c.name] : iaShow(v, c.show[0]) + c.show[1];
  }
  function snap(c, v) {  // a value of the x control's step grid (Range._snap)
    v = Math.min(Math.max(v, c.min), c.max);
    if (c.only) {  // only these values (Range.only): the nearest
      return c.stops.reduce(function (a, b) { return Math.abs(b - v) < Math.abs(a - v) ? b : a; });
    }
    v = c.min + Math.round((v - c.min) / c.step) * c.step;
    return Number(Math.min(v, c.max).toPrecision(12));
  }
  var box = root.querySelector(".ia-live-controls");
  spec.controls.forEach(function (c) {
    var row = document.createElement("label"), name = document.createElement("span");
    row.className = "ia-live-control"; name.className = "ia-live-name"; name.innerHTML = c.html;
    var input, out = document.createElement("output");
    if (c.kind === "range") {
      input = document.createElement("input");
      input.type = "range";
      var set = function (v) {
        values[c.name] = v; input.dataset.value = v; out.textContent = showControl(c, v);
        input.setAttribute("aria-valuetext", out.textContent);
      };
      if (c.stops) {  // a log slider: one stop a step, the value a ratio further
        input.min = 0; input.max = c.stops.length - 1; input.step = 1;
        input.value = c.stops.indexOf(c.value);
        input.addEventListener("input", function () { set(c.stops[Number(input.value)]); draw(); });
      } else {
        input.min = c.min; input.max = c.max; input.step = c.step; input.value = c.value;
        input.addEventListener("input", function () { set(Number(input.value)); draw(); });
      }
      set(c.value);
    } else {
      input = document.createElement("select");
      var names = c.kind === "preset" ? Object.keys(c.options) : c.options.map(function (o) { return o[0]; });
      names.forEach(function (n) {
        var o = document.createElement("option"); o.value = n; o.textContent = n; input.appendChild(o);
      });
      input.value = c.value;
      if (c.kind === "choice") labels[c.name] = c.value;
      input.addEventListener("change", function () {
        if (c.kind === "preset") Object.assign(values, c.options[input.value]);
        else values[c.name] = c.options.filter(function (o) { return o[0] === input.value; })[0][1];
        if (c.kind === "choice") labels[c.name] = input.value;
        draw();
      });
    }
    input.name = c.name; input.setAttribute("aria-label", c.label);
    row.appendChild(name); row.appendChild(input); row.appendChild(out); box.appendChild(row);
  });
  var legend = root.querySelector(".ia-live-legend");
  spec.curves.forEach(function (c) {
    // A sample of each curve's line, and its label in the text colour (readable in light and
    // dark mode, which some palette colours are not on their own).
    var item = document.createElement("span");
    item.innerHTML = '<svg width="30" height="10" aria-hidden="true"><line class="ia-live-key" x1="1" y1="5" x2="29" y2="5"' +
      ' stroke="' + c.color + '" stroke-width="2" stroke-dasharray="' + c.dash + '"></line></svg> ';
    item.appendChild(document.createTextNode(c.label));
    legend.appendChild(item);
  });
  var svg = root.querySelector(".ia-live-plot"), NS = "http://www.w3.org/2000/svg";
  var W = 640, H = 340, L = 78, R = 34, T = 28, B = 52, hover = null;
  function el(name, attrs, text, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    (parent || svg).appendChild(e); return e;
  }
  function scale(lo, hi, log, a, b) {
    var f = log ? Math.log : function (v) { return v; }, g = log ? Math.exp : f;
    var l = f(lo), h = f(hi); if (!(h > l)) { h = l + 1; }
    var s = function (v) { return a + (f(v) - l) / (h - l) * (b - a); };
    s.invert = function (p) { return g(l + (p - a) / (b - a) * (h - l)); };
    return s;
  }
  function tidy(v) { return Number(v.toPrecision(12)); }
  // Ticks from lo to hi, at most n of them: 1-2-2.5-5 steps on a linear axis; on a log axis
  // decades (every k-th when there are many), else 1-3, 1-2-5 or 1..9 within each decade.
  function linear(lo, hi, n) {
    var raw = (hi - lo) / Math.max(n - 1, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10, 20].map(function (m) { return m * p; });
    for (var i = 0; i < steps.length; i++) {
      var s = steps[i], k0 = Math.ceil(lo / s - 1e-9), k1 = Math.floor(hi / s + 1e-9);
      if (k1 - k0 + 1 <= n) {
        var out = [];
        for (var k = k0; k <= k1; k++) out.push(tidy(k * s));
        return out;
      }
    }
    return [lo, hi];
  }
  function logarithmic(lo, hi, n) {
    var e0 = Math.floor(Math.log10(lo)), e1 = Math.ceil(Math.log10(hi)), found = null;
    var sets = [[1], [1, 3], [1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]];
    for (var stride = 1; stride <= 12 && !found; stride++) {
      var ticks = [];
      for (var e = e0; e <= e1; e++) {
        if (e % stride === 0) ticks.push(tidy(Math.pow(10, e)));
      }
      ticks = ticks.filter(function (t) { return t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9); });
      if (ticks.length <= n) found = ticks;
    }
    if (found.length >= 4) return found;
    for (var i = 1; i < sets.length; i++) {
      var more = [];
      for (var e2 = e0; e2 <= e1; e2++) {
        sets[i].forEach(function (m) { more.push(tidy(m * Math.pow(10, e2))); });
      }
      more = more.filter(function (t) { return t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9); });
      if (more.length > n) break;
      found = more;
      if (found.length >= 4) break;
    }
    // Under a decade has too few nice values to label: a linear choice within it.
    return found.length >= 3 || hi / lo >= 10 ? found : linear(lo, hi, n);
  }
  function ticks(lo, hi, log, room, label) {
    // As many as fit, each label its width and a gap (5.5 px a character at 11 px); a label
    // too wide breaks after its number ("100" over "billion") before fewer ticks are drawn.
    function width(v, wrap) {
      var text = label(v), parts = wrap ? text.split(" ") : [text];
      return Math.max.apply(null, parts.map(function (p) { return p.length; })) * 5.5 + 8;
    }
    for (var wrap = 0; wrap < 2; wrap++) {
      for (var n = 8; n >= 3; n--) {
        var t = log ? logarithmic(lo, hi, n) : linear(lo, hi, n);
        var widest = Math.max.apply(null, t.map(function (v) { return width(v, wrap); }));
        if (t.length >= 3 && t.length * widest <= room) return {ticks: t, wrap: !!wrap};
      }
    }
    return {ticks: log ? logarithmic(lo, hi, 2) : linear(lo, hi, 2), wrap: true};
  }
  var state = null;
  function draw() {
    W = Math.max(300, Math.min(640, root.clientWidth || 640));
    // A title wider than the plot (7.5 px a character at 14 px) breaks into two lines.
    var words = (spec.title || "").split(" "), titleLines = [spec.title || ""];
    if (7.5 * titleLines[0].length > W - 10 && words.length > 1) {
      var half = Math.ceil(words.length / 2);
      titleLines = [words.slice(0, half).join(" "), words.slice(half).join(" ")];
    }
    T = 12 + 17 * titleLines.length;
    svg.setAttribute("width", W); svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var ys = spec.curves.map(function (c, i) { return spec.grid.map(function (x) { return at(i, x); }); });
    var all = [].concat.apply([], ys).filter(function (v) { return isFinite(v) && (!spec.logy || v > 0); });
    var lo = all.length ? Math.min.apply(null, all) : 0, hi = all.length ? Math.max.apply(null, all) : 1;
    if (spec.logy) {
      if (!(hi > lo)) { lo = lo / 2; hi = hi * 2; }
      var pad = Math.pow(hi / lo, 0.04); lo /= pad; hi *= pad;
    } else {
      lo = Math.min(lo, 0); if (!(hi > lo)) hi = lo + 1;
      var yt0 = linear(lo, hi, 6), s0 = yt0.length > 1 ? yt0[1] - yt0[0] : hi - lo;
      hi = tidy(Math.ceil(hi / s0 - 1e-9) * s0);  // the frame ends on a tick
    }
    var x0 = spec.grid[0], x1 = spec.grid[spec.grid.length - 1];
    function xlabel(v) { return iaShow(v, xc.show[0]) + xc.show[1]; }
    function ylabel(v) { return v === 0 ? "0" : show(v); }
    var sy = scale(lo, hi, spec.logy, H - B, T);
    var yt = spec.logy ? logarithmic(lo, hi, 7) : linear(lo, hi, 6);
    // On a log axis the ticks bracket the curves: a curve below the lowest tick (or above the
    // highest) cannot be read off, so the frame grows to the decade beyond it.
    var least = spec.logy ? lo * pad : lo, most = spec.logy ? hi / pad : hi;  // the curves'
    for (var grow = 0; spec.logy && all.length && yt.length && grow < 3; grow++) {
      var under = yt[0] > least * (1 + 1e-9), over = yt[yt.length - 1] < most * (1 - 1e-9);
      if (!under && !over) break;
      if (under) lo = Math.pow(10, Math.floor(Math.log10(least) + 1e-9) - grow) / pad;
      if (over) hi = Math.pow(10, Math.ceil(Math.log10(most) - 1e-9) + grow) * pad;
      sy = scale(lo, hi, true, H - B, T);
      yt = logarithmic(lo, hi, 7);
    }
    var ytext = yt.map(ylabel);
    L = 26 + 6 * Math.max.apply(null, ytext.map(function (t) { return t.length; }));
    var sx = scale(x0, x1, spec.logx, L, W - R);
    var grid = {stroke: "#888", "stroke-opacity": 0.3};
    yt.forEach(function (v, i) {
      el("line", Object.assign({x1: L, x2: W - R, y1: sy(v), y2: sy(v)}, grid));
      el("text", {class: "ia-live-tick ia-live-ytick", x: L - 5, y: sy(v) + 4, "text-anchor": "end", "font-size": 11}, ytext[i]);
    });
    var xt = ticks(x0, x1, spec.logx, W - L - R, xlabel);
    xt.ticks.forEach(function (v) {
      el("line", Object.assign({x1: sx(v), x2: sx(v), y1: T, y2: H - B}, grid));
      var text = el("text", {class: "ia-live-tick ia-live-xtick", x: sx(v), y: H - B + 15, "text-anchor": "middle", "font-size": 11});
      (xt.wrap ? xlabel(v).split(" ") : [xlabel(v)]).forEach(function (part, j) {
        el("tspan", {x: sx(v), dy: j ? 12 : 0}, part, text);
      });
    });
    // Regions of x past a bound: shaded and named, so the curve there reads as "does not fit".
    var notes = [], xv = values[spec.x];
    spec.bounds.forEach(function (b, i) {
      var v = bound(i), edge = isFinite(v) ? Math.min(Math.max(v, x0), x1) : x1;
      var start = b.side === "above" ? (isFinite(v) ? edge : x0) : x0;
      var end = b.side === "above" ? x1 : edge;
      if (start < end) {
        el("rect", {class: "ia-live-region", x: sx(start), y: T, width: sx(end) - sx(start),
                    height: H - T - B, fill: "#888", "fill-opacity": 0.22});
        var right = b.side === "above";
        // The region's name at the bottom of the frame, or at its top where a curve runs
        // along the bottom inside the region (never over a line).
        var clear = function (y0) {
          var near = Infinity;
          spec.grid.forEach(function (x, j) {
            if (x < start || x > end) return;
            ys.forEach(function (row) {
              if (isFinite(row[j]) && (!spec.logy || row[j] > 0)) near = Math.min(near, Math.abs(sy(row[j]) - y0 + 4));
            });
          });
          return near;
        };
        var low = H - B - 8 - 14 * i, high = T + 16 + 14 * i;
        el("text", {x: right ? W - R - 4 : L + 4, y: clear(high) > clear(low) ? high : low, "font-size": 11,
                    "text-anchor": right ? "end" : "start", "font-style": "italic"}, b.region);
      }
      if (inside(xv, i)) {
        notes.push(spec.note.replace("{x}", xc.label).replace("{value}", showControl(xc, xv))
          .replace("{region}", b.region).replace("{bound}", isFinite(v) ? xlabel(v) : String(v)));
      }
    });
    el("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#888"});
    el("text", {x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "font-size": 12,
                transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"}, spec.ylabel);
    var title = el("text", {x: W / 2, y: 17, "text-anchor": "middle", "font-size": 14});
    titleLines.forEach(function (part, j) { el("tspan", {x: W / 2, dy: j ? 17 : 0}, part, title); });
    el("text", {x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12}, spec.xlabel);
    var rows = "";
    spec.curves.forEach(function (c, i) {
      var line = {fill: "none", stroke: c.color, "stroke-width": 2, "stroke-dasharray": c.dash};
      var pts = [];
      spec.grid.forEach(function (x, j) {
        var y = ys[i][j];
        if (isFinite(y) && (!spec.logy || y > 0)) pts.push(sx(x).toFixed(1) + "," + sy(y).toFixed(1));
      });
      el("polyline", Object.assign({points: pts.join(" ")}, line));
      var v = at(i, xv);
      if (isFinite(v) && (!spec.logy || v > 0)) el("circle", {cx: sx(xv), cy: sy(v), r: 4, fill: c.color});
      rows += "<tr><td>" + c.label + '</td><td class="ia-live-value" data-curve="' + i +
              '" data-value="' + v + '"><b>' + show(v) + "</b></td></tr>";
    });
    root.querySelector(".ia-live-readout").innerHTML = "<caption>" +
      spec.caption.replace("{x}", xc.label).replace("{value}", showControl(xc, xv)) + "</caption>" + rows;
    root.querySelector(".ia-live-keys").innerHTML = spec.keys.map(function (k, i) {
      var v = key(i), text = isFinite(v)
        ? spec.key.replace("{key}", k.label).replace("{x}", xc.label).replace("{value}", xlabel(v))
        : spec.key_none.replace("{key}", k.label).replace("{x}", xc.label).replace("{max}", xlabel(xc.max));
      return '<p class="ia-live-keyvalue" data-key="' + i + '" data-value="' + v + '">' + text + "</p>";
    }).join("");
    root.querySelector(".ia-live-notes").innerHTML = notes.map(function (n) {
      return "<p>" + n + "</p>"; }).join("");
    var layer = el("rect", {class: "ia-live-hit", x: L, y: T, width: W - L - R, height: H - T - B,
                            fill: "transparent"});
    layer.style.cursor = "crosshair";
    state = {sx: sx, sy: sy, x0: x0, x1: x1, tip: el("g", {class: "ia-live-hover"}), xlabel: xlabel};
    if (hover !== null) point(hover);
  }
  // The crosshair: every curve's value at the x under the pointer, on the x control's grid.
  function point(px) {
    hover = px;
    var g = state.tip, sx = state.sx, sy = state.sy;
    while (g.firstChild) g.removeChild(g.firstChild);
    if (px === null) return;
    var x = snap(xc, Math.min(Math.max(sx.invert(px), state.x0), state.x1)), at_x = sx(x);
    el("line", {x1: at_x, x2: at_x, y1: T, y2: H - B, stroke: "#888", "stroke-dasharray": "3 3"}, undefined, g);
    var lines = [xc.label + " = " + state.xlabel(x)];
    spec.curves.forEach(function (c, i) {
      var v = at(i, x);
      if (isFinite(v) && (!spec.logy || v > 0)) {
        el("circle", {cx: at_x, cy: sy(v), r: 3.5, fill: "none", stroke: c.color, "stroke-width": 2}, undefined, g);
      }
      lines.push(c.label + ": " + show(v));
    });
    spec.bounds.forEach(function (b, i) { if (inside(x, i)) lines.push(b.region); });
    var width = 7 * Math.max.apply(null, lines.map(function (s) { return s.length; })) + 12;
    var left = at_x + 10 + width > W - R ? at_x - 10 - width : at_x + 10;
    left = Math.max(2, Math.min(left, W - width - 2));
    el("rect", {class: "ia-live-tip", x: left, y: T + 4, width: width, height: 16 * lines.length + 8,
                rx: 3, "fill-opacity": 0.93, fill: background()}, undefined, g);
    lines.forEach(function (s, i) {
      el("text", {x: left + 6, y: T + 20 + 16 * i, "font-size": 12}, s, g);
    });
  }
  // The colour behind the widget (the theme's output area), so that the tip's text, in the
  // text colour, stays readable in light and dark mode.
  function background() {
    for (var e = root; e; e = e.parentElement) {
      var c = getComputedStyle(e).backgroundColor, m = c.match(/[\d.]+/g);
      if (m && (m.length < 4 || Number(m[3]) > 0)) return c;
    }
    return "#fff";
  }
  function where(event) {
    var r = svg.getBoundingClientRect();
    return (event.clientX - r.left) * (W / r.width);
  }
  svg.addEventListener("pointermove", function (e) {
    var px = where(e);
    point(px >= L && px <= W - R ? px : null);
  });
  svg.addEventListener("pointerleave", function () { point(null); });
  draw();
  if (window.ResizeObserver) {
    var width = root.clientWidth;
    new ResizeObserver(function () {
      if (root.clientWidth !== width) { width = root.clientWidth; draw(); }
    }).observe(root);
  }
});

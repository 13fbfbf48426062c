// inference_arithmetic.core.format in the page: window.iaShow(value, kind, unit) prints what
// format.show(value, kind, unit) prints in Python, character for character, for every kind of
// format.KINDS (nbytes, seconds, flops, flop_rate, bandwidth, count, integer, number, usd,
// percent, si, text). Python is the definition; this is a transcription of its functions, one for one, and
// tests/format_cases.json holds the two to the same table (test_format.py, test_browser.py).
//
// The one difference: a value that is not a finite number (NaN, Infinity) makes Python raise
// ValueError; the page prints String(value) ("NaN", "Infinity", "-Infinity") rather than stop
// redrawing its readout. An unknown kind, or a non-whole "integer", throws here as there.
// ("text" is String(value): meant for strings, which both sides print as they are.)
//
// Python's format() rounds an exact tie to even (1234.5 s is "1,234 s", 0.125 at two digits is
// "0.12"); toPrecision, toExponential and Math.round round it up, so round() and whole() below
// do it Python's way. Several blocks on one page load this; the first one defines iaShow.
window.iaShow = window.iaShow || (function () {
  "use strict";
  var DECIMAL = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"];
  var WORDS = ["", "thousand", "million", "billion", "trillion", "quadrillion"];
  var UNITS = {nbytes: "B", flops: "FLOPs", flop_rate: "FLOP/s", bandwidth: "B/s"};
  var SINGULAR = {tokens: "token", requests: "request", FLOPs: "FLOP"};
  var KINDS = ["nbytes", "seconds", "flops", "flop_rate", "bandwidth", "count", "integer",
               "number", "usd", "percent", "si", "text"];
  var SUPERSCRIPT = {"-": "\u207b", "0": "\u2070", "1": "\u00b9", "2": "\u00b2", "3": "\u00b3",
                     "4": "\u2074", "5": "\u2075", "6": "\u2076", "7": "\u2077", "8": "\u2078",
                     "9": "\u2079"};

  // |x| (finite, nonzero) to d significant digits: [their figures, the power of ten of the first].
  function round(x, d) {
    var a = Math.abs(x), up = a.toExponential(d - 1).split("e");
    // 100 digits of a's exact decimal value tell an exact tie, which toExponential rounds up.
    var exact = a.toExponential(99).split("e"), figures = exact[0].replace(".", "");
    if (/^50*$/.test(figures.slice(d)) && Number(figures[d - 1]) % 2 === 0) {
      return [figures.slice(0, d), Number(exact[1])];
    }
    return [up[0].replace(".", ""), Number(up[1])];
  }

  // format(x, ".0f") (or ",.0f" with separators): a whole number, an exact half to even.
  function whole(x, separators) {
    var a = Math.abs(x), n = Math.floor(a), rest = a - n;  // exact below 2**52, 0 above
    if (rest > 0.5 || (rest === 0.5 && n % 2 === 1)) n += 1;
    var big = BigInt(n);  // every digit of a large double, as Python prints it
    return (x < 0 ? "-" : "") + (separators ? big.toLocaleString("en-US") : big.toString());
  }

  // Figures "15" whose first digit stands at 10**e, written out: e = -5 gives "0.000015".
  function positional(figures, e) {
    var point = e + 1;
    if (point <= 0) return "0." + "0".repeat(-point) + figures;
    if (point >= figures.length) return figures + "0".repeat(point - figures.length);
    return figures.slice(0, point) + "." + figures.slice(point);
  }

  // format(x, "." + d + "g"), exponent form included ("1e+03", "1.5e-05").
  function g(x, d) {
    if (x === 0) return Object.is(x, -0) ? "-0" : "0";
    var r = round(x, d), figures = r[0].replace(/0+$/, "") || "0", e = r[1];
    var sign = x < 0 ? "-" : "";
    if (e < -4 || e >= d) {
      var power = String(Math.abs(e));
      return sign + figures[0] + (figures.length > 1 ? "." + figures.slice(1) : "") +
        (e < 0 ? "e-" : "e+") + (power.length < 2 ? "0" : "") + power;
    }
    return sign + positional(figures, e);
  }

  function scientific(value, d) {
    if (value === 0) return "0";
    var r = round(value, d), power = String(r[1]), sup = "";
    for (var i = 0; i < power.length; i++) sup += SUPERSCRIPT[power[i]];
    return (value < 0 ? "-" : "") + r[0][0] + (d > 1 ? "." + r[0].slice(1) : "") +
      " \u00d7 10" + sup;
  }

  // _digits: d significant digits, but whole numbers up to 9999 in full.
  function digits(m, d) {
    var text = g(m, d);
    if (text.indexOf("e") >= 0 && m >= 1 && m < 1e4) text = whole(m, false);
    return text;
  }

  // _scaled: [number, prefix]; rounding carries into the next prefix (999.7 kB is 1 MB).
  function scaled(value, names, d) {
    var m = Math.abs(value), step = 0, last = names.length - 1;
    while (m >= 1000 && step < last) { m /= 1000; step++; }
    var text = digits(m, d);
    if (Number(text) >= 1000 && step < last) { m /= 1000; step++; text = digits(m, d); }
    if (text.indexOf("e") >= 0) return [scientific(value, d), ""];
    return [(value < 0 ? "-" : "") + text, names[step]];
  }

  function si(value, unit) {
    var t = scaled(value, DECIMAL, 3);
    if ((t[0] === "1" || t[0] === "-1") && !t[1]) {  // SINGULAR: "1 token/s"
      var word = /^[A-Za-z]*/.exec(unit)[0];
      if (Object.prototype.hasOwnProperty.call(SINGULAR, word)) {
        unit = SINGULAR[word] + unit.slice(word.length);
      }
    }
    return (t[0] + " " + t[1] + unit).trimEnd();
  }

  function number(value, d) {
    var a = Math.abs(value), sign = value < 0 ? "-" : "";
    if (a >= 100) return sign + whole(a, true);
    if (a === 0) return "0";
    if (a < 1e-9) return scientific(value, d);
    var text = g(a, d), parts = text.split("e");
    if (parts.length === 1) return sign + text;
    return sign + positional(parts[0].replace(".", ""), Number(parts[1]));
  }

  function seconds(value) {
    if (value === 0) return "0 s";
    var steps = [[1.0, "s"], [1e-3, "ms"], [1e-6, "\u00b5s"]];
    for (var i = 0; i < steps.length; i++) {
      var scale = steps[i][0], unit = steps[i][1];
      if (Math.abs(value) >= 0.1 * scale || i === steps.length - 1) {
        return number(value / scale, 2) + " " + unit;
      }
    }
  }

  return function (value, kind, unit) {
    if (KINDS.indexOf(kind) < 0) {
      throw new Error("unknown kind " + JSON.stringify(kind) + ": one of " + KINDS.join(", "));
    }
    if (value === null || value === undefined) return "unavailable";
    if (kind === "text") return String(value);
    var v = Number(value);
    if (!isFinite(v)) return String(v);
    if (kind === "si") return si(v, unit || "");
    if (kind in UNITS) return si(v, UNITS[kind]);
    if (kind === "seconds") return seconds(v);
    if (kind === "count") return (scaled(v, WORDS, 3).join(" ")).trimEnd();
    if (kind === "number") return number(v, 3);
    if (kind === "percent") return number(100 * v, 3) + "%";
    if (kind === "usd") {
      var text = number(v, 3);
      return text[0] === "-" ? "-$" + text.slice(1) : "$" + text;
    }
    if (!Number.isInteger(v)) throw new RangeError(String(value) + " is not a whole number");
    return BigInt(v).toLocaleString("en-US");  // "integer"
  };
})();

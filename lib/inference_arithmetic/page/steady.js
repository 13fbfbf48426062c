// The steady state of a continuously batching engine (ia.continuous), for the calculator's
// page: the same numerical procedure as ``continuous._Engine``, over formulas the page's data
// carries (printed by sympy.jscode). It holds no formula of its own: the step's time, the
// memory's capacity, the mean context and the steady relations (continuous.STEADY) all come
// from ``data``; only the chain's arithmetic (Poisson weights, linear equations, the fixed
// point, the bisection) is here, step for step as in Python.
window.iaSteady = window.iaSteady || function (data, call, v) {
  var N = data.prompt_counts, T = v.seq_len, O = v.output_len, logf = [0];
  for (var i = 1; i < N; i++) logf.push(logf[i - 1] + Math.log(i));
  var point = Object.assign({}, v, {context_len: call(data.context, v)});
  var capacity = call(data.capacity, Object.assign({}, v, {context_len: T + O}));

  function steps(decodes, extra) {  // a step's time for each count of prompts (+ extra)
    var out = [];
    point.decoding = Math.max(decodes, 0);
    for (var k = 0; k < N; k++) {
      point.prefill_tokens = (k + extra) * T;
      out.push(call(data.step, point));
    }
    return out;
  }
  function poisson(mean) {  // P(K = k), normalized over the counts kept
    var row = [], sum = 0, log = Math.log(Math.max(mean, 1e-300));
    for (var k = 0; k < N; k++) { row.push(Math.exp(k * log - mean - logf[k])); sum += row[k]; }
    return row.map(function (x) { return x / sum; });
  }
  function solve(a, columns) {  // Gaussian elimination with partial pivoting, in place
    var n = a.length;
    for (var c = 0; c < n; c++) {
      var p = c;
      for (var r = c + 1; r < n; r++) if (Math.abs(a[r][c]) > Math.abs(a[p][c])) p = r;
      var t = a[c]; a[c] = a[p]; a[p] = t; t = columns[c]; columns[c] = columns[p]; columns[p] = t;
      for (r = c + 1; r < n; r++) {
        var f = a[r][c] / a[c][c];
        if (f === 0) continue;
        for (var j = c; j < n; j++) a[r][j] -= f * a[c][j];
        for (j = 0; j < columns[r].length; j++) columns[r][j] -= f * columns[c][j];
      }
    }
    for (c = n - 1; c >= 0; c--) {
      for (j = 0; j < columns[c].length; j++) {
        var s = columns[c][j];
        for (var k = c + 1; k < n; k++) s -= a[c][k] * columns[k][j];
        columns[c][j] = s / a[c][c];
      }
    }
    return columns;
  }
  function dot(x, y) { var s = 0; for (var k = 0; k < x.length; k++) s += x[k] * y[k]; return s; }
  function chain(rate, decodes) {  // each count's step, the moves between counts, pi
    var times = steps(decodes, 0), moves = times.map(function (t) { return poisson(rate * t); });
    var a = [], b = [];
    for (var r = 0; r < N; r++) {  // pi (I - P) = 0, the last equation sum(pi) = 1
      a.push([]);
      for (var c = 0; c < N; c++) a[r].push(r === N - 1 ? 1 : (r === c ? 1 : 0) - moves[c][r]);
      b.push([r === N - 1 ? 1 : 0]);
    }
    var pi = solve(a, b).map(function (x) { return x[0]; });
    return {times: times, moves: moves, pi: pi};
  }
  function tau(rate, start) {
    var t = start || steps(0, 0)[0];
    for (var n = 0; n < 200; n++) {
      var c = chain(rate, rate * (O - 1) * t), mean = dot(c.pi, c.times), tail = 0;
      for (var k = N - 8; k < N; k++) tail += c.pi[k];
      if (mean > 1e3 || !isFinite(mean) || tail > 1e-6) return null;
      if (Math.abs(mean - t) <= 1e-10 * mean) return mean;
      t = mean;
    }
    return null;
  }
  function ttft(rate, decodes) {
    var c = chain(rate, decodes), after = steps(decodes, 1), mean = dot(c.pi, c.times), s = 0;
    for (var k = 0; k < N; k++) {
      s += c.pi[k] * c.times[k] / mean * (c.times[k] / 2 + dot(c.moves[k], after));
    }
    return s;
  }
  function state(rate, start) {
    var t = tau(rate, start);
    if (t === null) return null;
    var decodes = rate * (O - 1) * t, c = chain(rate, decodes), more = chain(rate, decodes + 1);
    var meanK = 0;
    for (var k = 0; k < N; k++) meanK += c.pi[k] * k;
    var a = [], b = [];
    for (var r = 0; r < N; r++) {  // the fundamental matrix I - P + 1 pi
      a.push([]);
      for (var j = 0; j < N; j++) a[r].push((r === j ? 1 : 0) - c.moves[r][j] + c.pi[j]);
      b.push([r - meanK, c.times[r] - t]);
    }
    var z = solve(a, b), burst = 0, cross = 0, tokens = 0;
    for (k = 0; k < N; k++) {
      var centred = k - meanK;
      burst += c.pi[k] * centred * (2 * z[k][0] - centred);
      cross += c.pi[k] * centred * (z[k][1] - c.times[k] + t);
      tokens += c.pi[k] * k * T;
    }
    var chainValues = {requests_per_s: rate, output_len: O, mean_step: t,
      step_slope: Math.max(dot(more.pi, more.times) - t, 1e-300),
      burst_ratio: burst / meanK, burst_covariance: cross};
    var steady = {};
    for (var name in data.steady) steady[name] = call(data.steady[name], chainValues);
    if (steady.gain >= 1) return null;
    var first = ttft(rate, steady.busy), request = first + (O - 1) * steady.tpot;
    return {ttft: first, tpot: steady.tpot, mean_step: t, request_time: request,
      concurrency: rate * request,
      ok: decodes + tokens <= v.token_budget && rate * request <= capacity};
  }
  function saturation() {
    var low = 0, high = 1, below = null, s;
    while ((s = state(high, below)) !== null && s.ok) { low = high; high *= 2; below = s.mean_step; }
    for (var n = 0; n < 30; n++) {
      var middle = (low + high) / 2;
      s = state(middle, below);
      if (s !== null && s.ok) { low = middle; below = s.mean_step; } else high = middle;
    }
    return low;
  }
  return {saturation: saturation, state: state};
};

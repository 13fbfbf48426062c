// The steady state of a continuously batching engine (ia.continuous), for the calculator's
// page: the same numerical procedure as ``serving.engine.Engine``, over formulas the page's data
// carries (printed by sympy.jscode). It holds no formula of its own: the step's time, the
// memory's capacity, the mean context and the steady relations (queueing.STEADY) all come
// from ``data``; only the chain's arithmetic (Poisson weights, chunks under the token budget,
// linear equations, the fixed point with Aitken's jumps, the spread, the saturation search)
// is here, step for step as in Python. A pipeline (``data.stages`` micro-batches in flight)
// steps as its cycle lasts: the sum of ``data.wait`` (formulas.continuous.pipeline_wait,
// printed) over the other micro-batches' steps, drawn from the chain's own (``Engine.period``
// and ``meet``). A state's ``percentiles()`` are its TTFT's and TPOT's (``Engine.waits`` and
// ``percentiles``, over quantiles.js), by the names of ``data.quantiles``.
window.iaSteady = window.iaSteady || function (data, call, v) {
  var N = data.prompt_counts, T = data.prefilled, O = v.output_len, logf = [0];
  var budget = v.token_budget, rows = data.rows, E = data.tokens_per_step;
  var stages = data.stages, others = null;  // others: the other micro-batches' steps
  // The cycle's term, called with its arguments in order (t's at ``at``): thousands a rate;
  // its square's, for the spread of a step (the same arguments).
  var names = data.wait.args, at = names.indexOf("t"), xAt = names.indexOf("x");
  var wait = new Function(names.join(","), data.wait.body);
  var square = new Function(names.join(","), data.square.body);
  for (var i = 1; i < N; i++) logf.push(logf[i - 1] + Math.log(i));
  var point = Object.assign({}, v, {context_len: call(data.context, v)});
  var whole = Object.assign({}, v, {context_len: v.seq_len + O});
  var capacity = Math.floor(call(data.capacity, whole)[data.parallel]);
  // T: the tokens each prompt computes (a prefix cache holds the rest); speculating, a
  // decode is rows of the step and yields E tokens, so the chain counts a request's steps,
  // 1 + (O - 1) / E, as if of that many tokens.
  if (data.speculating) O = 1 + (O - 1) / E;

  function step(decodes, tokens) {  // one step's time: decodes and prompt tokens
    point.decoding = Math.max(decodes, 0);
    point.prefill_tokens = tokens;
    var t = call(data.step, point)[data.parallel];
    return others === null ? t : summed(t, wait);
  }
  function summed(t, term) {  // a pipeline's E[max(t, M)] (period), or its square's
    var sum = 0;
    for (var j = 0; j < others.length; j++) {
      others[j][at] = t;
      sum += term.apply(null, others[j]);
    }
    return sum;
  }
  function spread(cycle) {  // Engine.spread: the variance of a step whose mean is ``cycle``
    if (others === null) return 0;
    var n = others.length, cycleX = others.cycles;
    var own = cycle;  // past the largest value, the step's own; else read back between two
    if (cycle < cycleX[n - 1]) {
      own = others[0][xAt];  // below the first (by rounding): the first, as np.interp reads
      if (cycle >= cycleX[0]) {
        var i = 0;
        while (cycleX[i + 1] <= cycle) i++;  // cycleX[i] <= cycle < cycleX[i + 1]
        var x0 = others[i][xAt], x1 = others[i + 1][xAt];
        own = x0 + (cycle - cycleX[i]) * (x1 - x0) / (cycleX[i + 1] - cycleX[i]);
      }
    }
    return Math.max(summed(own, square) - cycle * cycle, 0);
  }
  function macro(decodes, rate) {  // Engine.macro, for each count of prompts
    var room = Math.max(budget - rows * decodes, 1), full = step(decodes, room);
    var times = [], counts = [];
    for (var k = 0; k < N; k++) {
      var tokens = k * T;
      if (tokens > room) {
        var fluid = tokens / room, whole = Math.ceil(fluid);
        var alone = (whole - 1) * full + step(decodes, tokens - (whole - 1) * room);
        var none = Math.exp(-rate * fluid * full);  // no arrival during the prefill
        times.push(none * alone + (1 - none) * fluid * full);
        counts.push(none * whole + (1 - none) * fluid);
      } else {
        times.push(step(decodes, tokens)); counts.push(1);
      }
    }
    return {times: times, counts: counts};
  }
  function poisson(mean) {  // P(K = k), normalized over the counts kept
    var row = [], sum = 0, log = Math.log(Math.max(mean, 1e-300));
    for (var k = 0; k < N; k++) { row.push(Math.exp(k * log - mean - logf[k])); sum += row[k]; }
    return row.map(function (x) { return x / sum; });
  }
  // Gaussian elimination with partial pivoting, in place: ``a`` n by n and ``b`` n by m, each
  // row after row in one flat array (a chain's thousands of solves a rate); returns ``b``, the
  // solution.
  function solve(a, n, b, m) {
    var c, r, j, t;
    for (c = 0; c < n; c++) {
      var p = c;
      for (r = c + 1; r < n; r++) if (Math.abs(a[r * n + c]) > Math.abs(a[p * n + c])) p = r;
      for (j = 0; j < n; j++) { t = a[c * n + j]; a[c * n + j] = a[p * n + j]; a[p * n + j] = t; }
      for (j = 0; j < m; j++) { t = b[c * m + j]; b[c * m + j] = b[p * m + j]; b[p * m + j] = t; }
      for (r = c + 1; r < n; r++) {
        var f = a[r * n + c] / a[c * n + c];
        if (f === 0) continue;
        for (j = c; j < n; j++) a[r * n + j] -= f * a[c * n + j];
        for (j = 0; j < m; j++) b[r * m + j] -= f * b[c * m + j];
      }
    }
    for (c = n - 1; c >= 0; c--) {
      for (j = 0; j < m; j++) {
        var s = b[c * m + j];
        for (var k = c + 1; k < n; k++) s -= a[c * n + k] * b[k * m + j];
        b[c * m + j] = s / a[c * n + c];
      }
    }
    return b;
  }
  function dot(x, y) { var s = 0; for (var k = 0; k < x.length; k++) s += x[k] * y[k]; return s; }
  function product(x, y) { return x.map(function (a, k) { return a * y[k]; }); }
  function chain(rate, decodes) {  // each count's time per step, the moves, pi, its steps
    var m = macro(decodes, rate);
    var moves = m.times.map(function (t) { return poisson(rate * t); });
    var a = new Float64Array(N * N), b = new Float64Array(N);
    for (var r = 0; r < N; r++) {  // pi (I - P) = 0, the last equation sum(pi) = 1
      for (var c = 0; c < N; c++) a[r * N + c] = r === N - 1 ? 1 : (r === c ? 1 : 0) - moves[c][r];
    }
    b[N - 1] = 1;
    var pi = Array.from(solve(a, N, b, 1));
    var times = m.times.map(function (t, k) { return t / m.counts[k]; });
    return {times: times, moves: moves, pi: pi, counts: m.counts};
  }
  function runaway(pi) {  // queueing.runaway_weight: the weight of the last counts kept
    var tail = 0;
    for (var k = N - data.runaway[0]; k < N; k++) tail += pi[k];
    return tail;
  }
  function perStep(c) { return dot(product(c.pi, c.counts), c.times) / dot(c.pi, c.counts); }
  function meet(rate, decodes) {  // Engine.meet: others, the steps' own times, the cycle's shares
    var cycle = chain(rate, decodes), shares = product(cycle.pi, cycle.counts);
    others = null;
    var c = chain(rate, decodes), total = 0, below = 0;
    var order = c.times.map(function (_, k) { return k; });
    order.sort(function (a, b) { return c.times[a] - c.times[b]; });
    order.forEach(function (k) { total += shares[k]; });
    others = order.map(function (k) {
      below += shares[k];
      var term = {x: c.times[k], G: below / total, g: shares[k] / total, n: stages};
      return names.map(function (name) { return term[name]; });
    });
    // The cycle of a step as long as each value (_Cycle.cycles), for ``spread``.
    others.cycles = others.map(function (term) { return summed(term[xAt], wait); });
  }
  function tau(rate, start) {
    others = null;  // a pipeline's cycle is worked out afresh at each rate
    var t = start || step(0, 0);
    // As Engine.tau: a step of whole prompts creeps longer, and after two steps that move the
    // same way, the second the shorter, Aitken's extrapolation jumps to where they head; a
    // jump that makes the chain run away is undone, and the plain iteration decides.
    var previous = null, accelerate = true;
    for (var n = 0; n < 1000; n++) {
      var c = chain(rate, rate * (O - 1) * t), mean = perStep(c);
      if (mean > 1e3 || !isFinite(mean) || runaway(c.pi) > data.runaway[1]) {
        if (previous !== null && previous[2]) {  // a jump went too far: undo it
          t = previous[1]; previous = null; accelerate = false;
          continue;
        }
        return null;
      }
      if (stages > 1) meet(rate, rate * (O - 1) * t);
      if (Math.abs(mean - t) <= 1e-10 * mean) return mean;
      var jump = null;
      if (accelerate && previous !== null && !previous[2]) {
        var before = previous[0], last = t, ratio = (mean - last) / (last - before);
        if (0 < ratio && ratio < 1) {  // slowing: a fixed point ahead
          jump = mean - (mean - last) * (mean - last) / ((mean - last) - (last - before));
        }
      }
      if (jump !== null && isFinite(jump)) { previous = [t, mean, true]; t = jump; }
      else { previous = [t, mean, false]; t = mean; }
    }
    return null;
  }
  function ttft(rate, decodes) {  // Engine.ttft
    var c = chain(rate, decodes), spans = product(c.times, c.counts);
    var total = dot(c.pi, spans), room = Math.max(budget - rows * decodes, 1);
    var full = step(decodes, room);
    var done = [];
    for (var j = 0; j < N; j++) {  // j others arrived with it: ranks 1..j+1, each as likely
      var tokens = (j + 1) * T;
      if (tokens <= room) { done.push(step(decodes, tokens)); continue; }
      var sum = 0, last = 0;
      for (var rank = 1; rank <= j + 1; rank++) {
        last = Math.ceil(rank * T / room);
        sum += last * full;
      }
      // The last prompt's last step holds only what is left of it.
      sum += (last - 1) * full + step(decodes, tokens - (last - 1) * room) - last * full;
      done.push(sum / (j + 1));
    }
    var s = 0;
    for (var k = 0; k < N; k++) {
      var rest = spans[k] / 2 + spread(c.times[k]) / (2 * c.times[k]);  // as Engine.ttft
      s += c.pi[k] * spans[k] / total * (rest + dot(c.moves[k], done));
    }
    return s;
  }
  function state(rate, start) {  // a pipeline's micro-batch: at a share of the rate
    rate = rate / stages;
    var t = tau(rate, start);
    if (t === null) return null;
    var decodes = rate * (O - 1) * t, c = chain(rate, decodes), more = chain(rate, decodes + 1);
    var steps = dot(c.pi, c.counts), meanK = 0;
    for (var k = 0; k < N; k++) meanK += c.pi[k] * k;
    var a = new Float64Array(N * N), b = new Float64Array(2 * N), prompts = [], seconds = [];
    for (var r = 0; r < N; r++) {  // the fundamental matrix I - P + 1 pi; rewards per step
      for (var j = 0; j < N; j++) a[r * N + j] = (r === j ? 1 : 0) - c.moves[r][j] + c.pi[j];
      prompts.push(r - meanK / steps * c.counts[r]);
      seconds.push((c.times[r] - t) * c.counts[r]);
      b[2 * r] = prompts[r]; b[2 * r + 1] = seconds[r];
    }
    var z = solve(a, N, b, 2), burst = 0, cross = 0, noise = 0;
    for (k = 0; k < N; k++) {
      burst += c.pi[k] * prompts[k] * (2 * z[2 * k] - prompts[k]);
      cross += c.pi[k] * prompts[k] * (z[2 * k + 1] - seconds[k]);
      noise += c.pi[k] * seconds[k] * (2 * z[2 * k + 1] - seconds[k]);
    }
    var chainValues = {requests_per_s: rate, output_len: O, mean_step: t,
      step_slope: Math.max(perStep(more) - t, 1e-300),
      burst_ratio: burst / meanK, burst_covariance: cross / steps,
      step_noise: Math.max(noise / steps, 0), decode_step: step(decodes, 0)};
    var steady = {};
    for (var name in data.steady) steady[name] = call(data.steady[name], chainValues);
    if (steady.gain >= 1) return null;
    // Not kept up with, whatever the first token's wait: every caller reads only ``ok``.
    if (!(rows * decodes < budget && rate * (O - 1) * steady.tpot <= capacity)) {
      return {ok: false, mean_step: t};
    }
    // An arrival's prefill, averaged over the spread of the decodes (queueing.SPREAD_POINTS).
    var nodes = data.spread[0], weights = data.spread[1];
    var spread = Math.sqrt(Math.max(steady.variance, 0));
    var first = 0, mass = 0, met = [];
    for (k = 0; k < nodes.length; k++) {
      met.push(Math.min(Math.max(steady.busy + spread * nodes[k], 0), (budget - 1) / rows));
      first += weights[k] * ttft(rate, met[k]); mass += weights[k];
    }
    first /= mass;
    var request = first + (O - 1) * steady.tpot;
    // The time per token: a step's over the tokens it yields. Its percentiles are worked out
    // when asked (Engine.percentiles), at this rate's steps (a pipeline's cycle: ``others``).
    var cycle = others;
    // How far from each limit, as one number below 0 while all hold (the tail in decades):
    // ``saturation`` aims with it.
    var margin = Math.max(Math.log10(Math.max(runaway(c.pi), 1e-300) / data.runaway[1]),
      rows * decodes / budget - 1, rate * request / capacity - 1, steady.gain - 1);
    return {ttft: first, tpot: steady.tpot / E, mean_step: t, request_time: request,
      concurrency: stages * rate * request, margin: margin,
      ok: rows * decodes < budget && rate * request <= capacity,
      percentiles: function () { others = cycle; return percentiles(rate, met, steady); }};
  }
  function waits(rate, decodes) {  // Engine.waits: an arrival's TTFT, a mixture of uniforms
    var c = chain(rate, decodes), room = Math.max(budget - rows * decodes, 1);
    var spans = product(c.times, c.counts), total = dot(c.pi, spans), tiny = data.quantiles.tiny;
    var share = [], reach = [], widths = [], more = [];
    for (var k = 0; k < N; k++) {
      var picked = c.pi[k] * spans[k] / total;
      if (!(picked > tiny)) continue;
      var tokens = k * T, n = tokens > room ? Math.ceil(tokens / room) : 1;
      var width = spans[k] / n + spread(c.times[k]) / c.times[k];  // as Engine.waits
      // Rank r of j + 1 = r arrivals, the last of its prefill; or of more, with others behind.
      var alone = c.moves[k].map(function (x, j) { return x / (j + 1); }), behind = [], after = 0;
      var later = [], tail = 0, following = [];  // P(j others > r - 1); the mean count behind
      for (var r = N - 1; r >= 0; r--) {
        after += alone[r]; behind[r] = after - alone[r];
        tail += c.moves[k][r]; later[r] = tail - c.moves[k][r];
      }
      for (r = 0; r < N; r++) {
        following[r] = behind[r] > 0 ? later[r] / Math.max(behind[r], tiny) - (r + 1) : 0;
      }
      [[true, alone], [false, behind]].forEach(function (kind) {
        for (var i = 1; i <= n; i++) {
          var ahead = Math.max(tokens - i * room, 0);
          for (var j = 0; j < N; j++) {
            var w = picked / n * kind[1][j];
            if (!(w > tiny)) continue;
            share.push(w); reach.push(ahead + (j * T + T));
            widths.push(width); more.push(kind[0] ? 0 : following[j] * T);
          }
        }
      });
    }
    var sum = 0, known = {}, starts = [];
    function timed(tokens) {
      if (!(tokens in known)) known[tokens] = step(decodes, tokens);
      return known[tokens];
    }
    for (var p = 0; p < share.length; p++) {
      var whole = Math.ceil(reach[p] / room);
      // Not the last of its prefill: the prompts behind it share its step, up to the room.
      var rest = Math.min(reach[p] + more[p] - (whole - 1) * room, room);
      starts.push((whole - 1) * timed(room) + timed(rest));
      sum += share[p];
    }
    return {share: share.map(function (x) { return x / sum; }), starts: starts, widths: widths};
  }
  function percentiles(rate, met, steady) {  // Engine.percentiles, of one length
    var q = data.quantiles, weights = data.spread[1], mass = 0, share = [], starts = [];
    var widths = [];
    weights.forEach(function (w) { mass += w; });
    met.forEach(function (decodes, k) {  // at each point of the spread of the decodes met
      var part = waits(rate, decodes);
      part.share.forEach(function (x) { share.push(weights[k] / mass * x); });
      starts = starts.concat(part.starts); widths = widths.concat(part.widths);
    });
    var qs = q.percentiles.map(function (x) { return x / 100; });
    var first = iaQuantiles.mixture(share, starts, widths, qs, q.grid);
    var token = q.normal.map(function (z) {  // queueing.TPOT_QUANTILE: a gamma's, skewed
      return call(q.tpot, {tpot: steady.tpot, tpot_spread: steady.tpot_spread,
        tpot_skewness: steady.tpot_skewness, z: z});
    });
    var named = {ttft: {}, tpot: {}};
    q.names.forEach(function (name, i) {
      named.ttft[name] = first[i]; named.tpot[name] = token[i] / E;
    });
    return named;
  }
  // As the library's saturation search: the rate doubled while it is kept up with, then the
  // bracket closed to a billionth of it; where the margins of the rates kept up with point to
  // where the margin reaches 0 (a line through the last two, a parabola through the last
  // three), the rates either side of it, as far as line and parabola disagree, are tried,
  // else the bracket is halved.
  function saturation() {
    var low = 0, high = 1, below = null, kept = [], s;
    while ((s = state(high, below)) !== null && s.ok) {
      kept.push([high, s.margin]); low = high; high *= 2; below = s.mean_step;
    }
    var tolerance = (high - low) * Math.pow(2, -30);
    while (high - low > tolerance) {
      var rates = [(low + high) / 2], n = kept.length;
      if (n > 1 && kept[n - 1][1] > kept[n - 2][1]) {
        var x0 = kept[n - 2][0], m0 = kept[n - 2][1], x1 = kept[n - 1][0], m1 = kept[n - 1][1];
        var aim = x1 - m1 * (x1 - x0) / (m1 - m0), side = Math.abs(aim - x1) / 8;
        if (n > 2 && kept[n - 2][1] > kept[n - 3][1]) {
          var x2 = x1, m2 = m1;
          x1 = x0; m1 = m0; x0 = kept[n - 3][0]; m0 = kept[n - 3][1];
          var bent = x0 * m1 * m2 / ((m0 - m1) * (m0 - m2))
            + x1 * m0 * m2 / ((m1 - m0) * (m1 - m2))
            + x2 * m0 * m1 / ((m2 - m0) * (m2 - m1));
          side = Math.min(side, 2 * Math.abs(bent - aim)); aim = bent;
        }
        side = Math.max(side, tolerance / 4);
        if (low < aim - side && aim + side < high) rates = [aim - side, aim + side];
      }
      for (var i = 0; i < rates.length; i++) {
        s = state(rates[i], below);
        if (s === null || !s.ok) { high = rates[i]; break; }
        kept.push([rates[i], s.margin]); low = rates[i]; below = s.mean_step;
      }
    }
    return low;
  }
  return {saturation: saturation, state: state};
};

// Quantiles of a request's TTFT on the calculator's page, as ``serving.queueing`` finds them,
// step for step (the same sums in the same order, so the same numbers): of a mixture of uniform
// distributions (``mixture_quantiles``). The grid's points are the library's, in ``data``
// (queueing.GRID). A TPOT's quantiles are a printed formula (queueing.TPOT_QUANTILE, at
// queueing.NORMAL_POINTS), evaluated in steady.js.
window.iaQuantiles = window.iaQuantiles || {
  // ``qs`` of the mixture of uniforms on [starts[i], starts[i] + widths[i]] of ``weights``: its
  // distribution's second derivative (weight / width at each start, minus at each end) put on
  // a grid, each split between the points either side, and summed twice; the first grid to the
  // last end, the second up to where all but a thousandth of the top quantile's tail lies.
  mixture: function (weights, starts, widths, qs, grid) {
    var n = weights.length, top = -Infinity, i, k;
    for (i = 0; i < n; i++) top = Math.max(top, starts[i] + widths[i]);
    var most = Math.max.apply(null, qs), cdf = [], at = [];
    for (var pass = 0; pass < 2; pass++) {
      var step = top / grid, curve = new Array(grid + 2).fill(0);
      [1, -1].forEach(function (sign) {  // the starts, then the ends
        var low = new Array(grid + 2).fill(0), high = new Array(grid + 2).fill(0);
        for (var j = 0; j < n; j++) {  // numpy's bincount of each side of the split
          var end = sign > 0 ? starts[j] : starts[j] + widths[j];
          var x = Math.min(end / step, grid), whole = Math.trunc(x), f = x - whole;
          var height = sign * weights[j] / widths[j];
          low[whole] += height * (1 - f);
          high[whole + 1] += height * f;
        }
        for (var b = 0; b < grid + 2; b++) curve[b] = curve[b] + low[b] + high[b];
      });
      var density = 0, sum = 0;
      for (k = 0; k < grid + 2; k++) {
        density += curve[k]; sum += density;
        cdf[k] = sum * step; at[k] = k * step;
      }
      var aim = 1 - (1 - most) / 1000, past = 0;  // numpy's searchsorted: the first at or past
      while (past < grid + 2 && cdf[past] < aim) past++;
      top = at[Math.min(past + 1, grid + 1)];
    }
    return qs.map(function (q) {  // numpy's interp: the last point at or below q, and the next
      var last = cdf.length - 1;
      if (q >= cdf[last]) return at[last];
      if (q < cdf[0]) return at[0];
      var low = 0, high = last;
      while (high - low > 1) {
        var middle = (low + high) >> 1;
        if (cdf[middle] <= q) low = middle; else high = middle;
      }
      return (at[low + 1] - at[low]) / (cdf[low + 1] - cdf[low]) * (q - cdf[low]) + at[low];
    });
  }
};

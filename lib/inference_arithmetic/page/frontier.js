// The throughput-interactivity frontier on the calculator's page (``serving.frontier``), step
// for step: the layouts ``frontier.layouts`` tries on up to ``f.most_gpus`` GPUs (tensor
// parallelism at each degree that splits the heads, ``heads``; for an MoE model, each degree
// that spreads the experts, ``experts``, "expert" where the heads split too, "expert-dp"
// everywhere), the closed loop (closed.js) of each of ``f.concurrency`` users on each that fits,
// and their Pareto set (``frontier.pareto``). ``engineOf(n_gpus, parallel)`` is the loop's
// engine of that layout, or null where a rule refuses the layout (its memory, say); it throws
// the error that refuses the request itself. Returns the points, none where nothing fits.
window.iaFrontier = window.iaFrontier || function (f, heads, experts, engineOf) {
  var within = function (n) { return n <= f.most_gpus; };
  heads = heads.filter(within); experts = experts.filter(within);
  var found = heads.map(function (n) { return [n, "tensor"]; });
  experts.forEach(function (n) {
    if (n === 1) return;  // one GPU holds every expert: tensor parallelism of degree 1
    if (heads.indexOf(n) >= 0) found.push([n, "expert"]);
    found.push([n, "expert-dp"]);
  });
  var candidates = [];
  found.forEach(function (layout) {
    var e = engineOf(layout[0], layout[1]);
    if (e === null) return;
    f.concurrency.forEach(function (c) {
      var r = iaLoop(e, c);
      candidates.push({n_gpus: layout[0], parallel: layout[1], concurrency: c,
        throughput_per_gpu: r.throughput / layout[0], tokens_per_s_per_user: 1 / r.tpot,
        throughput: r.throughput, ttft: r.ttft, tpot: r.tpot});
    });
  });
  if (!candidates.length) return [];
  // The points no other dominates, the most tokens per user first; of points equal in both,
  // the first of fewer GPUs, then fewer users (a stable sort, as Python's).
  candidates.sort(function (a, b) {
    return (b.tokens_per_s_per_user - a.tokens_per_s_per_user) ||
      (b.throughput_per_gpu - a.throughput_per_gpu) || (a.n_gpus - b.n_gpus) ||
      (a.concurrency - b.concurrency);
  });
  var kept = [], best = -1;
  candidates.forEach(function (p) {
    if (p.throughput_per_gpu > best) { kept.push(p); best = p.throughput_per_gpu; }
  });
  return kept;
};

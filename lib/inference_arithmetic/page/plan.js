// Sizing from targets on the calculator's page: ``planning.plan_colocated``'s search, step for
// step, over the page's steady state (steady.js). For each degree the plan tries (``degrees``, up
// to planning.PLAN_DEGREE: of tensor parallelism or a pipeline's stages, as the form's
// parallelism says), the fewest replicas whose steady state
// meets both targets; of those, the cheapest (the first of equal cost), skipping as it does a
// degree whose one replica costs no less than the best. ``engineOf(degree)``
// is the engine of one replica (null where the deployment is refused: it does not fit, say),
// ``stateOf(engine, share)`` its steady state at a rate; the costs and the replicas' share
// are the spec's formulas (continuous.REPLICAS, economics.output_cost_at_rate).
window.iaPlan = window.iaPlan || function (plan, degrees, engineOf, stateOf, t, call,
                                           replicas, stream) {
  var best = null;
  for (var i = 0; i < degrees.length; i++) {
    var degree = degrees[i];
    // One replica of this degree costs as much as the best (the costs go as the GPUs): its
    // engine, whose saturation rate is most of the search's time, is not worked out.
    if (best !== null && degree >= best.gpus) continue;
    var e = engineOf(degree);
    if (e === null) continue;
    for (var r = 1; r <= Math.floor(plan.most_gpus / degree); r++) {
      var share = call(replicas.share, {requests_per_s: t.rate, replicas: r});
      // No steady state at this share (null, or past the memory's capacity): saturated, as
      // the library's plan finds it; more replicas.
      var s = stateOf(e, share);
      if (s === null || !s.ok) continue;
      if (s.ttft <= t.ttft_target && s.tpot <= t.tpot_target) {
        var gpus = r * degree, cost = call(stream, {price_per_hour: t.price_per_hour,
          n_gpus: gpus, requests_per_s: t.rate, output_len: t.output_len}).cost_output;
        if (best === null || cost < best.cost_output) {
          best = {replicas: r, n_gpus: degree, gpus: gpus, ttft: s.ttft, tpot: s.tpot,
                  cost_output: cost};
        }
        break;  // more replicas of this degree only cost more
      }
    }
  }
  return {best: best};
};

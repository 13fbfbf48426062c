// Sizing from targets on the calculator's page: ``planning.plan_colocated``'s search, step for
// step, over the page's steady state (steady.js). For each degree the plan tries (``degrees``, up
// to planning.PLAN_DEGREE: of tensor parallelism or a pipeline's stages, as the form's
// parallelism says), the fewest replicas whose steady state
// meets both targets; of those, the cheapest (the first of equal cost). ``engineOf(degree)``
// is the engine of one replica (null where the deployment is refused: it does not fit, say),
// ``stateOf(engine, share)`` its steady state at a rate; the costs and the replicas' share
// are the spec's formulas (continuous.REPLICAS, economics.output_cost_at_rate).
window.iaPlan = window.iaPlan || function (plan, degrees, engineOf, stateOf, t, call,
                                           replicas, stream) {
  var best = null;
  for (var i = 0; i < degrees.length; i++) {
    var degree = degrees[i], e = engineOf(degree);
    if (e === null) continue;
    for (var r = 1; r <= Math.floor(plan.most_gpus / degree); r++) {
      var one = {requests_per_s: t.rate, replicas: r, replica_saturation: e.replica_saturation};
      var share = call(replicas.share, one);
      if (share > one.replica_saturation) continue;  // saturated: more replicas
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

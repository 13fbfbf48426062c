// Sizing from targets on the calculator's page: ``planning.plan_colocated``'s search, step for
// step, over the page's steady state (steady.js). For each degree the plan tries (``degrees``, up
// to planning.PLAN_DEGREE: of tensor parallelism or a pipeline's stages, as the form's
// parallelism says), the fewest replicas whose steady state
// meets both targets; of those, the cheapest (the first of equal cost), skipping as it does a
// degree whose one replica costs no less than the best. ``engineOf(degree)``
// is the engine of one replica (null where the deployment is refused: it does not fit, say),
// ``stateOf(engine, share)`` its steady state at a rate; the costs and the replicas' share
// are the spec's formulas (continuous.REPLICAS, economics.output_cost_at_rate). The targets
// are judged as ``targets.judge`` judges them: on the means (``t.percentile`` null), or on the
// percentile of each request's times named ``t.name``, worked out only where the means meet
// them (a p90 or a p99 is at least the mean). On a percentile the library starts each
// degree's search at the replicas one replica's goodput needs (``targets.goodput_of``), which
// the replicas below it miss, since the times grow with the rate; the page tries them.
window.iaPlan = window.iaPlan || function (plan, degrees, engineOf, stateOf, t, call,
                                           replicas, stream) {
  var best = null;
  function meets(judged) {  // targets._excess: how far past each target, at most 0 to meet it
    return judged.ttft / t.ttft_target - 1 <= 0 && judged.tpot / t.tpot_target - 1 <= 0;
  }
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
      var judged = {ttft: s.ttft, tpot: s.tpot};
      if (t.percentile !== null && (t.percentile <= 50 || meets(judged))) {
        var spread = s.percentiles();
        judged = {ttft: spread.ttft[t.name], tpot: spread.tpot[t.name]};
      }
      if (meets(judged)) {
        var gpus = r * degree, cost = call(stream, {price_per_hour: t.price_per_hour,
          n_gpus: gpus, requests_per_s: t.rate, output_len: t.output_len}).cost_blended;
        if (best === null || cost < best.cost_blended) {
          best = {replicas: r, n_gpus: degree, gpus: gpus, ttft: judged.ttft,
                  tpot: judged.tpot, percentile: t.percentile, cost_blended: cost};
        }
        break;  // more replicas of this degree only cost more
      }
    }
  }
  return {best: best};
};

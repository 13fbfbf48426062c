// The closed loop of the calculator's page: ``users`` users, each sending its next request as
// soon as its last one ends (``serving.closed.loop_state``), step for step as in Python, over
// the step the page's data carries (printed by sympy.jscode). It holds no formula of its own:
// ``e.step(decodes, tokens)`` times a step of that many decodes beside that many prompt tokens,
// and ``e.capacity`` is the requests the engine runs at once (its memory and its engine's
// max_num_seqs). Only the loop's arithmetic is here: the engine holds N = min(C, capacity)
// requests, in cohorts of the prompts a step's budget takes (or one prompt, in chunks); over a
// request's cycle the engine takes P prefill steps and decode-only steps, or, where the prompts
// need more steps than a cycle has, every step prefills (prefill bounds it). Little's law
// turns the cycle into a rate, and the users waiting outside the engine add (C - N) / rate to
// each first token. ``e``: its ``budget``, ``tokens`` (each prompt's), ``O`` (the steps a
// request decodes in, plus one), ``rows`` (a decode's rows of the budget), ``mean_output`` and
// ``tokens_per_step`` (output tokens a step yields each request).
window.iaLoop = window.iaLoop || function (e, users) {
  var n = Math.min(users, e.capacity), stepsEach = e.O - 1, rows = e.rows;
  var tokens = e.tokens, budget = e.budget, cycle = stepsEach + 1;
  var decodesP = 0;  // the decodes beside a prefill step's prompts: a fixed point with its room
  var room, span, q, alone, p, bound, fresh;
  for (var i = 0; i < 50; i++) {
    room = Math.max(budget - rows * decodesP, 1);
    span = Math.ceil(tokens / room);  // one prompt's prefill steps, alone
    cycle = span + stepsEach;
    q = Math.min(room / tokens, n);  // prompts a prefill step takes, when they wait
    alone = span > 1 && n * span <= cycle;  // each chunked prompt prefilled by itself
    p = alone ? n * span : Math.max(n / q, span);  // prefill steps a cycle
    bound = p > cycle;
    fresh = !bound ? Math.max(n - Math.max(q, 1), 0) : Math.min(stepsEach * q, n - q);
    if (Math.abs(fresh - decodesP) <= 1e-9 * Math.max(fresh, 1)) break;
    decodesP = fresh;
  }
  var kinds, first;  // each kind of step: [how many a cycle, its decodes, its time]
  if (alone) {  // span - 1 full chunks, then the step with the rest of the prompt
    var full = e.step(decodesP, room), rest = e.step(decodesP, tokens - (span - 1) * room);
    kinds = [[n * (span - 1), decodesP, full], [n, decodesP, rest]];
    first = (span - 1) * full + rest;
  } else {
    var prefill = e.step(decodesP, Math.min(room, q * tokens));
    kinds = [[p, decodesP, prefill]];
    first = span * prefill;
  }
  var inEngine = 0, tpot;
  if (!bound) {  // each request's cycle: its own prefill, and others' among its decodes
    if (cycle > p) {
      var decodesD = (n * stepsEach - p * decodesP) / (cycle - p);
      kinds.push([cycle - p, decodesD, e.step(decodesD, 0)]);
    }
    kinds.forEach(function (k) { inEngine += k[0] * k[2]; });
    tpot = (inEngine - first) / stepsEach;
  } else {  // prefill bounds it: q requests prefilled a step, each step alike
    inEngine = n / q * kinds[0][2];
    tpot = kinds[0][2];
    first = inEngine - stepsEach * kinds[0][2];
  }
  var rate = n / inEngine, wait = (users - n) / rate;  // Little's law on the queue outside
  return {ttft: first + wait, tpot: tpot / e.tokens_per_step, request_time: inEngine + wait,
          requests_per_s: rate, throughput: rate * e.mean_output, concurrency: users,
          in_engine: n, queued: users - n, prefill_bound: bound};
};

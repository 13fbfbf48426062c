// The calculator's page (ia.calculator): an interpreter of the spec the library hands it. It
// fills the spec's templates with its formulas' values, in the order the library checks them;
// rules and words come from the spec, numbers' text from iaShow. It holds no formula, no check
// and no message of its own.
var iaCalc = window.iaCalc || (window.iaCalc = function (root) {
  var spec = JSON.parse(root.querySelector(".ia-calc-spec").textContent);
  var state = Object.assign({}, spec.state), typed = {}, saturations = {};
  function compile(f) {
    if (!f.fn) f.fn = new Function(f.args.join(","), f.body);
    return f;
  }
  function call(f, values) {
    compile(f);
    return f.fn.apply(null, f.args.map(function (a) { return values[a]; }));
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, key) { return String(values[key]); });
  }
  function used(c) {  // calculator.used: the settings a control counts in (spec ONLY)
    for (var key in c.only) if (c.only[key].indexOf(state[key]) < 0) return false;
    return true;
  }
  function checkNumbers() {  // the form's own ranges, in the order of its controls' kinds
    var i, c, x;
    for (i = 0; i < spec.controls.length; i++) {
      c = spec.controls[i]; x = state[c.name];
      if ((c.kind !== "range" && c.kind !== "degrees") || !used(c)) continue;
      if (!(Number.isInteger(x) && x >= c.min && x <= c.max)) {
        return fill(spec.count_message, {name: c.name, low: iaShow(c.min, "integer"),
          upper: " to " + iaShow(c.max, "integer"), value: typed[c.name]});
      }
    }
    for (i = 0; i < spec.controls.length; i++) {
      c = spec.controls[i]; x = state[c.name];
      if (c.kind !== "amount" || !used(c) || (c.blank && x === null)) continue;
      if (!(isFinite(x) && x >= c.min && x <= c.max && !(c.above && x <= c.min) &&
            !(c.below && x >= c.max))) {
        return fill(c.message, {value: typed[c.name]});
      }
    }
    return null;
  }
  // A stream's serving options (Scenario's prefix_hit_rate and speculative): the step's key
  // (calculator.step_key) and the values they add, or the library's refusal.
  function servingOptions() {
    var name = state.speculative, options = [], values = {};
    var method = name === spec.no_speculation ? null : spec.speculative[name];
    if (method && method.error) return {error: method.error};
    if (method && method.models && method.models.indexOf(state.model) < 0) {
      return {error: fill(method.refusal, {model: state.model})};  // no MTP module to draft
    }
    if (state.prefix_hit_rate > 0) options.push("prefix");
    if (method) {
      options.push("speculative");
      values = {draft_len: method.draft_len, acceptance_rate: method.acceptance_rate};
    }
    if (options.length && state.step !== "kernels") return {error: spec.not_kernels[state.step]};
    return {key: options.join(",") + ":" + (method ? method.draft : "None"), values: values,
            prefix: options.indexOf("prefix") >= 0, speculating: method !== null};
  }
  var plain = {key: ":None", values: {}, prefix: false, speculating: false};
  var speculative = spec.controls.filter(function (c) { return c.name === "speculative"; })[0];
  // One deployment's values and its refusal, if any: the Scenario's checks in its order (a
  // rule's refusal names the rule, ``check``). A stream takes the serving options where the
  // form uses them (not in the frontier's mode: its steps are plain).
  function deployment(m, g, names, n_gpus, replicas, parallel, streaming) {
    var serving = streaming && used(speculative) ? servingOptions() : plain;
    if (serving.error) return {error: serving.error, names: names, fatal: true};
    if (!(parallel in m.checks)) return {error: spec.no_experts, names: names, fatal: true};
    var auto = state.dtype === spec.auto, layers = auto ? m.layers_format : state.dtype;
    var b = spec.dtypes[state.dtype], step = state.step;
    var weights = auto ? m.weights : {bytes_per_number: b, expert_bytes_per_number: b,
                                      vocab_bytes_per_number: b};
    var compute = spec.computes[state.compute_dtype === spec.same ? layers : state.compute_dtype];
    var cache = state.cache_dtype === spec.computed ? compute : state.cache_dtype;
    cache = spec.names[cache] || cache;
    names.compute_dtype = compute; names.cache_dtype = cache; names.n_gpus = n_gpus;
    names.rates = Object.keys(g.flop_rate).join(", "); names.degrees = m.degrees;
    names.expert_degrees = m.expert_degrees;
    var fastest = null;  // dtypes.fastest_wide: the fastest of 16 bits or more, narrowest
    for (var d in g.flop_rate) {
      if (!(spec.dtypes[d] >= 2)) continue;
      var r = g.flop_rate[d], best = fastest === null ? -1 : g.flop_rate[fastest];
      if (r > best || (r === best && spec.dtypes[d] < spec.dtypes[fastest])) fastest = d;
    }
    names.fastest = fastest;
    if (!(compute in g.flop_rate)) return {error: spec.no_rate, names: names, fatal: true};
    if (n_gpus > 1 && g.figures.interconnect_bandwidth === null) {
      return {error: spec.no_link, names: names};
    }
    var v = Object.assign({}, m.sizes, g.figures, spec.options, g.compute[step][compute],
                          g.weights[step][layers], weights, {
      flop_rate: g.flop_rate[compute],
      kv_bytes_per_number: spec.dtypes[cache], n_gpus: n_gpus, replicas: replicas,
      batch: streaming ? 1 : state.batch,  // a stream: one request at a time enters
      seq_len: state.prompt_len, output_len: state.output_len,
      context_window: m.context_window, memory_utilization: state.memory_utilization,
      token_budget: state.token_budget
    });
    spec.controls.forEach(function (c) {  // the values the form sets, where it uses them
      if (c.value && used(c)) v[c.name] = state[c.name];
    });
    Object.assign(v, serving.values);
    var rules = m.checks[parallel];
    for (var j = 0; j < rules.length; j++) {
      var check = rules[j];
      if (!call(check.holds, v)) {
        var shown = Object.assign({}, names);
        for (var f in check.fields) {
          shown[f] = iaShow(call(check.fields[f], v), check.fields[f].kind);
        }
        return {error: check.message, names: shown, check: check.name};
      }
    }
    return {values: v, serving: serving};
  }
  var owned = {};
  function model() {  // the registry model chosen, or the pasted config.json read (own_config)
    if (state.model !== spec.own.name) return spec.models[state.model];
    if (!(state.config in owned)) owned[state.config] = readOwn(state.config);
    return owned[state.config];
  }
  function readOwn(text) {  // own_config.reading's rules: fields by size, fixed fields
    var o = spec.own, config = null, best = null;
    try { config = JSON.parse(text); } catch (error) { config = null; }
    if (config === null || typeof config !== "object" || Array.isArray(config)) {
      return {error: o.messages.json};
    }
    var type = config.model_type === undefined ? null : config.model_type;
    var rules = typeof type === "string" && o.rules.hasOwnProperty(type) ? o.rules[type] : null;
    if (rules === null) {
      return {error: fill(o.messages.type, {types: Object.keys(o.rules).sort().join(", "),
                                            model_type: JSON.stringify(type)})};
    }
    for (var i = 0; i < rules.length; i++) {
      var t = rules[i], missing = [], other = [], key, x;
      for (var size in t.sizes) {
        key = t.sizes[size]; x = config[key];
        if (x === undefined || x === null) {
          if (missing.indexOf(key) < 0) missing.push(key);
        } else if (!(Number.isInteger(x) && x > 0)) {
          return {error: fill(o.messages.size, {field: key, value: JSON.stringify(x)})};
        }
      }
      for (key in t.fixed) {
        x = config[key];
        var absent = x === undefined || x === null;
        if (absent ? !t.fixed[key].absent : JSON.stringify(x) !== JSON.stringify(t.fixed[key].value)) {
          other.push(key);
        }
      }
      if (!missing.length && !other.length) return ownModel(t, config);
      // Else the registry model it is closest to says what the page cannot read.
      if (best === null || missing.length + other.length < best.missing.length + best.other.length) {
        best = {missing: missing, other: other};
      }
    }
    if (best.missing.length) return {error: fill(o.messages.missing, {fields: best.missing.join(", ")})};
    key = best.other[0];
    return {error: fill(o.messages.other, {field: key, model_type: type,
      value: JSON.stringify(config[key] === undefined ? null : config[key])})};
  }
  function ownModel(t, config) {  // the registry model's formulas at the pasted sizes
    var base = spec.models[t.name], sizes = Object.assign({}, base.sizes), m = {};
    for (var size in t.sizes) sizes[size] = config[t.sizes[size]];
    var span = "context_window" in sizes ? sizes.context_window : base.context_window;
    delete sizes.context_window;
    var most = spec.controls.filter(function (c) { return c.name === "n_gpus"; })[0].max;
    function degreesOf(parallel, name) {  // the GPU counts that pass the check of that name
      var rule = (base.checks[parallel] || []).filter(function (c) { return c.name === name; });
      var list = [];
      for (var n = 1; rule.length && n <= most; n++) {
        if (call(rule[0].holds, Object.assign({}, sizes, {n_gpus: n}))) list.push(n);
      }
      return list;
    }
    var list = degreesOf("tensor", "heads"), experts = degreesOf("expert-dp", "experts");
    function planned(degrees) { return degrees.filter(function (n) { return n <= spec.plan.degree; }); }
    m = Object.assign(m, base, {sizes: sizes, context_window: span, degree_list: list,
      degrees: list.join(", "), expert_degree_list: experts,
      plan_degrees: {tensor: planned(list), pipeline: planned(degreesOf("pipeline", "layers"))}});
    return m;
  }
  function bandEntry() {  // serving.bands.groups_of the form's deployment, and its bands
    var m = model(), g = spec.gpus[state.gpu], b = spec.band_groups, have = {};
    (m.groups ? m.groups[state.dtype] || [] : []).concat(g.groups).forEach(function (n) {
      have[n] = true;
    });
    if (b.expert_parallel.indexOf(state.parallel) >= 0) have["expert-parallel"] = true;
    if (state.prompt_len >= b.long_prompt) have["long-prompt"] = true;
    return b.table[b.order.filter(function (n) { return have[n]; }).join(",")];
  }
  function price(g) { return state.price_per_hour === null ? g.price_per_hour : state.price_per_hour; }
  function note(g, mode, exact) {  // calculator._note
    if (mode === spec.modes.frontier) {  // no cost and no band: ia.frontier gives neither
      return fill(spec.notes.frontier, {users: spec.frontier.users,
                                        most_gpus: spec.frontier.most_gpus}) + ".";
    }
    var parts = [state.price_per_hour !== null ?
      fill(spec.notes.given, {price_per_hour: iaShow(state.price_per_hour, spec.given_kind)}) :
      g.price_per_hour !== null ? fill(spec.notes.priced, g) : spec.notes.unpriced];
    parts.push(mode === spec.modes.static ? (exact ? spec.notes.exact : spec.notes.approximate) :
      mode === spec.modes.continuous ? spec.notes.continuous : spec.notes.plan);
    if (mode === spec.modes.plan && spec.plan.judged[state.percentile] !== null) {
      parts.push(fill(spec.notes.judged, {percentile: state.percentile}));
    }
    if (state.step === "kernels") {  // what the band is, and which kinds have none
      var b = bandEntry(), withheld = b.withheld[mode === spec.modes.static ? "static" : "streamed"];
      if (b.describe) parts.push(b.describe);
      if (withheld) parts.push(withheld);
    }
    return parts.join("; ") + ".";
  }
  function calculate() {
    var bad = checkNumbers();
    if (bad) return {error: bad};
    var m = model(), g = spec.gpus[state.gpu], mode = state.mode;
    var streaming = mode === spec.modes.continuous;
    var timed = mode === spec.modes.continuous || mode === spec.modes.plan;
    if (timed && spec.stream_parallel.indexOf(state.parallel) < 0) {
      return {error: fill(spec.not_streamed, {parallel: state.parallel})};
    }
    if (m.error) return {error: m.error};
    var names = Object.assign({}, spec.options, state);
    if (mode === spec.modes.plan) return plan(m, g, names);
    if (mode === spec.modes.frontier) return frontier(m, g, names);
    var d = deployment(m, g, names, state.n_gpus, state.replicas, state.parallel, streaming);
    if (d.error) return {error: fill(d.error, d.names)};
    var v = d.values, cost = price(g);
    v.price_per_hour = cost === null ? 1 : cost;
    if (streaming) return steadyState(m, g, v, d.serving);
    var one = oneToken();  // no time per output token: refused as ia.calculate refuses it
    if (one) return {error: one};
    var r = call(m.report[state.step][state.parallel], v);
    for (var k in r) if (/^cost_/.test(k) && cost === null) r[k] = null;
    return {rows: spec.rows, values: r, note: note(g, mode, r.exact)};
  }
  function engine(m, v, serving) {  // ia.serving.engine.Engine of these values
    // Each prompt's tokens to compute (a prefix cache holds the rest), each decode's rows in
    // the step and the tokens a step yields it (speculating): the library's formulas. A
    // pipeline has n_gpus micro-batches in flight (its capacity is of each).
    var parallel = state.parallel, stages = call(spec.in_flight, v)[parallel];
    var e = iaSteady({prompt_counts: spec.prompt_counts, runaway: spec.runaway,
      context: spec.context, capacity: m.continuous.capacity,
      step: m.continuous.step[state.step][serving.key], parallel: parallel,
      stages: stages, wait: spec.pipeline_wait, square: spec.pipeline_square,
      steady: spec.steady, spread: spec.spread, quantiles: spec.quantiles,
      speculating: serving.speculating,
      rows: serving.speculating ? call(spec.serving.verified, v) : 1,
      tokens_per_step: serving.speculating ? call(spec.serving.expected, v) : 1,
      prefilled: serving.prefix ? Math.round(call(spec.serving.prefilled, v)) : v.seq_len},
      call, v);
    // Its saturation rate, worked out when first asked (a bisection over steady states:
    // the plan never asks) and kept for these values.
    var key = JSON.stringify([state.model, state.gpu, state.step, serving.key, parallel, v]);
    e.replicaSaturation = function () {
      if (!(key in saturations)) saturations[key] = e.saturation();
      return saturations[key];
    };
    e.stages = stages;
    return e;
  }
  function oneToken() {
    return state.output_len < 2 ? fill(spec.one_token, {output_len: state.output_len}) : null;
  }
  function steadyState(m, g, v, serving) {  // ia.continuous.steady_state_of
    var rate = state.requests_per_s, error = oneToken();
    if (error) return {error: error};
    var e = engine(m, Object.assign({}, v, {replicas: 1, price_per_hour: 1}), serving);
    // The replicas share the requests: each is one engine at its share (continuous.REPLICAS).
    var one = {requests_per_s: rate, replicas: v.replicas, replica_saturation: e.replicaSaturation()};
    var share = call(spec.replicas.share, one);
    var s = share <= one.replica_saturation ? e.state(share, null) : null;
    if (s === null || !s.ok) {
      var kinds = spec.saturated_kinds, gpus = v.replicas === 1 ? state.n_gpus :
        fill(spec.replicated, {replicas: v.replicas, n_gpus: state.n_gpus});
      var whole = call(spec.replicas.saturation_rate, one);
      return {error: fill(spec.saturated, {rate: iaShow(rate, kinds.rate), model: state.model,
        n_gpus: gpus, gpu: state.gpu, saturation: iaShow(whole, kinds.saturation),
        prompt_len: state.prompt_len, output_len: state.output_len})};
    }
    one.replica_concurrency = s.concurrency;
    // The memory of the requests in one replica's engine (in each of a pipeline's batches in
    // flight), each at its whole T + O tokens, and the cost of all the GPUs at the rate
    // (calculator._stream_values).
    var memory = call(m.report[state.step][state.parallel], Object.assign({}, v,
                      {batch: Math.ceil(s.concurrency / e.stages)}));
    var gpus = v.n_gpus * v.replicas, cost = price(g);
    var costs = call(spec.stream, Object.assign({}, v, {n_gpus: gpus, requests_per_s: rate}));
    var values = {
      ttft: s.ttft, tpot: s.tpot, request_time: s.request_time,
      concurrency: call(spec.replicas.concurrency, one),
      throughput: call(spec.replicas.throughput, Object.assign({output_len: v.output_len}, one)),
      utilization: call(spec.replicas.utilization, one),
      saturation_rate: call(spec.replicas.saturation_rate, one),
      weights: memory.weights, kv_cache: memory.kv_cache, memory: memory.memory,
      budget: memory.budget, capacity: memory.capacity, gpus: gpus,
      cost_blended: cost === null ? null : costs.cost_blended,
      cost_request: cost === null ? null : costs.cost_request};
    var spread = s.percentiles();  // by the readout's keys (calculator_readout.percentile_values)
    for (var time in spread) {
      for (var name in spread[time]) {
        values[fill(spec.percentile_key, {time: time, name: name})] = spread[time][name];
      }
    }
    return {rows: spec.continuous_rows, note: note(g, state.mode), values: values};
  }
  function plan(m, g, names) {  // ia.plan (plan.js): the cheapest deployment meeting both
    var error = oneToken();
    if (error) return {error: error};
    var cost = price(g);
    if (cost === null) return {error: g.no_price};
    var found = iaPlan(spec.plan, m.plan_degrees[state.parallel], function (degree) {
      var d = deployment(m, g, Object.assign({}, names), degree, 1, state.parallel, true);
      if (d.fatal) throw new Error(fill(d.error, d.names));  // refused at every degree
      if (d.error) return null;
      d.values.price_per_hour = cost;
      return engine(m, d.values, d.serving);
    }, function (e, share) { return e.state(share, null); }, {
      rate: state.requests_per_s, ttft_target: state.ttft_target,
      tpot_target: state.tpot_target, output_len: state.output_len, price_per_hour: cost,
      percentile: spec.plan.judged[state.percentile], name: state.percentile
    }, call, spec.replicas, spec.stream);
    if (found.error) return {error: found.error};
    if (found.best === null) {
      var shown = {most_gpus: spec.plan.most_gpus, gpu: state.gpu};
      ["rate", "ttft_target", "tpot_target"].forEach(function (k) {
        var value = k === "rate" ? state.requests_per_s : state[k];
        shown[k] = iaShow(value, spec.plan.kinds[k]);
      });
      var on = spec.plan.judged[state.percentile];
      on = on === null ? "" : fill(spec.plan.on, {percentile: on});
      return {error: fill(spec.plan.message, shown) + on};
    }
    return {rows: spec.plan_rows, values: found.best, note: note(g, state.mode)};
  }
  function frontier(m, g, names) {  // ia.frontier (frontier.js): closed loops (closed.js)
    var f = spec.frontier, kernels = state.step === "kernels";
    if (state.output_len < 2) return {error: f.one_token};
    var points = iaFrontier(f, m.degree_list || [], m.expert_degree_list || [],
                            function (n_gpus, parallel) {
      var d = deployment(m, g, Object.assign({}, names), n_gpus, 1, parallel, true);
      if (d.error && d.check && d.check !== f.request_check) return null;  // a layout refused
      if (d.error) throw new Error(fill(d.error, d.names));
      var experts = f.expert_parallel.indexOf(parallel) >= 0;
      if (experts && !kernels) throw new Error(f.experts_by_kernels);
      // The loop's engine (serving.closed): the plain step, at the mean context, and the
      // requests the memory holds whole, at most the engine's max_num_seqs (kernel by kernel).
      var v = d.values, formulas = experts ? m.experts : m.continuous;
      var step = experts ? formulas.step : formulas.step[state.step][plain.key];
      var point = Object.assign({}, v, {context_len: call(spec.context, v)});
      var whole = Object.assign({}, v, {context_len: v.seq_len + v.output_len});
      var held = Math.floor(call(formulas.capacity, whole)[parallel]);
      return {budget: v.token_budget, tokens: v.seq_len, O: v.output_len, rows: 1,
        mean_output: v.output_len, tokens_per_step: 1,
        capacity: kernels && g.batch.max_num_seqs ? Math.min(held, g.batch.max_num_seqs) : held,
        step: function (decodes, tokens) {
          point.decoding = Math.max(decodes, 0); point.prefill_tokens = tokens;
          return call(step, point)[parallel];
        }};
    });
    if (!points.length) {
      return {error: fill(f.no_layout, {model: state.model, most_gpus: f.most_gpus,
        gpu: state.gpu, prompt_len: state.prompt_len, output_len: state.output_len})};
    }
    var values = {};
    points.forEach(function (p, i) {
      var named = fill(f.deployment, Object.assign({gpu: state.gpu}, p));
      var cells = Object.assign({deployment: named}, p);
      f.columns.forEach(function (c) {
        values[fill(f.key, {key: c.key, point: i + 1})] = cells[c.key];
      });
    });
    return {columns: f.columns, points: points, values: values, note: note(g, state.mode)};
  }
  function bounds(r, keys) {
    var seen = [];
    keys.forEach(function (k) {
      var b = spec.bounds[r[k]]; if (seen.indexOf(b) < 0) seen.push(b);
    });
    return seen.join(spec.then);
  }
  var out = root.querySelector(".ia-calc-readout");
  function draw() {
    var r;
    try { r = calculate(); } catch (error) { r = {error: error.message}; }
    out.innerHTML = "";
    if (r.error) {
      var p = document.createElement("p");
      p.className = "ia-calc-message"; p.setAttribute("role", "alert");
      var strong = document.createElement("b"); strong.textContent = r.error;
      p.appendChild(strong); out.appendChild(p);
      return;
    }
    var table = document.createElement("table"), banded = state.step === "kernels";
    var band = banded && r.rows ? bandEntry().factors : null;
    if (r.columns) {  // the frontier's table: a column of each quantity, a row of each point
      table.className = "ia-calc-frontier";
      var head = document.createElement("tr");
      r.columns.forEach(function (c) {
        var th = document.createElement("th"); th.textContent = c.label; head.appendChild(th);
      });
      table.appendChild(head);
      r.points.forEach(function (_, i) {
        var tr = document.createElement("tr");
        r.columns.forEach(function (c) {
          var cell = document.createElement("td"), strong = document.createElement("b");
          var key = fill(spec.frontier.key, {key: c.key, point: i + 1}), value = r.values[key];
          cell.className = "ia-calc-value"; cell.dataset.key = key;
          if (c.kind === "text") cell.dataset.text = value; else cell.dataset.value = String(value);
          strong.textContent = iaShow(value, c.kind);
          cell.appendChild(strong); tr.appendChild(cell);
        });
        table.appendChild(tr);
      });
    }
    (r.rows || []).forEach(function (row) {
      var tr = document.createElement("tr"), name = document.createElement("td");
      var cell = document.createElement("td"), strong = document.createElement("b");
      name.textContent = row.label;
      cell.className = "ia-calc-value";
      if (row.kind === "bound") {
        cell.dataset.key = row.key.join(","); cell.dataset.text = bounds(r.values, row.key);
        strong.textContent = cell.dataset.text;
      } else {
        var value = r.values[row.key];
        cell.dataset.key = row.key;
        if (value !== null) cell.dataset.value = String(value);
        strong.textContent = iaShow(value, row.kind);
        var f = band && row.band ? band[row.band[0]] : null;  // none: no validated group
        if (f && value !== null) {  // serving.bands.band: a time's, a speed's
          var ends = call(spec.band_ends[row.band[1] ? "speed" : "time"],
                          {predicted: value, band_low: f[0], band_high: f[1]});
          strong.textContent = fill(spec.band_cell, {value: strong.textContent,
            low: iaShow(ends.low, row.kind), high: iaShow(ends.high, row.kind)});
        }
      }
      cell.appendChild(strong); tr.appendChild(name); tr.appendChild(cell); table.appendChild(tr);
    });
    var words = document.createElement("p");
    words.textContent = r.note;
    out.appendChild(table); out.appendChild(words);
  }
  var box = root.querySelector(".ia-calc-controls"), rows = {}, degrees = null;
  function options(select, names) {
    select.innerHTML = "";
    names.forEach(function (n) {
      var o = document.createElement("option");
      o.value = n; o.textContent = n; select.appendChild(o);
    });
  }
  function offerDegrees() {  // the model's degrees (a pipeline: any count), and the one chosen
    var c = spec.controls.filter(function (x) { return x.name === "n_gpus"; })[0], list = [];
    var heads = model().degree_list || [], experts = model().expert_degree_list || [];
    if (state.parallel === "tensor") list = heads.slice();
    else if (state.parallel === "expert") {  // the heads split and the experts spread
      list = heads.filter(function (n) { return experts.indexOf(n) >= 0; });
    } else if (state.parallel === "expert-dp") list = experts.slice();
    else for (var n = c.min; n <= c.max; n++) list.push(n);
    if (list.indexOf(state.n_gpus) < 0) list.push(state.n_gpus);
    options(degrees, list.sort(function (a, b) { return a - b; }));
    degrees.value = String(state.n_gpus);
  }
  function offerParallel() {  // a stream's parallelisms (spec.stream_parallel), and the one chosen
    var select = root.querySelector('select[name="parallel"]');
    var list = spec.controls.filter(function (x) { return x.name === "parallel"; })[0].options;
    if (state.mode !== spec.modes.static) list = spec.stream_parallel.slice();
    if (list.indexOf(state.parallel) < 0) list = list.concat([state.parallel]);
    options(select, list);
    select.value = state.parallel;
  }
  function showUsed() {  // each setting's own inputs (calculator.ONLY)
    spec.controls.forEach(function (c) { rows[c.name].style.display = used(c) ? "" : "none"; });
  }
  spec.controls.forEach(function (c) {
    var row = document.createElement("label"), input;
    row.textContent = c.label + " "; rows[c.name] = row;
    if (c.kind === "range" || c.kind === "amount") {  // what is typed is checked, never clamped
      input = document.createElement("input");
      input.type = "number"; input.step = c.kind === "amount" ? "any" : 1;
      if (c.kind === "range") { input.min = c.min; input.max = c.max; }
      var start = state[c.name];
      input.value = start === null ? "" : start; typed[c.name] = String(start);
      input.addEventListener("change", function () {
        typed[c.name] = input.value;
        var blank = input.value.trim() === "";
        state[c.name] = blank ? (c.blank ? null : NaN) : Number(input.value); draw();
      });
    } else if (c.kind === "text") {  // a config.json, read as it changes
      input = document.createElement("textarea");
      input.rows = 6; input.value = state[c.name];
      input.addEventListener("change", function () {
        state[c.name] = input.value; offerDegrees(); draw();
      });
    } else if (c.kind === "degrees") {  // the tensor-parallel degrees that split the heads
      input = degrees = document.createElement("select");
      input.addEventListener("change", function () {
        state[c.name] = Number(input.value); draw();
      });
    } else {
      input = document.createElement("select");
      options(input, c.options);
      input.value = state[c.name];
      input.addEventListener("change", function () {
        state[c.name] = input.value;
        if (c.name === "model" || c.name === "parallel") offerDegrees();
        if (c.name === "mode") offerParallel();
        showUsed(); draw();
      });
    }
    input.name = c.name; input.setAttribute("aria-label", c.label);
    row.appendChild(input); box.appendChild(row);
  });
  offerDegrees(); offerParallel(); showUsed();
  draw();
});

/* Quota management (dashboard.md §8.3, QT-1..5; GET /api/quotas): what providers said is left, what the bench
   sent, which models rest after a rate limit, the limits known; then (our addition) what the bench's calls took
   in tokens per model (COST-2). Drawn once per page load, like Logs: the tables are a reading, reload for another. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$, td = Bench.td;
  var drawn = false;
  Bench.loaders.quotas = function () {
    if (drawn) return;
    drawn = true;
    Bench.get("/api/quotas").then(draw);
  };

  function cols(titles, numeric) {
    return titles.map(function (t) { return {title: t, num: numeric.indexOf(t) >= 0}; });
  }
  function num(v) { return typeof v === "number" ? Bench.thousands(v) : "—"; }
  /* US dollars: cents from a cent up, four decimals below it, "$0" for free */
  function dollars(v) { return v === 0 ? "$0" : "$" + (v >= 0.01 ? v.toFixed(2) : v.toFixed(4)); }
  function numCell(v) { return td(num(v), {cls: "num", "data-sort": typeof v === "number" ? v : -1}); }
  function model(alias) {
    var known = (Bench.B.models || {})[alias];
    return known ? Bench.nameCell(Object.assign({alias: alias}, known)) : alias;
  }
  function local(iso) {  /* "YYYY-MM-DD HH:MM" in the browser's own time zone */
    var d = new Date(iso), two = function (n) { return (n < 10 ? "0" : "") + n; };
    if (isNaN(d)) return "—";
    return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " + two(d.getHours()) + ":" + two(d.getMinutes());
  }
  function card(id, title, sub, body) {
    return h("div", {cls: "card", id: id}, h("h2", {text: title}), sub ? h("p", {cls: "sub", text: sub}) : null, body);
  }

  function draw(r) {
    var sec = $("#tab-quotas");
    if (!r.ok) { Bench.add(sec, card("qt-intro", "Quota management", "", h("p", {cls: "errors", text: Bench.errorsText(r.errors)}))); return; }
    Bench.add(sec, card("qt-intro", "Quota management",
      "What is left of each rate limit and what the bench spent. Providers' figures come from the rate-limit headers " +
      "and 429 replies of the built-in client's calls; what the bench sent is its usage ledger; limits are the ones you " +
      "entered on Endpoints or that a provider stated. Calls through the llm CLI are in neither record.",
      Bench.filters(function () { return sec; })));

    var said = r.said.map(function (s) {
      return h("tr", {"data-connection": s.connection}, td(s.connection), td(model(s.alias)), td(s.counts),
        numCell(s.left), numCell(s.of), td(local(s.resets), {"data-sort": s.resets}),
        td(s.source + ", " + s.age_min + " min ago", {"data-sort": s.age_min}));
    });
    Bench.add(sec, card("qt-said", "What providers said is left · " + said.length, "",
      Bench.table(cols(["Connection", "Model", "Counts", "Left", "Of", "Resets", "From"], ["Left", "Of"]), said,
        "Nothing in force: no provider has stated a limit whose reset is still ahead.")));

    var sent = r.sent.map(function (s) {
      return h("tr", {"data-connection": s.connection}, td(s.connection), numCell(s.requests_24h), numCell(s.tokens_24h),
        numCell(s.requests_month), numCell(s.tokens_month));
    });
    Bench.add(sec, card("qt-sent", "What the bench sent", "Requests count every attempt (retries included); tokens are in + out. The month is the UTC calendar month.",
      Bench.table(cols(["Connection", "Requests 24 h", "Tokens 24 h", "Requests this month", "Tokens this month"],
        ["Requests 24 h", "Tokens 24 h", "Requests this month", "Tokens this month"]), sent, "No call in the ledger this month.")));

    var resting = r.resting.map(function (c) {
      return h("tr", {"data-connection": c.connection}, td(model(c.alias)), td(c.connection),
        td(c.back_in_min + " min", {cls: "num", "data-sort": c.back_in_min}), td(c.wait));
    });
    Bench.add(sec, card("qt-resting", "Resting after a rate limit · " + resting.length, "",
      Bench.table(cols(["Model", "Connection", "Back in", "Wait"], ["Back in"]), resting, "None: every model is free to call.")));

    var known = r.known.map(function (k) {
      return h("tr", {"data-connection": k.connection}, td(k.alias ? model(k.alias) : k.connection),
        r.keys.map(function (key) { return numCell(k.limits[key]); }), td(k.from));
    });
    Bench.add(sec, card("qt-known", "Known limits", "Per connection as you entered them (Endpoints), then per model as a provider stated them. The provider's own message is not shown: it can carry an account id.",
      Bench.table(cols(["Connection or model"].concat(r.keys, ["From"]), r.keys), known, "None known yet.")));

    var spent = r.cost.map(function (c) {
      return h("tr", {}, td(model(c.model)), numCell(c.calls),
        td(c.dollars === null ? "—" : dollars(c.dollars), {cls: "num", "data-sort": c.dollars === null ? -1 : c.dollars,
          title: c.dollars === null ? "no price known for this model" : "at the catalog's prices (models.dev), reasoning billed as output"}),
        numCell(c.input), numCell(c.output), numCell(c.reasoning),
        td(c.reasoning_share === null ? "—" : Math.round(c.reasoning_share * 100) + "%", {cls: "num", "data-sort": c.reasoning_share === null ? -1 : c.reasoning_share}),
        numCell(c.tokens_per_call), numCell(c.benchmark_calls));
    });
    Bench.add(sec, card("qt-cost", "Spent · " + spent.length, "Dollars where the catalog knows the model's price (models.dev, per million tokens), tokens beside: the built-in client's answered calls (streamed ones included) and the llm CLI's own log. Benchmark calls are the ones made to measure a model, not to work.",
      Bench.table(cols(["Model", "Calls", "Cost", "Input", "Output", "Reasoning", "Reasoning share", "Per call", "Benchmark calls"],
        ["Calls", "Cost", "Input", "Output", "Reasoning", "Reasoning share", "Per call", "Benchmark calls"]).map(function (c) {
          c.phone = ["Model", "Cost", "Input", "Output"].indexOf(c.title) >= 0;  /* money and tokens stay on a phone */
          return c;
        }), spent, "No answered call yet.")));
  }
})();

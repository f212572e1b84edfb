/* At a glance's Leaderboard (issues 20, 31): one collection's models ranked by a Bradley–Terry fit to the verdicts
   inside its judged panels (GET /api/leaderboard, the gateway's /bench/leaderboard for the signed-in admin).
   Each model's score sits on one shared scale with its 95% interval, under an axis with ticks; models whose
   intervals overlap share a rank (the reply's `rank`). The card says what it counts and what it leaves out,
   and lists judged models without a fit with why. The figures are in a folded table, and the same board
   downloads as CSV. The chosen collection is remembered in localStorage (bench.leaderboard).
   Issue 32: the source is the people's verdicts, council panels' peer rankings, or both (bench.leaderboard.source),
   and each ranking model's agreement with the people on the same panels is listed under the board. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$;
  var asked = 0;  /* the latest load: a slower earlier reply (another collection or source) must not overwrite it */
  var drawn = false, before = Bench.loaders.glance;
  Bench.loaders.glance = function () {
    if (before) before();
    if (!drawn) { drawn = true; draw(); }
  };

  function draw() {
    var names = Bench.B.collections || [];
    if (!names.length) return;  /* no collection, no panels to rank */
    var pick = h("select", {id: "lb-collection"}, names.map(function (n) { return h("option", {value: n, text: "bench/" + n}); }));
    if (names.indexOf(Bench.store("bench.leaderboard")) >= 0) pick.value = Bench.store("bench.leaderboard");
    var source = h("select", {id: "lb-source"}, [["verdicts", "Verdicts"], ["peers", "Peer rankings"], ["both", "Both"]].map(
      function (o) { return h("option", {value: o[0], text: o[1]}); }));
    if (["peers", "both"].indexOf(Bench.store("bench.leaderboard.source")) >= 0) source.value = Bench.store("bench.leaderboard.source");
    var csv = h("a", {id: "lb-csv", cls: "btn ghost small", download: "", text: "Download CSV"});
    var body = h("div", {id: "lb-body"}, h("p", {cls: "muted", text: "Loading…"}));
    var reload = function () { load(pick.value, source.value, body, csv); };
    pick.addEventListener("change", function () { Bench.store("bench.leaderboard", pick.value); reload(); });
    source.addEventListener("change", function () { Bench.store("bench.leaderboard.source", source.value); reload(); });
    Bench.add($("#tab-glance"), h("div", {cls: "card", id: "leaderboard"}, h("h2", {text: "Leaderboard"}),
      h("p", {cls: "sub", text: "Who wins when asked the same prompt: inside each judged panel, a useful seat beat a not-useful one. Scores are a Bradley–Terry fit (0 is average, +1 is e≈2.7 times the odds); bars are 95% intervals. Models whose intervals overlap share a rank, as on Chatbot Arena: a rank counts only the models told apart above."}),
      h("div", {cls: "row"}, h("label", {"for": "lb-collection", text: "Collection"}), pick,
        h("label", {"for": "lb-source", text: "From"}), source, csv), body));
    reload();
  }

  function load(name, from, body, csv) {
    var query = "/api/leaderboard?collection=" + encodeURIComponent("bench/" + name) + "&source=" + from;
    csv.href = query + "&format=csv";
    var mine = ++asked;
    Bench.get(query).then(function (r) {
      if (mine !== asked) return;
      body.textContent = "";
      if (!r.ok) { Bench.add(body, h("p", {cls: "errors", text: Bench.errorsText(r.errors)})); return; }
      Bench.add(body, h("p", {id: "lb-counts", cls: "muted", text: counts(r)}));
      Bench.add(body, r.models.length ? scale(r.models).concat([figures(r)]) : h("p", {cls: "muted",
        text: "No ranking yet: it needs a judged panel where one seat was useful and another was not."}));
      if (r.unfitted.length) Bench.add(body, h("div", {id: "lb-unfitted"}, h("h3", {text: "Judged, not ranked"}),
        h("ul", {}, r.unfitted.map(function (u) {
          return h("li", {"data-model": u.model}, h("strong", {text: u.model}), " (" + u.useful + "/" + u.judged + " useful): " + u.why);
        }))));
      if (r.rankers.length) Bench.add(body, h("p", {cls: "muted", id: "lb-rankers", text: "Rankers' agreement with the people: " +
        r.rankers.map(function (k) { return k.model + " " + (k.agreement === null ? "no judged pairs yet" :
          Math.round(100 * k.agreement) + "% of " + k.pairs + " pairs"); }).join("; ")}));
    });
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  /* what the board counts, and why its useful/judged can be lower than At a glance's Helped */
  function counts(r) {
    var what = {peers: ["the peer rankings of ", " ranked by peers"],
                both: ["the seat verdicts and peer rankings of ", " with a split verdict or a ranking"]}[r.source] ||
               ["the seat verdicts of ", " with a split verdict"];
    var out = "Counts " + what[0] + plural(r.panels, "panel") + what[1] + " (" +
      plural(r.comparisons, "comparison") + "). Useful/judged counts panel seats only";
    var left = [];
    if (r.left_out.merger) left.push(plural(r.left_out.merger, "merger verdict"));
    if (r.left_out.route) left.push(plural(r.left_out.route, "route-conversation verdict"));
    return out + (left.length ? ": " + left.join(" and ") + " are left out here, while At a glance's Helped counts them." : ".");
  }

  /* ticks at the finest round step that gives at most eight of them across [low, high] (four on a phone) */
  function ticks(low, high) {
    var steps = [0.1, 0.25, 0.5, 1, 2, 5], step = steps[steps.length - 1], most = window.innerWidth < 640 ? 4 : 8;
    for (var i = 0; i < steps.length; i++) if ((high - low) / steps[i] <= most) { step = steps[i]; break; }
    var out = [];
    for (var v = Math.ceil(low / step) * step; v <= high + 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }

  /* one line per model: rank, name, score and interval as text, then the interval as a bar on a shared scale
     with the ticks' gridlines; the axis with the tick labels follows the list, on the same grid */
  function scale(models) {
    var low = Math.min.apply(null, models.map(function (m) { return m.low; }).concat([0]));
    var high = Math.max.apply(null, models.map(function (m) { return m.high; }).concat([0]));
    var pad = (high - low || 1) * 0.05;
    low -= pad; high += pad;
    var span = high - low, at = function (v) { return (100 * (v - low) / span).toFixed(1) + "%"; };
    var marks = ticks(low, high);
    var grid = function () { return marks.map(function (v) { return h("span", {cls: "lb-grid", style: "left:" + at(v)}); }); };
    var lines = models.map(function (m) {
      return h("li", {"data-model": m.model, "data-rank": m.rank}, h("span", {cls: "lb-rank", text: m.rank}),
        h("span", {cls: "lb-name"}, h("strong", {text: m.model}), " " + sign(m.score) + " (" + sign(m.low) + " to " + sign(m.high) + ")"),
        h("span", {cls: "lb-track", "aria-hidden": "true"}, grid(), h("span", {cls: "lb-zero", style: "left:" + at(0)}),
          h("span", {cls: "lb-range", style: "left:" + at(m.low) + ";width:" + (100 * (m.high - m.low) / span).toFixed(1) + "%"}),
          h("span", {cls: "lb-score", style: "left:" + at(m.score)})));
    });
    var axis = h("div", {cls: "lb-axis-row", "aria-hidden": "true"}, h("span"), h("span", {cls: "lb-name muted", text: "score"}),
      h("span", {cls: "lb-axis"}, marks.map(function (v) {
        var where = (v - low) / span;  /* a label at either end stays inside the card */
        return h("span", {cls: "lb-tick" + (where > 0.95 ? " last" : where < 0.05 ? " first" : ""), style: "left:" + at(v), text: tick(v)});
      })));
    return [h("ol", {cls: "lb-lines"}, lines), axis];
  }
  function sign(v) { return (v > 0 ? "+" : v < 0 ? "−" : "") + Math.abs(v).toFixed(2); }
  function tick(v) { return (v > 0 ? "+" : v < 0 ? "−" : "") + String(Math.abs(v)); }

  function figures(r) {
    var rows = r.models.map(function (m) {
      return h("tr", {}, Bench.td(m.rank, {cls: "num"}), Bench.td(m.model), Bench.td(m.score.toFixed(2), {cls: "num", "data-sort": m.score}),
        Bench.td(m.low.toFixed(2) + " to " + m.high.toFixed(2), {"data-sort": m.low}), Bench.td(m.comparisons, {cls: "num"}),
        Bench.td(m.wins, {cls: "num"}), Bench.td(m.useful + "/" + m.judged, {"data-sort": m.judged}));
    });
    var cols = ["Rank", "Model", "Score", "95% interval", "Comparisons", "Wins", "Useful/judged"].map(function (t) {
      return {title: t, num: t === "Rank" || t === "Score" || t === "Comparisons" || t === "Wins",
        phone: ["Rank", "Model", "95% interval", "Useful/judged"].indexOf(t) >= 0};
    });
    return h("details", {id: "lb-figures"}, h("summary", {text: "Figures: " + plural(r.panels, "panel") +
      ", " + plural(r.comparisons, "comparison") + ", " + r.resamples + " resamples"}),
      Bench.table(cols, rows, ""));
  }
})();

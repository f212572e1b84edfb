/* At a glance's Leaderboard (issue 20): one collection's models ranked by a Bradley–Terry fit to the verdicts
   inside its judged panels (GET /api/leaderboard, the gateway's /bench/leaderboard for the signed-in admin).
   Each model's score sits on one shared scale with its 95% interval; the figures are in a folded table, and
   the same board downloads as CSV. The chosen collection is remembered in localStorage (bench.leaderboard).
   Issue 32: the source is the people's verdicts, council panels' peer rankings, or both (bench.leaderboard.source),
   and each ranking model's agreement with the people on the same panels is listed under the board. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$;
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
      h("p", {cls: "sub", text: "Who wins when asked the same prompt: inside each judged panel, a useful seat beat a not-useful one. Scores are a Bradley–Terry fit (0 is average, +1 is e≈2.7 times the odds); bars are 95% intervals, and overlapping bars cannot yet be told apart."}),
      h("div", {cls: "row"}, h("label", {"for": "lb-collection", text: "Collection"}), pick,
        h("label", {"for": "lb-source", text: "From"}), source, csv), body));
    reload();
  }

  function load(name, from, body, csv) {
    var query = "/api/leaderboard?collection=" + encodeURIComponent("bench/" + name) + "&source=" + from;
    csv.href = query + "&format=csv";
    Bench.get(query).then(function (r) {
      body.textContent = "";
      if (!r.ok) { Bench.add(body, h("p", {cls: "errors", text: Bench.errorsText(r.errors)})); return; }
      Bench.add(body, r.models.length ? [scale(r.models), figures(r)] : h("p", {cls: "muted",
        text: "No ranking yet: it needs a judged panel where one seat was useful and another was not."}));
      if (r.unranked.length) Bench.add(body, h("p", {cls: "muted", text: "Judged only in panels that agreed: " +
        r.unranked.map(function (u) { return u.model; }).join(", ")}));
      if (r.rankers.length) Bench.add(body, h("p", {cls: "muted", id: "lb-rankers", text: "Rankers' agreement with the people: " +
        r.rankers.map(function (k) { return k.model + " " + (k.agreement === null ? "no judged pairs yet" :
          Math.round(100 * k.agreement) + "% of " + k.pairs + " pairs"); }).join("; ")}));
    });
  }

  /* one line per model: rank, name, score and interval as text, then the interval as a bar on a shared scale */
  function scale(models) {
    var low = Math.min.apply(null, models.map(function (m) { return m.low; }).concat([0]));
    var high = Math.max.apply(null, models.map(function (m) { return m.high; }).concat([0]));
    var span = high - low || 1, at = function (v) { return (100 * (v - low) / span).toFixed(1) + "%"; };
    return h("ol", {cls: "lb-lines"}, models.map(function (m) {
      return h("li", {"data-model": m.model}, h("span", {cls: "lb-name"}, h("strong", {text: m.model}),
        " " + sign(m.score) + " (" + sign(m.low) + " to " + sign(m.high) + ")"),
        h("span", {cls: "lb-track", "aria-hidden": "true"}, h("span", {cls: "lb-zero", style: "left:" + at(0)}),
          h("span", {cls: "lb-range", style: "left:" + at(m.low) + ";width:" + (100 * (m.high - m.low) / span).toFixed(1) + "%"}),
          h("span", {cls: "lb-score", style: "left:" + at(m.score)})));
    }));
  }
  function sign(v) { return (v > 0 ? "+" : v < 0 ? "−" : "") + Math.abs(v).toFixed(2); }

  function figures(r) {
    var rows = r.models.map(function (m) {
      return h("tr", {}, Bench.td(m.rank, {cls: "num"}), Bench.td(m.model), Bench.td(m.score.toFixed(2), {cls: "num", "data-sort": m.score}),
        Bench.td(m.low.toFixed(2) + " to " + m.high.toFixed(2), {"data-sort": m.low}), Bench.td(m.comparisons, {cls: "num"}),
        Bench.td(m.wins, {cls: "num"}), Bench.td(m.useful + "/" + m.judged, {"data-sort": m.judged}));
    });
    var cols = ["Rank", "Model", "Score", "95% interval", "Comparisons", "Wins", "Useful/judged"].map(function (t) {
      return {title: t, num: t === "Rank" || t === "Score" || t === "Comparisons" || t === "Wins"};
    });
    return h("details", {id: "lb-figures"}, h("summary", {text: "Figures: " + r.panels + " panel" + (r.panels === 1 ? "" : "s") +
      ", " + r.comparisons + " comparison" + (r.comparisons === 1 ? "" : "s") + ", " + r.resamples + " resamples"}),
      Bench.table(cols, rows, ""));
  }
})();

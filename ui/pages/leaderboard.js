/* At a glance's Leaderboard (issue 20): one collection's models ranked by a Bradley–Terry fit to the verdicts
   inside its judged panels (GET /api/leaderboard, the gateway's /bench/leaderboard for the signed-in admin).
   Each model's score sits on one shared scale with its 95% interval; the figures are in a folded table, and
   the same board downloads as CSV. The chosen collection is remembered in localStorage (bench.leaderboard). */
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
    var csv = h("a", {id: "lb-csv", cls: "btn ghost small", download: "", text: "Download CSV"});
    var body = h("div", {id: "lb-body"}, h("p", {cls: "muted", text: "Loading…"}));
    pick.addEventListener("change", function () { Bench.store("bench.leaderboard", pick.value); load(pick.value, body, csv); });
    Bench.add($("#tab-glance"), h("div", {cls: "card", id: "leaderboard"}, h("h2", {text: "Leaderboard"}),
      h("p", {cls: "sub", text: "Who wins when asked the same prompt: inside each judged panel, a useful seat beat a not-useful one. Scores are a Bradley–Terry fit (0 is average, +1 is e≈2.7 times the odds); bars are 95% intervals, and overlapping bars cannot yet be told apart."}),
      h("div", {cls: "row"}, h("label", {"for": "lb-collection", text: "Collection"}), pick, csv), body));
    load(pick.value, body, csv);
  }

  function load(name, body, csv) {
    var query = "/api/leaderboard?collection=" + encodeURIComponent("bench/" + name);
    csv.href = query + "&format=csv";
    Bench.get(query).then(function (r) {
      body.textContent = "";
      if (!r.ok) { Bench.add(body, h("p", {cls: "errors", text: Bench.errorsText(r.errors)})); return; }
      Bench.add(body, r.models.length ? [scale(r.models), figures(r)] : h("p", {cls: "muted",
        text: "No ranking yet: it needs a judged panel where one seat was useful and another was not."}));
      if (r.unranked.length) Bench.add(body, h("p", {cls: "muted", text: "Judged only in panels that agreed: " +
        r.unranked.map(function (u) { return u.model; }).join(", ")}));
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

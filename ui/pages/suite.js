/* Benchmarks (dashboard.md §8.2, BM-1…BM-10; issue 19): where the evidence stands, as charts drawn here as inline
   SVG (no library, no network: OFF-1, IMP-15) from the page's `charts-data` JSON, each with its folded table so
   nothing is only in a picture. Colours are the theme's CSS custom properties, read when a chart is drawn; a theme
   switch (Settings sets data-theme on <html> without a reload) or a resize redraws. Charts are drawn while the tab
   is shown (a hidden tab has no width to draw in). */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$, td = Bench.td;
  var NS = "http://www.w3.org/2000/svg";
  var D = read(), G = {}, charts = [], built = false;
  (Bench.B.glance || []).forEach(function (r) { G[r.alias] = r; });

  function read() {
    try { return JSON.parse($("#charts-data").textContent || "{}"); } catch (e) { return {}; }
  }
  Bench.loaders.suite = function () {
    if (!built) { built = true; build(); }
    redraw();
  };
  new MutationObserver(function () { if (visible()) redraw(); })
    .observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { if (visible()) redraw(); }, 150);
  });
  function visible() { return built && !$("#tab-suite").hidden; }
  function redraw() { charts.forEach(function (c) { paint(c); }); }

  /* -- drawing helpers ------------------------------------------------------------------- */
  function colour(name) {
    if (name.charAt(0) === "#") return name;
    return getComputedStyle(document.documentElement).getPropertyValue("--" + name).trim() || "#888888";
  }
  function s(tag, attrs, kids) {
    var el = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { if (attrs[k] !== null && attrs[k] !== undefined) el.setAttribute(k, attrs[k]); });
    (kids || []).forEach(function (k) { if (k) el.appendChild(typeof k === "string" ? document.createTextNode(k) : k); });
    return el;
  }
  function tip(text) { return s("title", {}, [text]); }
  /* a label with a halo of the card's ground, so it stays legible over marks and grid lines (BM-10) */
  function label(x, y, text, attrs) {
    return s("text", Object.assign({x: x, y: y, fill: colour("ink"), stroke: colour("paper-2"), "stroke-width": 3,
      "paint-order": "stroke", "font-size": 12}, attrs || {}), [text]);
  }
  function pct(v) { return Math.round(v * 100) + "%"; }
  /* a chart follows its column (issue 31): the card's width less 50 px on a wide screen (BM-10), all of its
     content box on a phone; a chart that cannot shrink further (the heat grid) sets `min` and scrolls in its card */
  function width(c) {
    var room = c.area.clientWidth;
    return Math.max(c.min || 280, room > 640 ? c.area.parentNode.clientWidth - 50 : room);
  }
  function paint(c) {
    c.area.textContent = "";
    if (!c.has()) { Bench.add(c.area, h("p", {cls: "muted chart-empty", text: c.empty})); return; }
    var w = width(c), out = c.draw(w);
    out.setAttribute("width", w);
    out.setAttribute("role", "img");
    out.setAttribute("aria-label", c.title + " (the numbers are in the table below)");
    c.area.appendChild(out);
    /* a chart wider than its card scrolls: the keyboard must reach it too (axe: scrollable-region-focusable) */
    var scrolls = c.area.scrollWidth > c.area.clientWidth;
    if (scrolls) {
      c.area.tabIndex = 0;
      c.area.setAttribute("role", "region");
      c.area.setAttribute("aria-label", c.title + ", scrolls sideways");
    } else ["tabindex", "role", "aria-label"].forEach(function (a) { c.area.removeAttribute(a); });
  }
  function frame(w, hgt) { return s("svg", {viewBox: "0 0 " + w + " " + hgt, height: hgt, "font-family": "inherit", "class": "chart"}); }
  function legend(svg, items, x, y) {
    items.forEach(function (it) {
      svg.appendChild(s("rect", {x: x, y: y - 9, width: 10, height: 10, fill: colour(it[1]), stroke: colour("muted"), "stroke-width": 0.5}));
      svg.appendChild(label(x + 14, y, it[0], {"font-size": 11}));
      x += 24 + it[0].length * 6.5;
    });
  }
  function ticks(svg, left, right, top, bottom, values, at, text) {
    values.forEach(function (v) {
      var x = at(v);
      svg.appendChild(s("line", {x1: x, x2: x, y1: top, y2: bottom, stroke: colour("line")}));
      svg.appendChild(label(x, bottom + 14, text(v), {"text-anchor": "middle", "font-size": 11, fill: colour("muted")}));
    });
  }
  function range(a, b, step) { var out = []; for (var v = a; v <= b + 1e-9; v += step) out.push(Math.round(v * 1000) / 1000); return out; }
  function lower(values) {  /* BM-3's x0: max(0, floor((min − 0.05)·20)/20) */
    return Math.max(0, Math.floor((Math.min.apply(null, values) - 0.05) * 20) / 20);
  }
  /* labels beside dots, pushed down until none overlaps another (BM-3) */
  function placeLabels(svg, points, w) {
    var placed = [];
    points.slice().sort(function (a, b) { return a.y - b.y; }).forEach(function (p) {
      var wide = p.text.length * 6.6, left = p.x + 8 + wide > w - 6;
      var box = {x: left ? p.x - 8 - wide : p.x + 8, y: p.y - 4, w: wide, h: 13};
      var clash = function () { return placed.some(function (o) { return box.x < o.x + o.w && o.x < box.x + box.w && box.y < o.y + o.h && o.y < box.y + box.h; }); };
      while (clash()) box.y += 13;
      placed.push(box);
      if (Math.abs(box.y - (p.y - 4)) > 1) svg.appendChild(s("line", {x1: p.x, y1: p.y, x2: left ? box.x + box.w : box.x, y2: box.y + 6, stroke: colour("muted"), "stroke-width": 0.6}));
      svg.appendChild(label(box.x, box.y + 10, p.text, {"text-anchor": "start", "data-label": p.text}));
    });
  }
  /* horizontal bars: rows of {name, parts: [[share, colour, tip]], after} on an x scale from lo to hi */
  function bars(w, rows, opts) {
    var left = Math.min(260, w * 0.4, 30 + Math.max.apply(null, rows.map(function (r) { return r.name.length; })) * 6.6);
    var right = rows.some(function (r) { return r.after; }) ? 64 : 20, top = 30, step = 24, hgt = top + rows.length * step + 30;
    var svg = frame(w, hgt), lo = opts.lo || 0, hi = opts.hi || 1;
    var at = function (v) { return left + (v - lo) / (hi - lo) * (w - left - right); };
    var narrow = w < 480;  /* a phone: the legend and the axis title start at the chart's left edge */
    legend(svg, opts.legend, narrow ? 4 : left, 14);
    ticks(svg, left, w - right, top - 4, top + rows.length * step, range(lo, hi, 0.25), at, function (v) { return pct(Math.abs(v)); });
    rows.forEach(function (r, i) {
      var y = top + i * step + 4;
      svg.appendChild(label(left - 8, y + 12, r.name, {"text-anchor": "end", "data-row": r.model}));
      var x = opts.start ? opts.start(r) : lo;
      r.parts.forEach(function (p) {
        if (p[0] <= 0) return;
        svg.appendChild(s("rect", {x: at(x), y: y, width: Math.max(1, at(x + p[0]) - at(x)), height: step - 8, fill: colour(p[1])}, [tip(p[2])]));
        x += p[0];
      });
      var end = at(x);
      if (r.interval) {  /* the 95% interval as a whisker across the bar, capped at both ends */
        var a = at(r.interval[0]), b = at(r.interval[1]), mid = y + (step - 8) / 2;
        var g = s("g", {"class": "interval", stroke: colour("ink"), "stroke-width": 1.5}, [tip(r.intervalTip)]);
        [[a, mid, b, mid], [a, mid - 5, a, mid + 5], [b, mid - 5, b, mid + 5]].forEach(function (l) {
          g.appendChild(s("line", {x1: l[0], y1: l[1], x2: l[2], y2: l[3]}));
        });
        svg.appendChild(g);
        end = Math.max(end, b);
      }
      if (r.after) svg.appendChild(label(end + 6, y + 12, r.after, {"font-size": 11}));
    });
    if (opts.zero) svg.appendChild(s("line", {x1: at(0), x2: at(0), y1: top - 4, y2: top + rows.length * step, stroke: colour("ink"), "stroke-width": 1.2}));
    if (opts.axis) svg.appendChild(label(narrow ? w / 2 : left + (w - left - right) / 2, hgt - 4, opts.axis, {"text-anchor": "middle", "font-size": 11, fill: colour("muted")}));
    return svg;
  }
  /* a scatter: points {x, y, text, tip} on linear or log x, y from y0 (bottom) to y1 (top) */
  function scatter(w, points, opts) {
    var left = 52, right = 24, top = 30, hgt = 350, bottom = hgt - 40, svg = frame(w, hgt);
    var xs = opts.log ? function (v) { return Math.log(v); } : function (v) { return v; };
    var at = function (v) { return left + (xs(v) - xs(opts.x0)) / (xs(opts.x1) - xs(opts.x0)) * (w - left - right); };
    var up = function (v) { return bottom - (v - opts.y0) / (opts.y1 - opts.y0) * (bottom - top); };
    if (opts.zone) svg.appendChild(s("rect", {x: at(opts.zone[0]), y: Math.min(up(opts.zone[2]), up(opts.zone[3])), width: at(opts.zone[1]) - at(opts.zone[0]),
      height: Math.abs(up(opts.zone[3]) - up(opts.zone[2])), fill: "none", stroke: colour("ok"), "stroke-dasharray": "5 4", "stroke-width": 1.5, "class": "zone"},
      [tip("the good zone: finds more than most, rarely wrong")]));
    ticks(svg, left, w - right, top, bottom, opts.xticks, at, opts.xtext);
    opts.yticks.forEach(function (v) {
      svg.appendChild(s("line", {x1: left, x2: w - right, y1: up(v), y2: up(v), stroke: colour("line")}));
      svg.appendChild(label(left - 6, up(v) + 4, opts.ytext(v), {"text-anchor": "end", "font-size": 11, fill: colour("muted")}));
    });
    svg.appendChild(label(left + (w - left - right) / 2, hgt - 6, opts.xtitle, {"text-anchor": "middle", "font-size": 11, fill: colour("muted")}));
    svg.appendChild(label(6, 12, opts.ytitle, {"font-size": 11, fill: colour("muted")}));
    var placed = points.map(function (p) {
      var q = {x: at(p.x), y: up(p.y), text: p.text};
      svg.appendChild(s("circle", {cx: q.x, cy: q.y, r: 5.5, fill: colour(opts.dot || "brand"), stroke: colour("paper-2"), "stroke-width": 1.5, "data-model": p.text}, [tip(p.tip)]));
      return q;
    });
    placeLabels(svg, placed, w);
    return svg;
  }

  /* -- panels ------------------------------------------------------------------------------ */
  function row(model, cells) {
    var g = G[model] || {alias: model, tag: ""};
    return h("tr", {cls: g.retired ? "retired" : "", "data-model": model}, td(Bench.nameCell(g)), cells);
  }
  function folded(id, cols, rows, empty) {
    var scope = h("details", {cls: "chart-table", id: id + "-table"});
    var bar = Bench.filters(function () { return scope; });
    Bench.add(bar, Bench.retiredToggle());
    Bench.add(scope, h("summary", {text: "Table"}), bar, Bench.table(cols.map(function (c) {
      return typeof c === "string" ? {title: c} : c; }), rows, empty));
    return scope;
  }
  function key(text) { return h("details", {cls: "chart-key"}, h("summary", {text: "How to read this"}), h("p", {text: text})); }
  function panel(id, title, sub, chartList, tables, help) {
    var card = h("div", {cls: "card bm-panel", id: id}, h("h2", {text: title}), h("p", {cls: "sub", text: sub}));
    chartList.forEach(function (c) {
      c.area = h("div", {cls: "chart-area", id: c.id, "data-chart": c.id});
      if (c.heading) Bench.add(card, h("h3", {text: c.heading}));
      Bench.add(card, c.area);
      if (c.table) Bench.add(card, c.table);
      charts.push(c);
    });
    Bench.add(card, tables || [], key(help));
    return card;
  }
  function fraction(n, of) { return of ? n + "/" + of : "—"; }
  function share(n, of) { return of ? n / of : 0; }
  /* the 95% Wilson score interval of n successes in `of` trials: [0, 1] when nothing was judged */
  function wilson(n, of) {
    if (!of) return [0, 1];
    var z = 1.96, p = n / of, z2 = z * z / of, centre = (p + z2 / 2) / (1 + z2);
    var half = z * Math.sqrt(p * (1 - p) / of + z * z / (4 * of * of)) / (1 + z2);
    return [Math.max(0, centre - half), Math.min(1, centre + half)];
  }
  function byName(a, b) { return a.model < b.model ? -1 : a.model > b.model ? 1 : 0; }

  function build() {
    var sec = $("#tab-suite");
    Bench.add(sec, h("div", {cls: "card", id: "bm-intro"}, h("h2", {text: "Benchmarks"}),
      h("p", {cls: "sub", text: "Where the evidence stands: the internal suite, your verdicts on real work, and the probes. Charts are drawn here from the same figures as the tables folded under them."})),
      trust(), hunt(), work(), wrong(), heat(), performance(), external());
  }

  /* BM-3 */
  function trust() {
    var data = D.overview || [];
    var c = {id: "chart-trust", title: "Who to trust", empty: "No model has both suite scores and answers yet.",
      has: function () { return data.length > 0; }, draw: function (w) {
        var worst = Math.max.apply(null, data.map(function (d) { return d.wrong; })), top = Math.max(0.1, worst);
        var x0 = lower(data.map(function (d) { return d.recall; }));
        return scatter(w, data.map(function (d) {
          return {x: d.recall, y: d.wrong, text: d.model, tip: d.model + "\nfinds " + d.found + " real findings\nconfidently wrong in " + d.wrongN + " answers"};
        }), {x0: x0, x1: 1, y0: top, y1: 0, zone: [(x0 + 1) / 2, 1, 0, (worst || top) / 4],
          xticks: range(Math.ceil(x0 * 10) / 10, 1, 0.1), xtext: pct, yticks: range(0, top, top / 4), ytext: pct,
          xtitle: "finds more (suite recall) →", ytitle: "↑ less often confidently wrong"});
      }};
    c.table = folded("trust", ["Model", {title: "Finds", num: true}, {title: "Confidently wrong", num: true}],
      data.slice().sort(byName).map(function (d) {
        return row(d.model, [td(d.found, {cls: "num", "data-sort": d.recall}), td(d.wrongN, {cls: "num", "data-sort": d.wrong})]);
      }), "No model has both suite scores and answers yet.");
    return panel("bm-trust", "Who to trust", "Finding real bugs against asserting false ones: up and to the right is better; the dashed box is the good zone.",
      [c], [], "Across: the share of known findings a model's latest suite answers found. Up: how rarely it was confidently wrong (a false alarm on clean code, a wrong line, a false claim, a planted falsehood asserted) in its answered tasks, 0% at the top. Only models with both appear.");
  }

  /* BM-4 */
  function hunt() {
    var all = (D.tables || {}).hunt || [], data = D.hunt || [];
    var bugs = function (r) { return r.found + r["wrong line"] + r.missed; }, clean = function (r) { return r.clean + r["false alarm"]; };
    var order = data.slice().sort(function (a, b) {
      return (share(b.found, bugs(b)) - share(b["false alarm"], clean(b))) - (share(a.found, bugs(a)) - share(a["false alarm"], clean(a))) || byName(a, b);
    });
    var c = {id: "chart-hunt", title: "Bug hunt", empty: "No seeded or real-bug answers yet.", has: function () { return data.length > 0; },
      draw: function (w) {
        return bars(w, order.map(function (r) {
          var b = bugs(r), k = clean(r), fa = share(r["false alarm"], k);
          return {model: r.model, name: r.model + "  (" + r.tasks + ")", start: -fa, parts: [
            [fa, "err", r.model + ": false alarm on " + fraction(r["false alarm"], k) + " clean files"],
            [share(r.found, b), "ok", r.model + ": found " + fraction(r.found, b) + " bugs"],
            [share(r["wrong line"], b), "signal", r.model + ": wrong line on " + fraction(r["wrong line"], b) + " bugs"],
            [share(r.missed, b), "line", r.model + ": missed " + fraction(r.missed, b) + " bugs"]]};
        }), {lo: -1, hi: 1, zero: true, start: function (r) { return r.start; },
          legend: [["found", "ok"], ["wrong line", "signal"], ["missed", "line"], ["false alarm", "err"]],
          axis: "← false alarms on clean files · bug files →"});
      }};
    var rows = all.slice().sort(function (a, b) { return share(b.found, bugs(b)) - share(a.found, bugs(a)) || byName(a, b); }).map(function (r) {
      var b = bugs(r), k = clean(r);
      return row(r.model, [td(fraction(r.found, b), {"data-sort": share(r.found, b)}), td(fraction(r["wrong line"], b), {"data-sort": share(r["wrong line"], b)}),
        td(fraction(r.missed, b), {"data-sort": share(r.missed, b)}), td(fraction(r.clean, k), {"data-sort": share(r.clean, k)}),
        td(fraction(r["false alarm"], k), {"data-sort": share(r["false alarm"], k)})]);
    });
    c.table = folded("hunt", ["Model", "Found", "Wrong line", "Missed", "Clean said clean", "False alarm"], rows, "No seeded or real-bug answers yet.");
    return panel("bm-hunt", "Bug hunt", "Seeded and real bugs: each bug file found, pointed at the wrong line or missed; each clean file said clean or falsely alarmed.",
      [c], [], "Right of the line: shares of the bug files (found, wrong line, missed). Left: the share of clean files (controls) where the model still named a faulty line. Models are ordered by found share minus false-alarm share; the number in brackets is how many such tasks it answered.");
  }

  /* BM-5 */
  function work() {
    var all = (D.tables || {}).work || [], data = D.work || [];
    var sorted = function (list) { return list.slice().sort(function (a, b) { return share(b.useful, b.judged) - share(a.useful, a.judged) || b.judged - a.judged || byName(a, b); }); };
    var c = {id: "chart-work", title: "Real work", empty: "No judged offloads yet.", has: function () { return data.length > 0; },
      draw: function (w) {
        return bars(w, sorted(data).map(function (r) {
          var rate = share(r.useful, r.judged);
          var band = wilson(r.useful, r.judged);
          return {model: r.model, name: r.model + "  (" + r.judged + ")", after: r.useful + "/" + r.judged,
            parts: [[rate, rate >= 0.5 ? "ok" : "err", r.model + ": useful in " + r.useful + " of " + r.judged + " judged"]],
            interval: band, intervalTip: r.model + ": 95% interval " + pct(band[0]) + " to " + pct(band[1])};
        }), {legend: [["helped half or more", "ok"], ["less than half", "err"]], axis: "useful share of judged offloads, 95% interval →"});
      }};
    c.table = folded("work", ["Model", {title: "Offloads", num: true}, {title: "Judged", num: true}, "Helped", "95% interval", {title: "Verified findings", num: true}, {title: "False claims", num: true}],
      sorted(all).map(function (r) {
        var band = wilson(r.useful, r.judged);
        return row(r.model, [td(r.offloads, {cls: "num"}), td(r.judged, {cls: "num"}), td(r.useful + "/" + r.judged, {"data-sort": share(r.useful, r.judged)}),
          td(r.judged ? pct(band[0]) + " to " + pct(band[1]) : "—", {"data-sort": band[0]}), td(r.real, {cls: "num"}), td(r.false, {cls: "num"})]);
      }), "No judged offloads yet.");
    return panel("bm-work", "Real work", "Your verdicts on what the models did through the gateway: was the answer useful?",
      [c], [], "Each bar is the share of a model's judged offloads you marked useful; the whisker is its 95% Wilson interval (few verdicts, a wide whisker: overlapping whiskers cannot yet be told apart); the number in brackets is how many were judged. Verified findings and false claims count the claims you confirmed or refuted in those verdicts.");
  }

  /* BM-6 */
  var KIND_COLOURS = {"control": "err", "wrong line": "signal", "false claim": "sky", "trap": "muted"};
  function wrong() {
    var kinds = D.kinds || [], totals = D.wrongTotals || {}, parts = {};
    (D.wrong || []).forEach(function (r) { (parts[r.model] = parts[r.model] || {})[r.kind] = r; });
    var models = Object.keys(totals).sort(function (a, b) { return totals[b].rate - totals[a].rate || totals[b].answers - totals[a].answers || (a < b ? -1 : 1); });
    var hi = Math.min(1, Math.max(0.25, Math.ceil(Math.max.apply(null, [0].concat(models.map(function (m) { return totals[m].rate; }))) * 4) / 4));
    var c = {id: "chart-wrong", title: "Confidently wrong", empty: "No answered suite tasks yet.", has: function () { return models.length > 0; },
      draw: function (w) {
        return bars(w, models.map(function (m) {
          return {model: m, name: m + "  (" + totals[m].answers + ")", after: pct(totals[m].rate), parts: kinds.map(function (k) {
            var p = (parts[m] || {})[k];
            return [p ? p.rate : 0, KIND_COLOURS[k], m + ": " + k + " " + (p ? p.n : "")];
          })};
        }), {hi: hi, legend: kinds.map(function (k) { return [k, KIND_COLOURS[k]]; }), axis: "share of answered tasks confidently wrong →"});
      }};
    var rows = (((D.tables || {}).wrong) || []).slice().sort(function (a, b) {
      var ra = a.answers ? a.wrong / a.answers : -1, rb = b.answers ? b.wrong / b.answers : -1;
      return rb - ra || byName(a, b);
    }).map(function (r) {
      var rate = r.answers ? r.wrong / r.answers : -1;
      var meter = r.answers ? [h("span", {cls: "meter" + (rate > 0.25 ? " low" : "")}, h("span", {style: "width:" + Math.max(4, Math.round(rate * 100)) + "%"})), r.wrong + "/" + r.answers] : "no tasks yet";
      return row(r.model, [td(meter, {"data-sort": rate, cls: "nowrap"})].concat(kinds.map(function (k) {
        var b = r.by[k];
        return td(b[1] ? b[0] + "/" + b[1] : "—", {"data-sort": b[1] ? b[0] / b[1] : -1});
      })).concat([td(r.reviews ? r.review_false + " in " + r.reviews : "—", {"data-sort": r.reviews ? r.review_false / r.reviews : -1})]));
    });
    c.table = folded("wrong", ["Model", "Confidently wrong", "Control", "Wrong line", "False claim", "Trap", "Reviews"], rows, "No answered suite tasks or reviews yet.");
    return panel("bm-wrong", "Confidently wrong", "How often a model asserts something false with confidence, by kind of trap.",
      [c], [], "Control: a clean file answered with a faulty line. Wrong line: a bug file answered with a line that is not the bug. False claim: a false hypothesis called true. Trap: a planted falsehood asserted. Each is counted over the model's answered tasks (in brackets); Reviews are the false claims you found in judged offloads.");
  }

  /* BM-7 */
  function heat() {
    var data = D.heat || [], all = (D.tables || {}).heat || [], families = D.families || [];
    var tasks = [], cells = {}, sums = {};
    all.forEach(function (c) { if (tasks.indexOf(c.task) < 0) tasks.push(c.task); });
    var drawnTasks = [];
    data.forEach(function (c) {
      if (drawnTasks.indexOf(c.task) < 0) drawnTasks.push(c.task);
      cells[c.model + "\u0000" + c.task] = c;
      sums[c.model] = (sums[c.model] || 0) + (c.rate || 0);
    });
    var familyOf = {};
    all.forEach(function (c) { familyOf[c.task] = c.family; });
    var models = Object.keys(sums).sort(function (a, b) { return sums[b] - sums[a] || (a < b ? -1 : 1); });
    var c = {id: "chart-heat", title: "Our code", empty: "No suite runs recorded yet.", has: function () { return data.length > 0; }, min: 520,
      draw: function (w) {
        var left = Math.min(220, 20 + Math.max.apply(null, models.map(function (m) { return m.length; })) * 6.6);
        var cw = Math.max(8, Math.min(46, (w - left - 10) / drawnTasks.length)), ch = 22, top = 50;
        var hgt = top + models.length * ch + 34, svg = frame(w, hgt);
        var ramp = rampOf(colour("err"), colour("signal"), colour("ok"));
        var lastFamily = null, ends = [-1, -1];  /* two label rows: a name that would run into the last one drops a row */
        drawnTasks.forEach(function (t, i) {
          var x = left + i * cw;
          if (familyOf[t] === lastFamily) return;
          lastFamily = familyOf[t];
          var rowAt = x > ends[0] ? 0 : 1;
          /* the separator rises to its own label unless a longer name on the lower row runs across it */
          var rise = rowAt === 0 && x <= ends[1] ? top - 4 : top - 30 + rowAt * 14;
          if (i) svg.appendChild(s("line", {x1: x - 1, x2: x - 1, y1: rise, y2: top + models.length * ch, stroke: colour("muted"), "stroke-opacity": 0.5, "class": "family-sep"}));
          svg.appendChild(label(x + 2, top - 22 + rowAt * 14, lastFamily, {"font-size": 11, fill: colour("muted"), "class": "family"}));
          ends[rowAt] = x + 2 + lastFamily.length * 6.2 + 6;
        });
        models.forEach(function (m, j) {
          var y = top + j * ch;
          svg.appendChild(label(left - 8, y + 15, m, {"text-anchor": "end", "data-row": m}));
          drawnTasks.forEach(function (t, i) {
            var cell = cells[m + "\u0000" + t];
            if (!cell) return;
            var fill = cell.rate === null ? colour("line") : ramp(cell.rate);
            svg.appendChild(s("rect", {x: left + i * cw, y: y + 1, width: cw - 2, height: ch - 3, rx: 2, fill: fill, "data-task": t},
              [tip(m + "\n" + t + " (" + cell.family + ")\n" + cell.label + (cell.invented ? "\ninvented something" : ""))]));
            if (cell.invented) svg.appendChild(s("circle", {cx: left + i * cw + cw - 6, cy: y + 6, r: 2.6, fill: colour("ink"), stroke: colour("paper-2"), "stroke-width": 1}));
          });
        });
        var ly = top + models.length * ch + 20;
        [["none found", 0], ["half", 0.5], ["all found", 1]].forEach(function (l, i) {
          svg.appendChild(s("rect", {x: left + i * 110, y: ly - 9, width: 10, height: 10, fill: ramp(l[1])}));
          svg.appendChild(label(left + i * 110 + 14, ly, l[0], {"font-size": 11}));
        });
        svg.appendChild(s("rect", {x: left + 330, y: ly - 9, width: 10, height: 10, fill: colour("line")}));
        svg.appendChild(label(left + 344, ly, "no answer (timeout, refused, error)", {"font-size": 11}));
        return svg;
      }};
    var byModel = {};
    all.forEach(function (c) { (byModel[c.model] = byModel[c.model] || {})[c.task] = c; });
    var rows = Object.keys(byModel).sort().map(function (m) {
      var mine = byModel[m], invented = tasks.filter(function (t) { return mine[t] && mine[t].inventedText; });
      return row(m, tasks.map(function (t) {
        var cell = mine[t];
        if (!cell) return td("—", {"data-sort": -2});
        return td(cell.label, {cls: cell.rate === null ? "err" : "", "data-sort": cell.rate === null ? -1 : cell.rate});
      }).concat([invented.length ? td(invented.map(function (t) { return t + ": " + mine[t].inventedText; }).join("; "), {cls: "err"}) : td("none")]));
    });
    c.table = folded("heat", ["Model"].concat(tasks).concat(["Invented"]), rows, "No suite runs recorded yet.");
    return panel("bm-heat", "Our code", "Each model's latest score on each internal suite task, grouped by family.",
      [c], [], "A cell is one task's latest score (found over findings): red is nothing found, yellow half, green all. Grey cells are non-answers (timeout, refused, error). A dot marks an answer that invented something the task says is not there. Rows are ordered by the sum of scores. Families: " + families.join(", ") + ".");
  }
  function rampOf(a, b, c) {
    var rgb = function (hex) { var v = hex.replace("#", ""); if (v.length === 3) v = v.replace(/(.)/g, "$1$1"); return [0, 2, 4].map(function (i) { return parseInt(v.substr(i, 2), 16); }); };
    var A = rgb(a), B = rgb(b), C = rgb(c);
    return function (t) {
      var from = t < 0.5 ? A : B, to = t < 0.5 ? B : C, f = t < 0.5 ? t * 2 : (t - 0.5) * 2;
      return "rgb(" + from.map(function (x, i) { return Math.round(x + (to[i] - x) * f); }).join(",") + ")";
    };
  }

  /* BM-8 */
  var OUTCOMES = [["answered", "ok"], ["capacity", "signal"], ["timeout", "sky"], ["structural", "err"], ["paywalled", "warn"],
    ["entitlement", "#c0563f"], ["other", "muted"], ["error", "ink"]];
  function performance() {
    var rel = D.reliability || [], per = {}, present = {};
    rel.forEach(function (r) { (per[r.model] = per[r.model] || {})[r.outcome] = r.count; present[r.outcome] = true; });
    var known = OUTCOMES.map(function (o) { return o[0]; });
    Object.keys(present).forEach(function (o) { if (known.indexOf(o) < 0) { OUTCOMES.push([o, "muted"]); known.push(o); } });
    var shown = OUTCOMES.filter(function (o) { return present[o[0]]; });
    var total = function (m) { return Object.keys(per[m]).reduce(function (n, k) { return n + per[m][k]; }, 0); };
    var models = Object.keys(per).sort(function (a, b) { return share(per[b].answered || 0, total(b)) - share(per[a].answered || 0, total(a)) || (a < b ? -1 : 1); });
    var probes = {id: "chart-probes", heading: "Did it answer? Last 14 days of probes", title: "Did it answer?", empty: "No probes in the last 14 days.",
      has: function () { return models.length > 0; }, draw: function (w) {
        return bars(w, models.map(function (m) {
          var n = total(m);
          return {model: m, name: m + "  (" + n + ")", parts: shown.map(function (o) {
            return [share(per[m][o[0]] || 0, n), o[1], m + ": " + o[0] + " in " + (per[m][o[0]] || 0) + " of " + n + " probes"];
          })};
        }), {legend: shown, axis: "share of the probes →"});
      }};
    probes.table = folded("probes", ["Model"].concat(shown.map(function (o) { return {title: o[0], num: true}; })),
      models.map(function (m) { return row(m, shown.map(function (o) { return td(per[m][o[0]] || 0, {cls: "num"}); })); }), "No probes in the last 14 days.");
    var sp = D.speed || [];
    var speed = {id: "chart-speed", heading: "Speed vs quality on our own tasks", title: "Speed vs quality", empty: "No suite timings yet.",
      has: function () { return sp.length > 0; }, draw: function (w) {
        var secs = sp.map(function (d) { return Math.max(0.05, d.seconds); });
        var x0 = Math.max(1, 0.8 * Math.min.apply(null, secs)), x1 = 1.25 * Math.max.apply(null, secs);
        if (x1 <= x0) x0 = 0.8 * Math.min.apply(null, secs);  /* all under a second: the 1 s floor would stack every dot */
        if (x1 <= x0) x1 = x0 * 1.5;
        var y0 = lower(sp.map(function (d) { return d.recall; }));
        var xt = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000].filter(function (v) { return v >= x0 && v <= x1; });
        return scatter(w, sp.map(function (d) {
          return {x: Math.min(x1, Math.max(x0, d.seconds, 0.05)), y: d.recall, text: d.model,
            tip: d.model + "\nmedian " + d.seconds.toFixed(1) + "s per task over " + d.tasks + " tasks\nfinds " + pct(d.recall)};
        }), {log: true, x0: x0, x1: x1, y0: y0, y1: 1, xticks: xt.length ? xt : [x0], xtext: function (v) { return (v < 1 ? String(+v.toPrecision(2)) : v.toFixed(0)) + "s"; },
          yticks: range(Math.ceil(y0 * 10) / 10, 1, 0.1), ytext: pct, xtitle: "median seconds per task (log) →", ytitle: "↑ finds more", dot: "sky"});
      }};
    speed.table = folded("speed", ["Model", {title: "Median seconds", num: true}, {title: "Finds", num: true}, {title: "Tasks", num: true}],
      sp.slice().sort(byName).map(function (d) {
        return row(d.model, [td(d.seconds.toFixed(1) + "s", {cls: "num", "data-sort": d.seconds}), td(pct(d.recall), {cls: "num", "data-sort": d.recall}), td(d.tasks, {cls: "num"})]);
      }), "No suite timings yet.");
    var perf = ((D.tables || {}).perf || []).slice().sort(function (a, b) { return byName(a, b) || (a.prompt > b.prompt ? -1 : 1); });
    var widest = Math.max.apply(null, [0].concat(perf.map(function (r) { return r.p50 || 0; })));
    var secs = function (v) { return v === null ? "—" : v.toFixed(1) + "s"; };
    var rows = perf.map(function (r) {
      var bad = r.timeout > 0 || r.error > 0;
      return row(r.model, [td(r.prompt), td(secs(r.p50), {cls: "num", "data-sort": r.p50 === null ? -1 : r.p50}), td(secs(r.p95), {cls: "num", "data-sort": r.p95 === null ? -1 : r.p95}),
        td(r.chars ? r.chars.toFixed(0) : "—", {cls: "num"}), td(r.tokens ? r.tokens.toFixed(1) : "—", {cls: "num"}),
        td(r.answered + "a / " + r.refused + "r / " + r.error + "e / " + r.timeout + "t", {cls: bad ? "err nowrap" : "nowrap"}),
        td(h("span", {cls: "p50-bar", style: "width:" + Math.max(2, Math.round((r.p50 || 0) / (widest || 1) * 120)) + "px"}), {"data-sort": r.p50 || 0})]);
    });
    var table = folded("perf", ["Model", "Prompt", {title: "p50", num: true}, {title: "p95", num: true}, {title: "ch/s", num: true}, {title: "tok/s", num: true}, "Outcomes", "p50, relative"],
      rows, "No perf runs recorded yet.");
    table.querySelector("summary").textContent = "Table: latest probe per model and prompt";
    return panel("bm-perf", "Performance", "How the serving path answers: probes from perf/run.py and onboarding, and the suite's own timings.",
      [probes, speed], [table], "Did it answer: each probe of the last 14 days by outcome (answered, or why not: capacity is a rate limit or quota, structural is no such model). Speed vs quality: the median seconds a model took per suite task (log scale) against the share of findings it found. The table is each model's latest probe per prompt: p50 and p95 seconds, characters and tokens per second, and the answered / refused / error / timeout counts.");
  }

  /* BM-9 */
  function external() {
    var links = [["LiveBench", "https://livebench.ai/", "contamination-limited questions, refreshed monthly"],
      ["models.dev", "https://models.dev/", "specs and prices; the catalog reads it daily"],
      ["BullshitBench", "https://petergpt.github.io/bullshit-benchmark/viewer/index.next.html", "which models push back on nonsense"]];
    return h("div", {cls: "card", id: "bm-external"}, h("h2", {text: "External"}),
      h("p", {cls: "sub", text: "Other people's benchmarks, for what our own tasks cannot see. No numbers are copied here."}),
      h("ul", {}, links.map(function (l) {
        return h("li", {}, h("a", {href: l[1], target: "_blank", rel: "noopener", text: l[0]}), " — " + l[2]);
      })));
  }
})();

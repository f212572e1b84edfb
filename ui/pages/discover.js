/* Discover (dashboard.md §8.10, DS-1..5): models the public feeds list that this install could use, from the
   feeds the catalog job caches (GET /api/discover; the page never waits on the network). A row opens its
   popup (GET /api/discover-model), whose routes each say "on the bench as …" or offer Add via this: a direct
   route queues the model's onboarding (POST /api/onboard-queue) and follows it in the step view (OB-23);
   a hub route asks the hub to add it first (POST /api/discover/add). "Show paid" is remembered per browser
   (localStorage bench.paid), as Show retired is. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$, chip = Bench.chip, td = Bench.td;
  var REACH = ["on bench", "connected", "easy to add", "other"];
  var REACH_CSS = {"on bench": "ok", connected: "ok", "easy to add": "warn", other: ""};
  var drawn = false, D = null;
  Bench.loaders.discover = function () { if (!drawn) { drawn = true; load(); } };
  if (Bench.store("bench.paid") === "1") document.body.classList.add("show-paid");

  function load() {
    var card = h("div", {cls: "card", id: "discover"}, h("h2", {text: "Discover"}), h("p", {cls: "muted", text: "Reading the cached feeds…"}));
    Bench.add($("#tab-discover"), card);
    Bench.get("/api/discover").then(function (r) { D = r; draw(card, r); });
  }

  function usd(v) { return typeof v === "number" ? "$" + String(+v.toFixed(4)) : "?"; }
  function price(row) {
    if (row.free) return ["free", row.cost ? "listed at 0 per million tokens" : "free tier (FreeLLMAPI or a :free id)"];
    if (row.cost && row.cost.input !== undefined) return [usd(row.cost.input) + " / " + usd(row.cost.output), "input / output, US dollars per million tokens (models.dev)"];
    return ["paid", "no price listed, and not free"];
  }
  function context(n) { return !n ? "?" : n < 1000 ? (n / 1000).toFixed(1) + "k" : Math.round(n / 1000) + "k"; }
  function limits(l) {
    return l ? ["rpm", "rpd", "tpm", "tpd"].filter(function (k) { return l[k]; }).map(function (k) { return Bench.thousands(l[k]) + " " + k; }).join(" · ") : "";
  }
  function can(row) {
    var chips = [row.tools ? chip("tools") : null, row.vision ? chip("vision") : null, row.reasoning ? chip("reasons") : null].filter(Boolean);
    return chips.length ? chips : "—";
  }
  function addable(row) { return row.routes.some(function (r) { return !r.on_bench_as; }); }

  function draw(card, r) {
    card.textContent = "";
    var paid = h("input", {type: "checkbox", id: "ds-paid", checked: document.body.classList.contains("show-paid")});
    paid.addEventListener("change", function () { document.body.classList.toggle("show-paid", paid.checked); Bench.store("bench.paid", paid.checked ? "1" : "0"); });
    var bar = Bench.filters(function () { return card; });
    var box = $("input[type=search]", bar);
    box.placeholder = "Filter by model, provider or reach";
    box.setAttribute("aria-label", "Filter by model, provider or reach");
    Bench.add(bar, h("label", {}, paid, "Show paid (connected providers)"));
    var rows = r.rows.map(function (row, i) {
      var sub = [row.model];
      if (row.on_bench_as) sub.push("on bench as " + row.on_bench_as);
      if (row.also_on.length) sub.push("also on bench as " + row.also_on.join(", "));
      var p = price(row);
      var tr = h("tr", {cls: row.paid ? "paid" : "", "data-row": String(i), tabIndex: 0},
        td([h("a", {href: "#", cls: "ds-name", text: row.name}), row.new ? chip("new", "new", "first seen " + row.first_seen) : null,
          h("span", {cls: "subline", text: sub.join(" · ")})]),
        td(row.provider_name, {title: row.provider}),
        td(chip(row.reach, REACH_CSS[row.reach], row.api || null), {"data-sort": REACH.indexOf(row.reach)}),
        td(p[0], {title: p[1], "data-sort": row.free ? 0 : row.cost && row.cost.input !== undefined ? row.cost.input : 1e9}),
        td(context(row.context), {cls: "num", "data-sort": row.context || 0}),
        td(row.in_mods.join(", ") + " → " + row.out_mods.join(", ")),
        td(can(row)), td(row.released || ""), td(limits(row.limits)),
        td(addable(row) ? h("button", {type: "button", cls: "btn small", text: "Add…"}) : ""));
      tr.addEventListener("click", function (e) { e.preventDefault(); openRow(row); });
      tr.addEventListener("keydown", function (e) { if (e.key === "Enter") openRow(row); });
      return tr;
    });
    var cols = ["Model", "Provider", "Reach", "Price", "Context", "In → out", "Can", "Released", "Limits", ""].map(function (t) {
      return {title: t, num: t === "Context", sort: t !== "", phone: t === "Model" || t === "Price" || t === ""};
    });
    var empty = r.cached.modelsdev || r.cached.freellmapi ? "Nothing free or reachable in the cached feeds." :
      "No feed cached yet: the scheduler's catalog job fetches them daily (or run python -m benchwarmers.scripts.refresh_catalog).";
    Bench.add(card, h("h2", {text: "Discover"}),
      h("p", {cls: "sub", id: "ds-sub", text: r.free + " free models from models.dev and FreeLLMAPI, deduped; " + Bench.thousands(r.hidden) +
        " paid models on providers you have no route to are left out. Read from the feeds the daily catalog job caches; opening this page fetches nothing."}),
      bar, rows.length ? Bench.table(cols, rows, "") : h("p", {cls: "muted", id: "ds-empty", text: empty}),
      h("details", {cls: "key"}, h("summary", {text: "How to read this"}),
        h("p", {text: "Reach: on bench (already a model here), connected (an endpoint or your Open WebUI hub reaches its provider), easy to add (an OpenAI-compatible provider you have no endpoint for yet), other. A model first seen in the last 7 days is marked new. Add… opens the model: each route either says which bench model it already is or offers Add via this."})));
  }

  function facts(row) {
    var bits = [row.context ? Bench.thousands(row.context) + " tokens of context" : "context unknown"];
    if (row.output) bits.push("output up to " + Bench.thousands(row.output));
    var caps = ["tools", "vision", "reasoning"].filter(function (c) { return row[c]; });
    if (caps.length) bits.push("can: " + caps.join(", "));
    bits.push(price(row)[0] === "free" ? "free" : price(row)[0] === "paid" ? "paid" : price(row)[0] + " per million tokens");
    if (limits(row.limits)) bits.push(limits(row.limits));
    if (row.released) bits.push("released " + row.released);
    if (row.knowledge) bits.push("knowledge to " + row.knowledge);
    if (row.open_weights !== null) bits.push(row.open_weights ? "open weights" : "closed weights");
    bits.push(row.first_seen === "baseline" ? "before the list began" : row.first_seen ? "first seen " + row.first_seen : "");
    return bits.filter(Boolean).join(" · ");
  }

  function openRow(row) {
    var d = $("#discover-dialog");
    d.textContent = "";
    var routes = h("div", {id: "ds-routes", "aria-live": "polite"}, h("p", {cls: "muted", text: "Looking at the routes…"}));
    var said = h("div", {cls: "errors", role: "alert"});
    Bench.add(d, h("h2", {id: "dd-title", text: row.name}),
      h("p", {cls: "sub", text: row.provider_name + " · " + row.model + " · listed by " + row.sources.join(" and ") + (row.on_bench_as ? " · on the bench as " + row.on_bench_as : "")}),
      h("p", {}, "Input ", row.in_mods.map(function (m) { return chip(m); }), " Output ", row.out_mods.map(function (m) { return chip(m); })),
      h("p", {id: "ds-facts", text: facts(row)}),
      row.also_on.length ? h("p", {text: "Also on the bench as " + row.also_on.join(", ") + "."}) : null,
      h("h3", {text: "Routes on this install"}), routes, said,
      h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}})));
    d.showModal();
    Bench.get("/api/discover-model?provider=" + encodeURIComponent(row.provider) + "&model=" + encodeURIComponent(row.model)).then(function (r) {
      routes.textContent = "";
      if (!r.ok) { said.textContent = Bench.errorsText(r.errors); return; }
      if (r.errors.length) said.textContent = Bench.errorsText(r.errors);
      if (!r.routes.length) {
        Bench.add(routes, h("p", {text: "None: " + row.provider_name + " needs a connection in a hub or an endpoint of its own first" +
          (row.api ? " (its OpenAI-compatible base URL is " + row.api + ")" : "") + "."}));
        return;
      }
      r.routes.forEach(function (route) { Bench.add(routes, routeLine(route, said)); });
    });
  }

  function routeLine(route, said) {
    var detail = [route.model, route.free ? "free" : route.cost && route.cost.input !== undefined ? usd(route.cost.input) + " / " + usd(route.cost.output) + " per million tokens" : "paid"];
    if (limits(route.limits)) detail.push(limits(route.limits));
    var end = route.on_bench_as ? chip("on the bench as " + route.on_bench_as, "ok") :
      h("button", {type: "button", cls: "btn small ds-add", text: "Add via this", on: {click: function () { addVia(route, said); }}});
    return h("div", {cls: "ds-route", "data-via": route.via, "data-endpoint": route.endpoint},
      h("div", {cls: "row"}, h("strong", {text: route.label}), end),
      h("div", {cls: "mono", text: detail.join(" · ")}), h("p", {cls: "muted", text: route.note}));
  }

  /* DS-5: what Add via this will do, then do it. */
  function addVia(route, said) {
    var paid = route.free ? "" : " (PAID)";
    var steps = route.via === "direct" ? ["register it on " + route.endpoint, "a 4-call availability probe", "the internal suite"] :
      route.via === "hub" ? (route.steps || []).concat(["register it", "a 4-call availability probe", "the internal suite"]) :
      ["add it to the " + route.connection + " connection's Model IDs in Open WebUI", "a public model record tagged with the connection's logo",
        "register it", "a 4-call availability probe", "the internal suite"];
    var text = "Add " + route.model + paid + " via " + route.label + "? " + steps.map(function (s, i) { return (i + 1) + ". " + s; }).join("; ") + ".";
    Bench.confirmDialog(text).then(function (yes) {
      if (!yes) return;
      $("#discover-dialog").close();
      if (route.via === "direct") {
        Bench.post("/api/onboard-queue", {items: [{served: route.model, endpoint: route.endpoint}]}).then(function (r) {
          if (!r.ok) { said.textContent = Bench.errorsText(r.errors); $("#discover-dialog").showModal(); return; }
          Bench.queue.draw(r); Bench.queue.poll();
          Bench.followOnboarding(route.model, route.endpoint, null);
        });
        return;
      }
      var label = route.via === "openwebui" ? "Open WebUI" : route.hub || route.label;
      var extra = {text: "Added to " + label, state: "now"};
      Bench.followOnboarding(route.model, null, extra, true);
      Bench.queue.hint(route.model, label);
      Bench.post("/api/discover/add", {connection: route.connection, model: route.model, endpoint: route.endpoint}).then(function (r) {
        extra.state = r.ok || r.served ? "done" : "fail";
        extra.errors = r.errors || [];
        if (r.served) { Bench.queue.draw(r); Bench.queue.poll(); Bench.followOnboarding(r.served, r.endpoint, extra); }
        else Bench.followOnboarding(route.model, null, extra, true);
      });
    });
  }
})();

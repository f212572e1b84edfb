/* The dashboard's script: plain DOM, no framework, no build step, no network beyond this server.
   Tables are drawn from window.BENCH (embedded in the page) and the JSON APIs; every write is a
   same-origin JSON POST whose rules the server checks again. Text is always set as text, never HTML. */
"use strict";
(function () {
  var B = window.BENCH;
  var $ = function (sel, root) { return (root || document).querySelector(sel); };
  var $$ = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };

  function h(tag, attrs) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") el.textContent = v;
      else if (k === "on") Object.keys(v).forEach(function (ev) { el.addEventListener(ev, v[ev]); });
      else if (k === "cls") el.className = v;
      else if (k in el && typeof v !== "string") el[k] = v;
      else el.setAttribute(k, v === true ? "" : v);
    });
    add.apply(null, [el].concat(Array.prototype.slice.call(arguments, 2)));
    return el;
  }
  function add(el) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) add.apply(null, [el].concat(child));
      else el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
  }
  function store(key, value) {
    try { if (value === undefined) return localStorage.getItem(key); localStorage.setItem(key, value); }
    catch (e) { return null; }
  }
  function when(at) { return String(at || "").slice(0, 16).replace("T", " "); }
  /* "3 min ago" for an ISO time, the absolute time in its title; ago.refresh() brings every one up to date */
  function agoText(at) {
    var s = (Date.now() - Date.parse(at)) / 1000;
    if (isNaN(s)) return when(at);
    if (s < 60) return "just now";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h ago";
    return Math.floor(s / 86400) + " d ago";
  }
  function ago(at) { return h("time", {datetime: at, title: when(at) + " UTC", "data-ago": "", text: agoText(at)}); }
  ago.refresh = function () { $$("time[data-ago]").forEach(function (t) { t.textContent = agoText(t.getAttribute("datetime")); }); };
  function thousands(n) { return Number(n).toLocaleString("en-US"); }
  function errorsText(errors) { return (errors || []).map(function (e) { return "• " + e; }).join("\n"); }

  function post(path, body) {
    return fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body || {})})
      .then(function (r) { return r.json().catch(function () { return {ok: false, errors: ["HTTP " + r.status]}; }); });
  }
  function get(path) { return fetch(path).then(function (r) { return r.json(); }); }
  function reloadSoon(ms) { setTimeout(function () { location.reload(); }, ms); }

  /* UI-8: the page's own confirm dialog, a Promise of yes/no (Escape = no). */
  function confirmDialog(text, danger) {
    var d = $("#confirm");
    $("#confirm-text").textContent = text;
    $("#confirm-yes").className = danger ? "btn danger" : "btn";
    d.returnValue = "";
    d.showModal();
    return new Promise(function (resolve) {
      d.addEventListener("close", function once() { d.removeEventListener("close", once); resolve(d.returnValue === "yes"); });
    });
  }
  /* UI-8: a click that starts and ends on the backdrop closes a dialog. */
  $$("dialog").forEach(function (d) {
    var down = null;
    d.addEventListener("mousedown", function (e) { down = e.target; });
    d.addEventListener("click", function (e) { if (e.target === d && down === d) d.close(); down = null; });
  });

  /* UI-4: sortable tables; first activation descending, then ascending. */
  function sortKey(cell) {
    var v = cell.getAttribute("data-sort");
    if (v === null) v = cell.textContent.trim();
    return /^-?\d/.test(v) && !isNaN(parseFloat(v)) ? parseFloat(v) : v.toLowerCase();
  }
  function table(columns, rows, empty) {
    var head = h("tr", {}, columns.map(function (c, i) {
      var th = h("th", {scope: "col", cls: (c.num ? "num" : "") + (c.phone === false ? " wide" : ""), text: c.title});
      if (c.sort !== false) {
        th.setAttribute("data-sortable", "");
        th.tabIndex = 0;
        var go = function () { sortBy(th, i); };
        th.addEventListener("click", go);
        th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
      }
      return th;
    }));
    var body = h("tbody", {});
    if (!rows.length && empty) body.appendChild(h("tr", {}, h("td", {colspan: columns.length, cls: "muted", text: empty})));
    rows.forEach(function (r) {
      columns.forEach(function (c, i) { if (c.phone === false && r.cells[i]) r.cells[i].classList.add("wide"); });
      body.appendChild(r);
    });
    return h("div", {cls: "scroll"}, h("table", {}, h("thead", {}, head), body));
  }
  function sortBy(th, i) {
    var t = th.closest("table"), body = t.tBodies[0];
    var asc = th.getAttribute("aria-sort") === "descending";
    $$("th", t).forEach(function (o) { o.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortKey(a.cells[i] || a), y = sortKey(b.cells[i] || b);
      if (typeof x !== typeof y) return (typeof x === "number" ? -1 : 1) * (asc ? 1 : -1);
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function td(content, attrs) { return h("td", attrs || {}, content); }
  function chip(text, cls, title) { return h("span", {cls: "chip " + (cls || ""), title: title || null, text: text}); }

  /* UI-5: a filter box hides rows (and log lines) whose text lacks the query; facets match data-<facet>. */
  function filters(scope, facets) {
    var box = h("input", {type: "search", placeholder: "Filter by model or connection", "aria-label": "Filter by model or connection"});
    var selects = (facets || []).map(function (f) {
      var s = h("select", {"aria-label": f.label, "data-facet": f.key}, h("option", {value: "", text: "any " + f.label.toLowerCase()}),
        f.values.map(function (v) { return h("option", {value: v, text: v}); }));
      s.addEventListener("change", apply);
      return h("label", {}, f.label, s);
    });
    function apply() {
      var q = box.value.toLowerCase();
      $$("tbody tr, .log-line", scope()).forEach(function (row) {
        var hit = row.textContent.toLowerCase().indexOf(q) >= 0;
        $$("select[data-facet]", bar).forEach(function (s) {
          if (s.value && row.getAttribute("data-" + s.getAttribute("data-facet")) !== s.value) hit = false;
        });
        row.style.display = hit ? "" : "none";
      });
    }
    box.addEventListener("input", apply);
    var bar = h("div", {cls: "toolbar"}, box, selects);
    return bar;
  }
  function retiredToggle() {
    var box = h("input", {type: "checkbox", "data-retired": ""});
    box.checked = document.body.classList.contains("show-retired");
    box.addEventListener("change", function () {
      document.body.classList.toggle("show-retired", box.checked);
      $$("input[data-retired]").forEach(function (o) { o.checked = box.checked; });
      store("bench.retired", box.checked ? "1" : "0");
    });
    return h("label", {}, box, "Show retired");
  }
  if (store("bench.retired") === "1") document.body.classList.add("show-retired");

  /* SHELL-12: the model name cell. */
  function nameCell(r) {
    var sub = [];
    if (r.retired) sub.push("retired " + (r.retired_at || ""));
    else if (r.decision) sub.push(r.served + " · " + (r.tag || ""));
    else if (r.tag) sub.push(r.tag);
    if (r.ad_hoc) sub.push("ad hoc");
    return [h("a", {cls: "model", href: "#", "data-alias": r.alias, text: r.alias}), h("span", {cls: "subline", text: sub.join(" · ")})];
  }
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a.model[data-alias]");
    if (a) { e.preventDefault(); openModel(a.getAttribute("data-alias")); }
  });

  /* -- tabs (SHELL-10, UI-2, UI-3) -------------------------------------------------------- */
  var loaders = {};
  function show(key) {
    if (!$("#tab-" + key)) key = "glance";
    $$("[role=tab]").forEach(function (t) {
      var on = t.getAttribute("data-tab") === key;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
    });
    $$("section.tab").forEach(function (s) { s.hidden = s.id !== "tab-" + key; });
    store("bench.tab", key);
    if (loaders[key]) loaders[key]();
  }
  $$("[role=tab]").forEach(function (t, i, all) {
    t.addEventListener("click", function () { show(t.getAttribute("data-tab")); });
    t.addEventListener("keydown", function (e) {
      var step = {ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1}[e.key];
      if (!step) return;
      e.preventDefault();
      var next = all[(i + step + all.length) % all.length];
      next.focus();
      show(next.getAttribute("data-tab"));
    });
  });

  /* -- Action needed (SHELL-4..8) --------------------------------------------------------- */
  function drawActions() {
    var A = B.actions, box = $("#actions");
    if (!A.alerts.length && !A.auto.length) return;
    box.hidden = false;
    var keys = A.alerts.map(function (a) { return a.key; }).concat(A.auto.map(function (a) { return a.key; }));
    var saved = null;
    try { saved = JSON.parse(store("bench.actions.hidden") || "null"); } catch (e) { saved = null; }
    var folded = saved && Date.now() - saved.at < 12 * 3600 * 1000 && keys.every(function (k) { return saved.keys.indexOf(k) >= 0; });
    var body = h("div", {id: "actions-body"});
    var toggle = h("button", {type: "button", cls: "btn ghost small", "aria-expanded": folded ? "false" : "true",
      "aria-controls": "actions-body", text: folded ? "show" : "Hide"});
    toggle.addEventListener("click", function () {
      var hide = !body.hidden;
      body.hidden = hide;
      toggle.textContent = hide ? "show" : "Hide";
      toggle.setAttribute("aria-expanded", hide ? "false" : "true");
      store("bench.actions.hidden", hide ? JSON.stringify({at: Date.now(), keys: keys}) : "");
    });
    body.hidden = !!folded;
    add(body, h("p", {cls: "sub", text: A.alerts.length ? "States that will not fix themselves." : "Nothing open."}));
    A.alerts.forEach(function (a) {
      var why = h("span", {cls: "muted", text: a.why});
      var buttons = [];
      if (a.aliases.length) buttons.push(actButton("Retire all " + a.aliases.length, true, function () {
        return retire(a.aliases, "from the dashboard: " + a.message, why); }));
      else if (a.alias) {
        if (a.kind === "retiring") buttons.push(actButton("Retry", false, function (btn) { return retryRow(a.alias, why, btn); },
          "One call now; an answer clears the alert"));
        buttons.push(actButton("Open", false, function () { openModel(a.alias); return Promise.resolve(); }));
        buttons.push(actButton("Retire now", true, function () { return retire([a.alias], "from the dashboard: " + a.message, why); }));
      }
      add(body, h("div", {cls: "alert-row", "data-key": a.key},
        h("div", {}, chip(a.kind, /retir/.test(a.kind) ? "err" : "warn"), a.message), why, h("div", {cls: "row"}, buttons)));
    });
    if (A.auto.length) {
      add(body, h("details", {}, h("summary", {text: "Retired automatically this week · " + A.auto.length + " — each can be restored"}),
        A.auto.map(function (r) {
          var why = h("span", {cls: "muted", text: r.why});
          return h("div", {cls: "alert-row", "data-key": r.key}, h("div", {text: r.alias + " · " + r.at}), why,
            h("div", {}, actButton("Restore", false, function () { return restore([r.alias], why); })));
        })));
    }
    add(box, h("div", {cls: "row"}, h("h2", {id: "actions-title", text: "Action needed · " + A.alerts.length}), toggle), body);
  }
  function actButton(text, danger, run, title) {
    var b = h("button", {type: "button", cls: "btn small " + (danger ? "danger" : "ghost"), text: text, title: title || null});
    b.addEventListener("click", function () { b.disabled = true; run(b).then(function () { b.disabled = false; }); });
    return b;
  }
  function retryRow(alias, why, btn) {
    btn.textContent = "Asking…";
    return post("/api/retry", {alias: alias}).then(function (r) {
      btn.textContent = "Retry";
      if (r.ok) { why.textContent = r.changed.join(" · ") + ". Reloading…"; reloadSoon(900); }
      else { why.textContent = (r.errors || []).join("; "); why.className = "errors"; }
    });
  }
  function sequential(aliases, make) {
    var errors = [];
    return aliases.reduce(function (p, a) {
      return p.then(function () { return post(make.path, make.body(a)).then(function (r) { if (!r.ok) errors = errors.concat(r.errors); }); });
    }, Promise.resolve()).then(function () { return errors; });
  }
  function retire(aliases, reason, why) {
    return confirmDialog("Retire " + aliases.join(", ") + "? The evidence stays and Restore brings it back.", true).then(function (yes) {
      if (!yes) return;
      return sequential(aliases, {path: "/api/remove", body: function (a) { return {alias: a, reason: reason}; }}).then(function (errors) {
        why.textContent = errors.length ? errors.join("; ") : "Done. Reloading…";
        if (!errors.length) reloadSoon(900);
      });
    });
  }
  function restore(aliases, why) {
    return confirmDialog("Restore " + aliases.join(", ") + "?").then(function (yes) {
      if (!yes) return;
      return sequential(aliases, {path: "/api/restore", body: function (a) { return {alias: a}; }}).then(function (errors) {
        why.textContent = errors.length ? errors.join("; ") : "Done. Reloading…";
        if (!errors.length) reloadSoon(900);
      });
    });
  }

  /* -- At a glance (GL-1..6) --------------------------------------------------------------- */
  function distinct(rows, key) {
    return rows.map(function (r) { return r[key]; }).filter(function (v, i, all) { return v && all.indexOf(v) === i; }).sort();
  }
  function drawGlance() {
    var rows = B.glance, sec = $("#tab-glance");
    var trs = rows.map(function (r) {
      var rate = r.judged ? r.useful / r.judged : -1;
      var helped = r.judged ? [h("span", {cls: "meter" + (rate < 0.5 ? " low" : "")},
        h("span", {style: "width:" + Math.max(4, Math.round(rate * 100)) + "%"})), r.useful + "/" + r.judged] : "not judged";
      var context = r.context ? h("span", {title: r.context_source || null, text: thousands(Math.floor(r.context / 1000)) + "k" + (r.context_source === "you" ? "*" : "")})
        : r.decision ? "—" : h("span", {cls: "muted", title: "unknown: fill it in the model popup", text: "?"});
      var tr = h("tr", {cls: r.retired ? "retired" : "", "data-connection": r.connection, "data-status": r.status.replace(/ in \d+d$/, ""),
        "data-role": r.role, "data-price": r.price},
        td(nameCell(r)),
        td([chip(r.status, r.css, r.why), r.new ? chip("new", "new", "onboarded this week") : null, stoppedChip(r.alias)], {"data-sort": {err: 0, warn: 1, "": 2, ok: 3}[r.css]}),
        td(r.decision ? "decision" + (r.question_types && r.question_types.length ? " · " + r.question_types.join(", ") : "") : r.role),
        td(context, {cls: "num", "data-sort": r.context || -1}),
        td(r.can.length ? r.can.map(function (c) { return chip(c); }) : "—"),
        td(r.offloads, {cls: "num"}),
        td(helped, {"data-sort": rate, cls: "nowrap"}),
        td(r.suite || "—", {"data-sort": r.suite ? eval0(r.suite) : -1, title: r.suite ? r.suite_tasks + " task" + (r.suite_tasks === 1 ? "" : "s") : null}),
        td(r.reply === null ? "—" : r.reply.toFixed(1) + "s", {cls: "num", "data-sort": r.reply === null ? 99999 : r.reply}),
        td(r.last || "never", {"data-sort": r.last || "0"}));
      return tr;
    });
    var cols = ["Model", "Status", "Role", "Context", "Can", "Offloads", "Helped", "Suite", "Reply time", "Last answer"].map(function (t) {
      return {title: t, num: t === "Context" || t === "Offloads" || t === "Reply time", phone: ["Model", "Status", "Helped"].indexOf(t) >= 0};
    });
    var facets = [{label: "Connection", key: "connection"}, {label: "Status", key: "status"}, {label: "Role", key: "role"}, {label: "Price", key: "price"}]
      .map(function (f) { return {label: f.label, key: f.key, values: distinct(rows.map(function (r) {
        return {connection: r.connection, status: r.status.replace(/ in \d+d$/, ""), role: r.role, price: r.price}; }), f.key)}; });
    var bar = filters(function () { return $("#glance-card"); }, facets);  /* the roster only, not other cards */
    add(bar, retiredToggle());
    add(sec, h("div", {cls: "card", id: "glance-card"}, h("h2", {text: "At a glance"}),
      h("p", {cls: "sub", text: rows.length + " models. Status comes from each model's latest probe; Offloads and Helped count real work through the gateway and your verdicts on it."}),
      bar, table(cols, trs, "No models on the bench yet."),
      h("details", {}, h("summary", {text: "How to read this"}),
        h("p", {text: "Status is the latest availability probe: healthy answered it; throttled and slow never retire a model within 7 days; retiring in Nd counts down to an automatic retirement unless it answers. Offloads are panel seats and other real work; Helped is useful verdicts over judged ones. Suite is findings over known bugs in the internal suite. Reply time is the p50 of a one-word prompt. Last answer is the latest real answer: 7 days without one retires a model. Filters narrow by connection, status, role and price."}))));
  }
  function stoppedChip(alias) {
    var o = B.onboard[alias];
    return o ? chip("onboard stopped", o.css, "onboarding stopped at the " + (o.step || "probe") + ": " + o.label + ". Open the model for the error.") : null;
  }
  var ADVICE = {capacity: "The provider's limit: it stays registered, the daily probe retries, and its suite can run once it answers.",
    timeout: "The daily probe retries it.", empty: "Raise Max tokens under Call options: the answer budget went on thinking.",
    paywalled: "Retire it: the free tier moved behind a paid slug.", structural: "Retire it: nothing serves that name.",
    entitlement: "The account may not call it.", signin: "Sign in again: the key was refused."};
  function onboardNote(alias) {
    var o = B.onboard[alias];
    if (!o) return null;
    return h("div", {cls: "card"}, h("p", {}, chip("onboard stopped", o.css), "Onboarding stopped at the " + (o.step || "probe") + " on " +
      String(o.at || "").slice(0, 10) + ": " + o.label), h("p", {cls: "muted", text: ADVICE[o.failure] || o.reading}),
      o.detail ? h("pre", {cls: "answer", text: o.detail}) : null, o.log ? foldedLog(o.log) : null);
  }
  /* MP-19: the run's log, read only when unfolded */
  function foldedLog(name) {
    var text = h("pre", {cls: "answer", text: "reading…"});
    var box = h("details", {cls: "onboard-log"}, h("summary", {text: "Onboarding log"}), text);
    box.addEventListener("toggle", function () {
      if (!box.open || box.dataset.read) return;
      box.dataset.read = "1";
      get("/api/onboard?log=" + encodeURIComponent(name)).then(function (r) {
        text.textContent = r.ok ? (r.tail || "(the log is empty)") : r.errors.join("; ");
      });
    });
    return box;
  }
  function eval0(ratio) { var p = ratio.split("/"); return (+p[0] / +p[1]).toFixed(3); }

  /* -- Models (MD-1) ------------------------------------------------------------------------ */
  function drawModels() {
    var sec = $("#tab-models"), groups = {};
    B.glance.filter(function (r) { return !r.retired; }).forEach(function (r) {
      var c = r.connection || r.endpoint || "?";
      (groups[c] = groups[c] || []).push(r);
    });
    add(sec, h("div", {cls: "card"}, h("h2", {text: "Models"}),
      h("p", {cls: "sub", text: "Every model on the bench, by connection. Open one to change its role or alias, make it ad hoc, retry it or retire it."})));
    Object.keys(groups).sort().forEach(function (c) {
      var rows = groups[c].sort(function (a, b) { return a.alias < b.alias ? -1 : 1; }).map(function (r) {
        var lim = function (k) { return r.limits && r.limits[k] ? thousands(r.limits[k]) : "—"; };
        return h("tr", {}, td([h("a", {cls: "model", href: "#", "data-alias": r.alias, text: r.alias}), r.decision ? [" ", chip("decision")] : null]),
          td(r.endpoint ? chip(r.endpoint, "via", "reached through the " + r.endpoint + " endpoint") : "?"),
          td(r.context ? thousands(Math.floor(r.context / 1000)) + "k" : r.decision ? "—" : "?", {cls: "num", "data-sort": r.context || -1}),
          td(r.max_output ? thousands(r.max_output) : "—", {cls: "num"}),
          td(r.input && r.input.length ? r.input.join(", ") : "—"),
          td(lim("rpm"), {cls: "num"}), td(lim("rpd"), {cls: "num"}), td(lim("tpm"), {cls: "num"}), td(lim("tpd"), {cls: "num"}));
      });
      var cols = ["Model", "Through", "Context", "Max output", "Input", "rpm", "rpd", "tpm", "tpd"].map(function (t, i) { return {title: t, num: i >= 2 && i !== 4, phone: i === 0 || i === 2 || i === 5}; });
      add(sec, h("div", {cls: "card"}, h("h2", {text: c + " · " + rows.length + " models"}), table(cols, rows)));
    });
  }

  /* -- The model popup (MP-1..5, MP-10, MP-14, MP-18) -------------------------------------------- */
  function openModel(alias) {
    var m = B.models[alias], gone = B.retired[alias], d = $("#model-dialog");
    if (!m && !gone) return;
    d.textContent = "";
    var said = h("div", {cls: "errors", role: "alert"}), done = h("div", {cls: "done", role: "status"});
    var close = h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}});
    if (!m) {
      var restoreBtn = h("button", {type: "button", cls: "btn", text: "Restore"});
      restoreBtn.addEventListener("click", function () {
        restoreBtn.disabled = true;
        post("/api/restore", {alias: alias}).then(function (r) {
          if (r.ok) { done.textContent = "Done: " + r.changed.join(", ") + (r.sync ? " · " + r.sync : ""); setTimeout(function () { d.close(); location.reload(); }, 2000); }
          else { said.textContent = errorsText(r.errors); restoreBtn.disabled = false; }
        });
      });
      add(d, h("h2", {id: "md-title", text: alias}), h("p", {text: "served as " + gone.served + (gone.tag ? " · " + gone.tag : "")}),
        h("p", {text: "Retired " + String(gone.at || "").slice(0, 10) + (gone.by === "auto" ? " automatically" : " by hand") + ": " + (gone.why || "")}),
        h("p", {cls: "muted", text: "Its evidence is untouched. Restore puts back the same alias, role and endpoint; failures recorded before the restore are ignored by the retirement check."}),
        said, done, h("div", {cls: "row end"}, close, restoreBtn));
      d.showModal();
      return;
    }
    var decision = m.kind === "decision";
    var aliasBox = h("input", {id: "md-alias", value: alias, autocomplete: "off"});
    var warn = h("p", {cls: "muted", hidden: true, text: "Renaming rewrites the registry and records old → new; every record keyed by the old alias follows it."});
    aliasBox.addEventListener("input", function () { warn.hidden = aliasBox.value.trim() === alias; });
    var roleSel = h("select", {id: "md-role", disabled: decision}, Object.keys(B.roles).map(function (r) {
      return h("option", {value: r, text: r, selected: r === m.role, disabled: r === "decision" && !decision});
    }));
    var roleText = h("p", {cls: "muted", text: B.roles[m.role] || ""});
    roleSel.addEventListener("change", function () { roleText.textContent = B.roles[roleSel.value] || ""; });
    var adhoc = h("input", {type: "checkbox", id: "md-adhoc", checked: !!m.ad_hoc});
    var types = decision ? questionTypeBoxes(m.question_types || []) : null;
    var save = h("button", {type: "button", cls: "btn", text: "Save"});
    save.addEventListener("click", function () {
      var newAlias = aliasBox.value.trim();
      var go = newAlias !== alias ? confirmDialog("Rename " + alias + " to " + newAlias + "? Every record keyed by the old alias follows it.") : Promise.resolve(true);
      go.then(function (yes) {
        if (!yes) return;
        save.disabled = true;
        var body = {alias: alias, new_alias: newAlias, new_role: roleSel.value, new_ad_hoc: adhoc.checked};
        if (types) body.new_question_types = types.boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
        post("/api/model", body).then(function (r) {
          if (r.ok) { said.textContent = ""; done.textContent = "Done: " + r.changed.join(", ") + (r.sync ? " · " + r.sync : "") + ". Closing…"; setTimeout(function () { d.close(); location.reload(); }, 2000); }
          else { said.textContent = errorsText(r.errors); save.disabled = false; }
        });
      });
    });
    var retry = h("button", {type: "button", cls: "btn ghost", text: "Retry", title: "One call now: an answer is evidence the retirement check reads"});
    retry.addEventListener("click", function () {
      retry.disabled = true; retry.textContent = "Asking…";
      post("/api/retry", {alias: alias}).then(function (r) {
        retry.textContent = "Retry"; retry.disabled = false;
        if (r.ok) { done.textContent = r.changed.join(" · ") + ". Reloading…"; reloadSoon(900); } else said.textContent = errorsText(r.errors);
      });
    });
    var why = h("input", {id: "md-why", placeholder: "retired by hand"});
    var retireBtn = h("button", {type: "button", cls: "btn danger", text: "Retire"});
    retireBtn.addEventListener("click", function () {
      confirmDialog("Retire " + alias + "? The registry entry goes; the evidence stays, and Restore brings it back.", true).then(function (yes) {
        if (!yes) return;
        d.close();
        post("/api/remove", {alias: alias, reason: why.value}).then(function (r) {
          if (r.ok) location.reload();
          else { d.showModal(); said.textContent = errorsText(r.errors); }
        });
      });
    });
    var f = B.facts[alias] || {};
    add(d, h("h2", {id: "md-title", text: alias}), h("p", {text: "serves " + m.served + (m.tag ? " · " + m.tag : "")}), onboardNote(alias),
      h("div", {cls: "field"}, h("label", {"for": "md-alias", text: "Alias"}), aliasBox,
        h("span", {cls: "muted", text: decision ? "Letters, digits, dot, dash, underscore; unused, never a retired name. The decision client calls it by this name." : "Letters, digits, dot, dash, underscore; unused, never a retired name."}), warn),
      h("div", {cls: "field"}, h("label", {"for": "md-role", text: "Role"}), roleSel, roleText),
      types ? types.set : null,
      profile(alias, f),
      decision ? null : factsSection(alias, f, said, done), decision ? null : optionsSection(alias, f, said, done),
      h("div", {cls: "field"}, h("label", {}, adhoc, " Ad hoc only"), h("span", {cls: "muted", text: "An ad hoc model is never chosen automatically (explorer, merger); it sits only where a collection names it."})),
      said, done, h("div", {cls: "row end"}, close, decision ? null : retry, save),
      h("details", {}, h("summary", {text: "Retire this model…"}), h("div", {cls: "field"}, h("label", {"for": "md-why", text: "Why"}), why), retireBtn));
    d.showModal();
  }

  /* MP-3: what is known of the model, each fact from the catalog's layers (or "unknown"). */
  function profile(alias, f) {
    var row = B.glance.filter(function (r) { return r.alias === alias; })[0] || {};
    var can = [["tools", "tools"], ["vision", "vision"], ["structured_output", "json"], ["reasoning", "reasons"]]
      .filter(function (c) { return f[c[0]] === true; }).map(function (c) { return c[1]; });
    var parts = [f.context_window ? "context " + thousands(f.context_window) + " tokens" : "context unknown",
      f.max_output ? "output up to " + thousands(f.max_output) : null, can.length ? "can: " + can.join(", ") : "can: nothing known",
      f.knowledge_cutoff ? "knows up to " + f.knowledge_cutoff : null,
      f.release_date || f.released ? "released " + (f.release_date || f.released) : null,
      f.open_weights === true ? "open weights" : f.open_weights === false ? "closed weights" : null,
      listPrice(f.cost) ? "list price " + listPrice(f.cost) : row.price ? "price: " + row.price : null];
    var src = f.sources || {}, mods = f.modalities && typeof f.modalities === "object" ? f.modalities : {};
    var chips = [modalityChips("Input", f.input_modalities || mods.input, src.input_modalities || src.modalities),
      modalityChips("Output", f.output_modalities || mods.output, src.output_modalities || src.modalities)].filter(Boolean);
    return h("div", {id: "md-profile"}, chips.length ? h("p", {cls: "chips", id: "md-modalities"}, chips) : null,
      h("p", {cls: "muted", text: parts.filter(Boolean).join(" · ")}));
  }
  /* MP-20: the user's own facts fill the boxes; the sources' values are placeholders. */
  function factsSection(alias, f, said, done) {
    var src = f.sources || {}, mine = function (k) { return src[k] === "you"; };
    var seen = function (k) { return f[k] === null || f[k] === undefined ? "unknown" : f[k] + " · " + (src[k] || "catalog"); };
    var number = function (k, label) {
      var box = h("input", {type: "number", min: 1, id: "mf-" + k, value: mine(k) ? f[k] : "", placeholder: mine(k) || f[k] == null ? "" : String(f[k])});
      return [h("div", {cls: "field"}, h("label", {"for": "mf-" + k, text: label}), box, h("span", {cls: "muted", text: seen(k)})), box];
    };
    var ctx = number("context_window", "Context window"), out = number("max_output", "Max output");
    var caps = [["tools", "Tool calling"], ["vision", "Vision"], ["structured_output", "Structured output"], ["reasoning", "Reasoning"]].map(function (c) {
      var auto = mine(c[0]) ? "auto (hand back to the sources)" : "auto: " + (f[c[0]] === true ? "yes" : f[c[0]] === false ? "no" : "unknown");
      var sel = h("select", {id: "mf-" + c[0]}, h("option", {value: "", text: auto}), h("option", {value: "yes", text: "yes", selected: mine(c[0]) && f[c[0]] === true}),
        h("option", {value: "no", text: "no", selected: mine(c[0]) && f[c[0]] === false}));
      return [c[0], sel, h("div", {cls: "field"}, h("label", {"for": "mf-" + c[0], text: c[1]}), sel)];
    });
    var cutoff = h("input", {id: "mf-knowledge_cutoff", maxLength: 20, value: mine("knowledge_cutoff") ? f.knowledge_cutoff : ""});
    var own = (f.limits && src.limits === "you (this model)") ? f.limits : {};
    var limits = ["rpm", "rpd", "tpm", "tpd"].map(function (k) {
      var box = h("input", {type: "number", min: 1, id: "mf-" + k, value: own[k] || ""});
      return [k, box, h("div", {cls: "field"}, h("label", {"for": "mf-" + k, text: "This model's " + k}), box)];
    });
    var save = h("button", {type: "button", cls: "btn", text: "Save facts"});
    save.addEventListener("click", function () {
      var facts = {context_window: ctx[1].value === "" ? null : Number(ctx[1].value), max_output: out[1].value === "" ? null : Number(out[1].value),
        knowledge_cutoff: cutoff.value, limits: {}};
      caps.forEach(function (c) { facts[c[0]] = c[1].value === "yes" ? true : c[1].value === "no" ? false : null; });
      limits.forEach(function (l) { if (l[1].value !== "") facts.limits[l[0]] = Number(l[1].value); });
      post("/api/model-facts", {alias: alias, facts: facts}).then(function (r) {
        if (r.ok) { said.textContent = ""; done.textContent = "Saved. Reloading…"; reloadSoon(700); } else said.textContent = errorsText(r.errors);
      });
    });
    return h("details", {}, h("summary", {text: "Model facts"}), h("div", {cls: "grid2"}, ctx[0], out[0], caps.map(function (c) { return c[2]; }),
      h("div", {cls: "field"}, h("label", {"for": "mf-knowledge_cutoff", text: "Knowledge cutoff"}), cutoff),
      limits.map(function (l) { return l[2]; })), save);
  }
  /* MP-22: max tokens per answer, sent with every call to this model. */
  function optionsSection(alias, f, said, done) {
    var now = (B.options[alias] || {}).max_tokens;
    var box = h("input", {type: "number", min: 1, max: 1000000, id: "mo-max", value: now || "", placeholder: "the endpoint's default"});
    var save = h("button", {type: "button", cls: "btn", text: "Save options"});
    save.addEventListener("click", function () {
      post("/api/model-options", {alias: alias, max_tokens: box.value === "" ? null : Number(box.value)}).then(function (r) {
        if (r.ok) { said.textContent = ""; done.textContent = "Saved" + (r.note ? "; " + r.note : "") + ". Reloading…"; reloadSoon(900); }
        else said.textContent = errorsText(r.errors);
      });
    });
    return h("details", {}, h("summary", {text: "Call options"}), h("div", {cls: "field"}, h("label", {"for": "mo-max", text: "Max tokens per answer"}), box,
      f.max_output ? h("span", {cls: "muted", text: "At most its max output, " + thousands(f.max_output) + "."}) : null), save);
  }

  /* MP-3: a decision model's question types, one labelled checkbox each (MP-7 proves a type being added live). */
  var QUESTION_TYPES = [["noul", "yes/no: a probability of yes"], ["choice", "one option from a set"], ["score", "a level on an ordered scale"]];
  function questionTypeBoxes(now) {
    var boxes = QUESTION_TYPES.map(function (q) {
      return h("input", {type: "checkbox", id: "md-qt-" + q[0], value: q[0], checked: now.indexOf(q[0]) >= 0, "data-question-type": ""});
    });
    var set = h("fieldset", {cls: "field", id: "md-types"}, h("legend", {text: "Question types"}),
      QUESTION_TYPES.map(function (q, i) { return h("label", {"for": "md-qt-" + q[0]}, boxes[i], " " + q[0] + " ", h("span", {cls: "muted", text: "(" + q[1] + ")"})); }),
      h("span", {cls: "muted", text: "A type you add is proven first by one live test question; removing one needs no call."}));
    return {set: set, boxes: boxes};
  }
  /* MP-3's profile line: modality chips and list price, each only when the catalog record states it. */
  function modalityChips(label, mods, source) {
    if (!Array.isArray(mods) || !mods.length) return null;
    return h("span", {cls: "mods"}, label + ": ", mods.map(function (x) { return chip(String(x), "", source ? label + " from " + source : null); }),
      source ? h("span", {cls: "muted", text: " (" + source + ")"}) : null, " ");
  }
  function listPrice(cost) {
    if (!cost || typeof cost !== "object") return null;
    var i = cost.input, o = cost.output;
    if (typeof i !== "number" || typeof o !== "number") return null;
    if (i === 0 && o === 0) return "free";
    var money = function (n) { var t = String(+n.toFixed(4)), dp = (t.split(".")[1] || "").length; return "$" + (dp === 1 ? n.toFixed(2) : t); };
    return money(i) + " in / " + money(o) + " out per 1M tokens (a free tier may still apply)";
  }

  /* -- Collections (CO-1..11) ------------------------------------------------------------------ */
  var C = null;
  function loadCollections() {
    return get("/api/collections").then(function (r) { C = r; drawCollectionList(); drawSettingsForm(); });
  }
  function drawCollections() {
    var sec = $("#tab-collections");
    var newBtn = h("button", {type: "button", cls: "btn", id: "c-new", text: "New collection", on: {click: function () { openCollection(null); }}});
    add(sec, h("div", {cls: "card"}, h("h2", {text: "Collections"}),
      h("p", {cls: "sub", text: "Callers ask a collection as bench/<name> at " + B.gateway + "; its members answer together."}),
      h("div", {cls: "row"}, newBtn), h("p", {id: "c-status", role: "status", cls: "done"}), h("div", {id: "c-list"}),
      h("details", {id: "c-settings"}, h("summary", {text: "Gateway settings"}))),
      h("div", {cls: "card", id: "gateway-card"}, h("h2", {text: "Gateway"}), h("p", {cls: "sub", id: "gw-sub", text: "Loading…"}),
        h("div", {cls: "toolbar"}, h("input", {type: "search", id: "gw-filter", placeholder: "Filter by prompt, collection or model",
          "aria-label": "Filter the gateway's requests", on: {input: filterCard}}),
          h("label", {}, h("input", {type: "checkbox", id: "gw-owed", on: {change: filterCard}}), "Verdicts owed only")),
        h("div", {id: "gw-body"})));
    loadCollections();
  }
  function drawCollectionList() {
    var list = $("#c-list");
    list.textContent = "";
    if (!C.collections.length) { add(list, h("p", {cls: "muted", text: "No collections yet."})); return; }
    C.collections.forEach(function (c) {
      var t = c.together, line = c.members.join(", ") + " + " + c.explorers + " explorer" + (c.explorers === 1 ? "" : "s") +
        (c.shape ? " (" + c.shape + ")" : "") + (c.reply === "merged" ? " · merged by " + (c.merger || "verdicts") : "");
      var together = t ? "Together: " + (t.context_window ? "prompts up to " + Math.floor(t.context_window / 1000) + "k tokens" : "context unknown") +
        (t.context_unknown.length && t.context_window ? " (unknown for " + t.context_unknown.join(", ") + ")" : "") +
        " · all can: " + (t.capabilities.length ? t.capabilities.join(", ") : "nothing known in common") +
        " · " + t.connections.length + " connection" + (t.connections.length === 1 ? "" : "s") + tightest(t.limits) : "";
      add(list, h("button", {type: "button", cls: "list-row", on: {click: function () { openCollection(c); }}},
        h("strong", {text: "bench/" + c.name}), c.tags.map(function (tg) { return chip(tg); }),
        c.description ? h("span", {cls: "subline", text: c.description}) : null, h("span", {cls: "subline", text: line}),
        together ? h("span", {cls: "subline", text: together}) : null, h("span", {cls: "subline", text: "Open ›"})));
    });
  }
  function tightest(limits) {
    var said = ["rpm", "rpd", "tpm", "tpd"].filter(function (k) { return limits && limits[k]; })
      .map(function (k) { return thousands(limits[k]) + " " + k; });
    return said.length ? " · tightest " + said.join(", ") : "";
  }
  function drawSettingsForm() {
    var box = $("#c-settings");
    $$(":scope > :not(summary)", box).forEach(function (n) { n.remove(); });
    var calls = h("input", {type: "number", id: "gs-calls", min: 1, max: 10, value: C.settings.max_calls});
    var expl = h("input", {type: "number", id: "gs-explorers", min: 0, max: 2, value: C.settings.max_explorers});
    var policy = h("select", {id: "gs-policy"}, (C.settings.policies || []).map(function (p) {
      return h("option", {value: p, text: p === "counted" ? "counted (most useful verdicts)" : p + " (Thompson sampling)"});
    }));
    policy.value = C.settings.policy;
    var said = h("p", {role: "status"});
    var save = h("button", {type: "button", cls: "btn", text: "Save settings"});
    save.addEventListener("click", function () {
      var num = function (el) { return el.value === "" ? null : Number(el.value); };
      post("/api/gateway-settings", {max_calls: num(calls), max_explorers: num(expl), policy: policy.value || null}).then(function (r) {
        said.className = r.ok ? "done" : "errors";
        said.textContent = r.ok ? "Settings saved." : errorsText(r.errors);
        if (r.ok) loadCollections();
      });
    });
    add(box, h("div", {cls: "field"}, h("label", {"for": "gs-calls", text: "Max calls per request (1–10)"}), calls),
      h("div", {cls: "field"}, h("label", {"for": "gs-explorers", text: "Max explorers (0–2)"}), expl),
      h("div", {cls: "field"}, h("label", {"for": "gs-policy", text: "Merger and route choice"}), policy),
      h("p", {cls: "muted", text: "counted is the contract's rule: the model with the most useful verdicts on the task's shape merges, and route mode starts on the member with the most. thompson draws from each model's verdicts instead, so a model with few verdicts still gets tried now and then. Explorer seats follow staleness either way."}),
      h("p", {cls: "muted", text: "Explorers = min(max explorers, max calls − members). With 5 and 2: two or three members get 2 explorers, four get 1, five get none. A request naming no collection is refused with each one's description and tags."}),
      save, said);
  }
  var CAP_WORDS = {vision: ["vision", "take images"], tools: ["tools", "call tools"], json: ["structured_output", "give structured output"]};
  function misfits(alias, tags) {
    var f = C.facts[alias] || {caps: {}}, why = [];
    if (f.role === "image") why.push("an image generator: it never answers a panel");
    tags.forEach(function (t) {
      var need = CAP_WORDS[t];
      if (need) {
        var v = f.caps[need[0]];
        if (v === false) why.push("does not " + need[1]);
        else if (v !== true) why.push("the catalog does not say it can " + need[1] + "; tick it in its model popup if it does");
      }
      if (t === "long-context" && f.context && f.context < C.long_context) why.push("holds " + Math.floor(f.context / 1000) + "k tokens, under 128k");
      if (t !== "general" && C.shape_roles[t] && C.shape_roles[t].indexOf(f.role) < 0) why.push("role " + f.role + ": not for " + t + " tasks");
      if (t === "free" && f.price === "paid") why.push("paid, and the collection is tagged free");
    });
    return why;
  }
  function openCollection(c) {
    var d = $("#collection-dialog"), isNew = !c;
    c = c || {name: "", members: [], tags: [], shape: "", reply: "all", merger: "", description: ""};
    d.textContent = "";
    var name = h("input", {id: "cd-name", value: c.name, readOnly: !isNew, "aria-describedby": "cd-name-help", autocomplete: "off"});
    var tags = h("input", {id: "cd-tags", value: c.tags.join(", "), autocomplete: "off"});
    var tagList = function () { return tags.value.split(",").map(function (t) { return t.trim().toLowerCase(); }).filter(Boolean); };
    var sugg = h("div", {cls: "row"});
    var filter = h("input", {type: "search", id: "cd-filter", placeholder: "Find a model", "aria-label": "Filter the models"});
    var boxes = h("div", {cls: "members", role: "group", "aria-label": "Members"});
    var count = h("p", {cls: "muted", id: "cd-count", "aria-live": "polite"});
    var shape = h("select", {id: "cd-shape"}, h("option", {value: "", text: "automatic"}), C.shapes.map(function (s) { return h("option", {value: s, text: s, selected: s === c.shape}); }));
    var reply = h("select", {id: "cd-reply"}, [["all", "every answer"], ["merged", "merged"], ["route", "route (one member, for agents)"],
      ["council", "council (the seats rank each other, a chairman answers)"]].map(function (o) {
      return h("option", {value: o[0], text: o[1], selected: o[0] === c.reply}); }));
    var merger = h("select", {id: "cd-merger"}, h("option", {value: "", text: "automatic"}), C.models.map(function (m) { return h("option", {value: m, text: m, selected: m === c.merger}); }));
    var mergerField = h("div", {cls: "field"}, h("label", {"for": "cd-merger", text: "Merger"}), merger);
    var desc = h("textarea", {id: "cd-desc", maxLength: 300, rows: 2, value: c.description});
    var said = h("div", {cls: "errors", role: "alert"}), done = h("div", {cls: "done", role: "status"});
    var ticked = c.members.slice();
    function drawMembers() {
      boxes.textContent = "";
      var q = filter.value.toLowerCase(), t = tagList(), shown = 0, greyed = 0, clashes = 0, paidHidden = 0;
      C.models.forEach(function (m) {
        var on = ticked.indexOf(m) >= 0, why = misfits(m, t), served = C.served[m] || "";
        var paid = t.indexOf("free") >= 0 && (C.facts[m] || {}).price === "paid";
        if (!on && paid) { paidHidden++; return; }
        if (!on && q && m.toLowerCase().indexOf(q) < 0 && served.toLowerCase().indexOf(q) < 0) return;
        shown++;
        if (why.length) { if (on) clashes++; else greyed++; }
        var box = h("input", {type: "checkbox", value: m, checked: on, disabled: !on && (why.length > 0 || ticked.length >= C.settings.max_calls)});
        box.addEventListener("change", function () {
          if (box.checked) ticked.push(m); else ticked = ticked.filter(function (x) { return x !== m; });
          drawMembers();
        });
        add(boxes, h("label", {cls: why.length ? (on ? "clash" : "unfit") : "", title: [served !== m ? served : ""].concat(why).filter(Boolean).join("; ") || null}, box, m));
      });
      var n = ticked.length, x = Math.max(0, Math.min(C.settings.max_explorers, C.settings.max_calls - n));
      count.textContent = n + " member" + (n === 1 ? "" : "s") + " + " + x + " explorer" + (x === 1 ? "" : "s") + " = " + (n + x) + " calls per request" +
        (n > 0 && (n < 2 || n > 4) ? " · two to four members is recommended" : "") +
        (q ? " · showing " + shown + " of " + C.models.length + " models" : "") + (paidHidden ? " (" + paidHidden + " paid hidden by the free tag)" : "") +
        (greyed ? " · " + greyed + " greyed out by the tags (hover one for why)" : "") + (clashes ? " · " + clashes + " ticked member" + (clashes === 1 ? " does" : "s do") + " not fit the tags" : "");
    }
    function drawSuggestions() {
      sugg.textContent = "";
      var t = tagList();
      C.tag_suggestions.slice(0, 14).forEach(function (s) {
        var on = t.indexOf(s) >= 0;
        add(sugg, h("button", {type: "button", cls: "chip", "aria-pressed": on ? "true" : "false", text: (on ? "✓ " : "+ ") + s, on: {click: function () {
          var now = tagList();
          now = on ? now.filter(function (x) { return x !== s; }) : now.concat([s]);
          tags.value = now.join(", "); drawSuggestions(); drawMembers();
        }}}));
      });
    }
    filter.addEventListener("keydown", function (e) { if (e.key === "Escape" && filter.value) { e.preventDefault(); filter.value = ""; drawMembers(); } });
    filter.addEventListener("input", drawMembers);
    tags.addEventListener("input", function () { drawSuggestions(); drawMembers(); });
    reply.addEventListener("change", function () { mergerField.hidden = reply.value !== "merged"; });
    mergerField.hidden = reply.value !== "merged";
    function finished(text) {
      said.textContent = ""; done.textContent = text; $("#c-status").textContent = text;
      loadCollections(); setTimeout(function () { d.close(); }, 1200);
    }
    var save = h("button", {type: "button", cls: "btn", text: "Save collection", id: "cd-save"});
    save.addEventListener("click", function () {
      post("/api/collection", {name: name.value, members: ticked, shape: shape.value, description: desc.value, tags: tagList(),
        reply: reply.value, merger: merger.value}).then(function (r) {
        if (r.ok) finished("Saved bench/" + name.value.trim().replace(/^bench\//, "") + "."); else { done.textContent = ""; said.textContent = errorsText(r.errors); }
      });
    });
    var del = isNew ? null : h("button", {type: "button", cls: "btn danger", text: "Delete collection", on: {click: function () {
      confirmDialog("Delete bench/" + c.name + "? Callers asking for it will get an error.", true).then(function (yes) {
        if (yes) post("/api/collection/remove", {name: c.name}).then(function (r) { if (r.ok) finished("Deleted bench/" + c.name + "."); else said.textContent = errorsText(r.errors); });
      });
    }}});
    add(d, h("h2", {id: "cd-title", text: isNew ? "New collection" : "bench/" + c.name}),
      h("div", {cls: "field"}, h("label", {"for": "cd-name", text: "Name"}), h("div", {cls: "row"}, h("span", {cls: "mono", text: "bench/"}), name),
        h("span", {cls: "muted", id: "cd-name-help", text: "2-32 lower-case letters, digits or '-', saying what it is for."})),
      h("div", {cls: "field"}, h("label", {"for": "cd-tags", text: "Tags (comma-separated)"}), tags, sugg),
      h("fieldset", {}, h("legend", {text: "Members"}), filter, boxes, count),
      h("div", {cls: "field"}, h("label", {"for": "cd-shape", text: "Explorer shape"}), shape),
      h("div", {cls: "field"}, h("label", {"for": "cd-reply", text: "Reply"}), reply), mergerField,
      h("div", {cls: "field"}, h("label", {"for": "cd-desc", text: "Description"}), desc),
      said, done, h("div", {cls: "row end"}, del, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}}), save));
    drawSuggestions(); drawMembers();
    d.showModal();
  }

  /* -- The Gateway card (GW-1..3), refreshed while shown ---------------------------------------------- */
  var cardTimer = null, lastCard = "";
  function loadCard() {
    if (document.hidden || $("#tab-collections").hidden) return;
    get("/api/gateway-card").then(function (r) {
      var text = JSON.stringify(r);
      if (text !== lastCard) { lastCard = text; drawCard(r); } else ago.refresh();
    }).catch(function () { return null; });
  }
  function verdictMark(useful) { return useful === true ? " ✓" : useful === false ? " ✗" : ""; }
  function drawCard(r) {
    $("#gw-sub").textContent = "The last " + r.panels.length + " bench-gateway requests: " + r.seats + " seats, " + r.owed + " verdict" + (r.owed === 1 ? "" : "s") + " owed.";
    var body = $("#gw-body");
    body.textContent = "";
    var rows = r.panels.map(function (p) {
      var seats = p.seats.map(function (s) {
        var state = s.useful === true ? "useful" : s.useful === false ? "not useful" : "verdict owed";
        return h("button", {type: "button", cls: "chip seat " + ({ok: "ok", empty: "warn", error: "err"}[s.status] || ""), "data-call": s.call,
          title: s.seat + " · " + s.status + " in " + s.seconds + "s · " + state + " · " + s.call, text: s.alias + verdictMark(s.useful),
          on: {click: function () { openVerdict(s.call); }}});
      }).concat(p.skipped.map(function (s) { return chip(s.alias + " –", "muted", "not asked: " + s.why); }));
      return h("tr", {"data-owed": p.owed ? "yes" : "no"}, td(ago(p.at), {"data-sort": p.at, cls: "nowrap"}),
        td(h("span", {cls: "preview", title: p.preview, text: p.preview || "—"})), td(p.model), td(p.key || "—"),
        td(p.shape, {title: p.shape_by}), td(seats, {cls: "seats"}), td(p.owed, {cls: "num" + (p.owed ? "" : " muted")}));
    });
    add(body, table(["When", "Prompt", "Collection", "Asked by", "Explorer shape", "Seats", "Owed"].map(function (t) {
      return {title: t, num: t === "Owed", sort: t !== "Seats", phone: ["When", "Prompt", "Seats"].indexOf(t) >= 0}; }),
      rows, "No gateway requests yet. Call a collection at " + r.gateway + "."));
    if (r.conversations.length) {
      var conv = r.conversations.map(function (c) {
        return h("tr", {}, td(ago(c.at), {"data-sort": c.at, cls: "nowrap"}), td(c.model), td(c.key || "—"), td(c.task, {title: c.conversation}),
          td(c.answered.map(function (a) { return chip(a.alias + verdictMark(a.useful), "", a.call + " · " + (a.useful === true ? "useful" : a.useful === false ? "not useful" : "no verdict (optional)")); })),
          td(c.turns, {cls: "num"}), td(c.tool_calls, {cls: "num"}), td(c.failovers, {cls: "num" + (c.failovers ? "" : " muted")}),
          td(chip(c.status, {ok: "ok", empty: "warn", error: "err"}[c.status] || "", c.error || null)));
      });
      add(body, h("h3", {text: "Route conversations"}),
        table(["When", "Collection", "Asked by", "First message", "Answered by", "Turns", "Tool calls", "Failovers", "Last turn"].map(function (t, i) {
          return {title: t, num: i >= 5 && i <= 7, phone: i === 0 || i === 3 || i === 4}; }), conv),
        h("p", {cls: "muted", text: "Each conversation is one unjudged offload per model; a verdict is optional and never owed."}));
    }
    filterCard();
  }
  /* the card's filter: rows whose text holds the query (prompt, collection, key, shape, seats), owed ones only if asked */
  function filterCard() {
    var q = $("#gw-filter").value.toLowerCase(), owedOnly = $("#gw-owed").checked;
    $$("#gw-body tbody tr").forEach(function (row) {
      var hit = row.textContent.toLowerCase().indexOf(q) >= 0 && (!owedOnly || row.getAttribute("data-owed") === "yes");
      row.style.display = hit ? "" : "none";
    });
  }
  loaders.collections = function () { loadCard(); if (!cardTimer) cardTimer = setInterval(loadCard, 3000); };

  /* -- The verdict dialog (GW-4..6) --------------------------------------------------------------- */
  function openVerdict(call) {
    var d = $("#verdict-dialog");
    get("/api/gateway-seat?call=" + encodeURIComponent(call)).then(function (s) {
      d.textContent = "";
      if (!s.ok) { add(d, h("p", {cls: "errors", text: errorsText(s.errors)}), h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}})); d.showModal(); return; }
      var useful = h("input", {type: "radio", name: "vd-useful", id: "vd-yes", value: "yes", checked: s.useful === true});
      var not = h("input", {type: "radio", name: "vd-useful", id: "vd-no", value: "no", checked: s.useful === false});
      var note = h("textarea", {id: "vd-note", maxLength: 500, rows: 2, value: s.note || ""});
      var real = h("textarea", {id: "vd-real", rows: 2, value: (s.real || []).join("\n")});
      var falseBox = h("textarea", {id: "vd-false", rows: 2, value: (s.false || []).join("\n")});
      var said = h("div", {cls: "errors", role: "alert"}), done = h("div", {cls: "done", role: "status"});
      var lines = function (el) { return el.value.split("\n").map(function (x) { return x.trim(); }).filter(Boolean); };
      var save = h("button", {type: "submit", cls: "btn", text: "Save verdict"});
      var form = h("form", {method: "dialog"});
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        post("/api/verdict", {call: call, useful: useful.checked ? true : not.checked ? false : null, note: note.value, real: lines(real), false: lines(falseBox)}).then(function (r) {
          if (r.ok) { said.textContent = ""; done.textContent = "Recorded: " + r.changed.join(", ") + ". Reloading…"; setTimeout(function () { d.close(); loadCard(); }, 700); }
          else said.textContent = errorsText(r.errors);
        });
      });
      var answer = s.status === "error" ? "Error: " + s.error : s.status === "empty" || !s.answer ? "Empty reply: usually a token budget, not incapacity." : s.answer;
      add(form, h("h2", {id: "vd-title", text: s.alias + " · " + s.seat}),
        h("p", {cls: "muted", text: s.model + " · " + s.status + " in " + s.seconds + "s · " + when(s.at) + " · " + s.call}),
        h("details", {}, h("summary", {text: "Prompt"}), h("pre", {cls: "answer", text: s.prompt})),
        h("h3", {text: "Answer"}), h("pre", {cls: "answer", tabIndex: 0, text: answer}),
        h("fieldset", {}, h("legend", {text: "Was it useful?"}), h("label", {"for": "vd-yes"}, useful, " Useful"), " ", h("label", {"for": "vd-no"}, not, " Not useful")),
        h("div", {cls: "field"}, h("label", {"for": "vd-note", text: "Note"}), note),
        h("div", {cls: "field"}, h("label", {"for": "vd-real", text: "Findings it got right, verified (one per line)"}), real),
        h("div", {cls: "field"}, h("label", {"for": "vd-false", text: "Claims it made that are not true (one per line)"}), falseBox),
        said, done, h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}}), save));
      add(d, form);
      d.showModal();
      (s.useful === false ? not : useful).focus();
    });
  }

  /* -- Logs (LG-1) ------------------------------------------------------------------------------------ */
  var logsDrawn = false;
  loaders.logs = function () {
    if (logsDrawn) return;
    logsDrawn = true;
    get("/api/logs").then(function (r) {
      var sec = $("#tab-logs");
      var box = h("input", {type: "search", "data-filter": "page", placeholder: "Filter every log on this page", "aria-label": "Filter every log on this page"});
      box.addEventListener("input", function () {
        var q = box.value.toLowerCase();
        $$("tbody tr, .log-line", sec).forEach(function (row) { row.style.display = row.textContent.toLowerCase().indexOf(q) >= 0 ? "" : "none"; });
      });
      var calls = r.calls.map(function (c) { return h("tr", {}, td(when(c.at), {"data-sort": c.at}), td(c.model), td(c.shape), td(c.seats)); });
      var changed = r.changes.map(function (c) { return h("tr", {}, td(when(c.at), {"data-sort": c.at}), td(c.by), td(c.alias), td(c.field), td(c.new)); });
      add(sec, h("div", {cls: "card"}, h("h2", {text: "Logs"}), h("p", {cls: "sub", text: "Newest first, the last 200 lines of each. Prompts and answers are never shown here."}), h("div", {cls: "toolbar"}, box),
        h("details", {open: true}, h("summary", {text: "Gateway calls · " + calls.length}), table(["When", "Collection", "Shape", "Seats"].map(function (t) { return {title: t, phone: t !== "Shape"}; }), calls, "Nothing yet.")),
        h("details", {}, h("summary", {text: "Changes · " + changed.length}), table(["When", "By", "Model", "What", "New"].map(function (t) { return {title: t}; }), changed, "Nothing yet.")),
        h("details", {}, h("summary", {text: "Scheduler · " + r.scheduler.length}), r.scheduler.length ? r.scheduler.map(function (l) { return h("p", {cls: "log-line", text: l}); }) : h("p", {cls: "muted", text: "Nothing yet."})),
        h("details", {}, h("summary", {text: "Onboarding runs · " + r.onboarding.length}), r.onboarding.length ? r.onboarding.map(function (l) { return h("p", {cls: "log-line", text: l}); }) : h("p", {cls: "muted", text: "Nothing yet."}))));
    });
  };

  /* -- Settings and Info (ST-1..7, ST-10, ST-11, ST-14, IN-1) ---------------------------------------------- */
  var S = null;
  function loadSettings() {
    if (S) return Promise.resolve(S);
    return get("/api/settings").then(function (r) { S = r; return r; });
  }
  loaders.settings = function () {
    var sec = $("#tab-settings");
    if (sec.childNodes.length) return;
    loadSettings().then(function (r) {
      var themeSaid = h("p", {role: "status", cls: "done"});
      var cards = r.themes.map(function (t) {
        var radio = h("input", {type: "radio", name: "theme", value: t.name, id: "theme-" + t.name, checked: t.name === (r.theme || B.theme)});
        radio.addEventListener("change", function () {
          document.documentElement.setAttribute("data-theme", t.name);
          post("/api/theme", {theme: t.name}).then(function (res) {
            themeSaid.className = res.ok ? "done" : "errors";
            themeSaid.textContent = res.ok ? "Saved: " + t.label + " is the theme from now on." : errorsText(res.errors);
            if (res.ok && /[?&]theme=/.test(location.search)) history.replaceState(null, "", location.pathname);
          });
        });
        return h("label", {cls: "theme-card", "for": "theme-" + t.name}, h("span", {}, radio, " " + t.label),
          h("span", {cls: "swatch", "aria-hidden": "true"}, t.swatch.map(function (c) { return h("span", {style: "background:" + c}); })));
      });
      var k = r.keys;
      var explain = r.auth ? "The admin token is set, so every call to /v1/… and /bench/verdict needs a key." :
        k.required ? "BENCHWARMERS_REQUIRE_KEYS is set, so every call needs a key, on this machine too." :
        "No key is asked yet: set BENCHWARMERS_REQUIRE_KEYS=1 (or an admin token) to ask for one.";
      var keyRows = k.keys.map(function (row) {
        var revoke = h("button", {type: "button", cls: "btn danger small", text: "Revoke", "aria-label": "Revoke " + row.name});
        revoke.addEventListener("click", function () {
          confirmDialog("Revoke the key " + row.name + "? Callers using it are refused at once.", true).then(function (yes) {
            if (yes) post("/api/gateway-key/remove", {name: row.name}).then(function (res) { if (res.ok) location.reload(); else keySaid.textContent = errorsText(res.errors); });
          });
        });
        return h("tr", {}, td([row.name + " ", h("span", {cls: "mono muted", text: "bwk_…" + (row.hint || "")})]),
          td((row.collections && row.collections.length) ? row.collections.join(", ") : "all"), td(row.rpm || "—", {cls: "num"}),
          td(when(row.created)), td(row.last_used ? when(row.last_used) : "never"), td(revoke));
      });
      var keyName = h("input", {id: "k-name", placeholder: "open-webui", autocomplete: "off"});
      var keyCols = r.collections.map(function (c) { return h("label", {}, h("input", {type: "checkbox", value: c, "data-key-collection": ""}), " bench/" + c); });
      var keyRpm = h("input", {id: "k-rpm", type: "number", min: 1, max: 10000});
      var keySaid = h("div", {cls: "errors", role: "alert"}), keyOut = h("div", {});
      var make = h("button", {type: "button", cls: "btn", id: "k-make", text: "Make a key"});
      make.addEventListener("click", function () {
        var chosen = $$("input[data-key-collection]", sec).filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
        post("/api/gateway-key", {name: keyName.value, collections: chosen, rpm: keyRpm.value}).then(function (res) {
          if (!res.ok) { keySaid.textContent = errorsText(res.errors); return; }
          keySaid.textContent = "";
          var box = h("input", {cls: "keybox", id: "k-value", readOnly: true, value: res.key, "aria-label": "The new key for " + res.name});
          keyOut.textContent = "";
          add(keyOut, h("p", {cls: "done", text: "Copy it now: it is shown this once and kept only as a hash."}), box);
          box.focus(); box.select();
          make.disabled = true;
        });
      });
      var clientSel = h("select", {id: "client", disabled: r.client.pinned}, h("option", {value: "builtin", text: "Built-in: nothing to install", selected: r.client.client === "builtin"}),
        h("option", {value: "llm", text: "The llm CLI: its plugins and its own log" + (r.client.llm ? "" : " (not installed)"), disabled: !r.client.llm, selected: r.client.client === "llm"}));
      var clientSaid = h("p", {role: "status"});
      var clientSave = h("button", {type: "button", cls: "btn", text: "Save client", disabled: r.client.pinned});
      clientSave.addEventListener("click", function () {
        post("/api/client", {client: clientSel.value}).then(function (res) {
          clientSaid.className = res.ok ? "done" : "errors";
          clientSaid.textContent = res.ok ? "Saved. The next model call uses it." : errorsText(res.errors);
        });
      });
      add(sec,
        h("div", {cls: "card"}, h("h2", {text: "Theme"}), h("div", {cls: "themes", role: "radiogroup", "aria-label": "Theme"}, cards), themeSaid),
        h("div", {cls: "card", id: "keys-card"}, h("h2", {text: "Gateway keys"}),
          h("p", {cls: "sub", text: "A key is sent as Authorization: Bearer <key>. It reaches the gateway only (never this dashboard), its name is recorded on every call, and revoking it is immediate."}),
          h("p", {text: explain}),
          table(["Name", "May call", "A minute", "Made", "Last used", ""].map(function (t) {
            return {title: t, sort: t !== "", phone: t === "Name" || t === "May call" || t === ""}; }), keyRows, "No keys yet."),
          h("h3", {text: "Make a key"}),
          h("div", {cls: "field"}, h("label", {"for": "k-name", text: "Name for a new key"}), keyName),
          h("fieldset", {}, h("legend", {text: "May call (none ticked: all)"}), keyCols.length ? keyCols : h("span", {cls: "muted", text: "No collections yet."})),
          h("div", {cls: "field"}, h("label", {"for": "k-rpm", text: "Requests a minute (empty: no cap)"}), keyRpm),
          make, keySaid, keyOut),
        schedulerCard(r.scheduler), ownClientCard(r.own_client),
        h("div", {cls: "card"}, h("h2", {text: "Model client"}), h("div", {cls: "field"}, h("label", {"for": "client", text: "Calls models through"}), clientSel),
          h("p", {cls: "muted", text: "Set by " + ({environment: "BENCH_CLIENT in the environment", settings: "this setting", "default": "the default"}[r.client.by] || r.client.by) + "."}),
          clientSave, clientSaid),
        h("div", {cls: "card"}, h("h2", {text: "Server and access"}), h("p", {cls: "sub", text: "Set by the environment; a restart applies a change. No secret is shown, only whether one is set."}),
          table(["Setting", "Now", "Set by"].map(function (t) { return {title: t, sort: false, phone: t !== "Set by"}; }), r.access.map(function (row) {
            return h("tr", {}, td(row[0]), td(row[1]), td(row[2], {cls: "mono"})); }))));
    });
  };
  /* ST-8: the scheduler's mode and jobs (the scheduler itself reads them every tick once it runs). */
  function schedulerCard(sc) {
    var mode = h("select", {id: "sch-mode"}, Object.keys(sc.modes).map(function (m) { return h("option", {value: m, text: sc.modes[m], selected: m === sc.mode}); }));
    var boxes = {}, nexts = {};
    var rows = sc.jobs.map(function (j) {
      boxes[j.name] = h("input", {type: "checkbox", checked: j.on, "aria-label": "Run " + j.name});
      nexts[j.name] = td("", {cls: "nowrap", "data-next": j.next});
      boxes[j.name].addEventListener("change", truth);
      return h("tr", {}, td(j.name, {title: "runs " + j.runs, cls: "mono"}), td(boxes[j.name]), td(j.last || "—"), nexts[j.name], td(j.what));
    });
    var now = h("p", {id: "sch-now", role: "status"});
    /* issue 31: what the chosen mode does now, and a Next time only for a job that will run (or be logged) then */
    function truth() {
      var m = mode.value;
      now.textContent = {off: "The scheduler is off: no job runs and nothing is logged. Ticked jobs run at their times once the mode is Run.",
        "log-only": "The scheduler only logs: each ticked job's time is written to runs/scheduler.log and nothing is called.",
        run: "The scheduler runs: each ticked job runs at its Next time."}[m] + (sc.mode !== m ? " (Not saved yet.)" : "");
      Object.keys(boxes).forEach(function (k) {
        var cell = nexts[k];
        cell.textContent = !boxes[k].checked ? "not ticked" : m === "off" ? "— (scheduler off)" :
          cell.getAttribute("data-next") + (m === "log-only" ? " (logged only)" : "");
        cell.classList.toggle("muted", m === "off" || !boxes[k].checked);
      });
    }
    mode.addEventListener("change", truth);
    var said = h("p", {role: "status"});
    var save = h("button", {type: "button", cls: "btn", id: "sch-save", text: "Save schedule"});
    save.addEventListener("click", function () {
      var go = mode.value === "run" && sc.mode !== "run" ?
        confirmDialog("Switch the scheduler to Run? Its jobs then call models on their own; turn off any other scheduler first.") : Promise.resolve(true);
      go.then(function (yes) {
        if (!yes) return;
        var jobs = {};
        Object.keys(boxes).forEach(function (k) { jobs[k] = boxes[k].checked; });
        post("/api/scheduler", {mode: mode.value, jobs: jobs}).then(function (res) {
          said.className = res.ok ? "done" : "errors";
          said.textContent = res.ok ? "Saved. The scheduler reads it on its next tick." : errorsText(res.errors);
          if (res.ok) { sc.mode = mode.value; truth(); }
        });
      });
    });
    var card = h("div", {cls: "card", id: "scheduler-card"}, h("h2", {text: "Scheduler"}),
      h("div", {cls: "field"}, h("label", {"for": "sch-mode", text: "Mode"}), mode,
        h("span", {cls: "muted", text: "Off: nothing runs. Log only: each due job is written to runs/scheduler.log, nothing is called. Run: due jobs run."})),
      now, table(["Job", "Ticked", "Counted up to", "Next", "What it does"].map(function (t) {
        return {title: t, sort: false, phone: t !== "What it does" && t !== "Counted up to"}; }), rows), save, said);
    truth();
    return card;
  }
  /* ST-12: providers whose free models are free only in their own app. */
  function ownClientCard(rows) {
    var boxes = rows.map(function (r) { return [r.id, h("input", {type: "checkbox", checked: r.on, "aria-label": r.id + ": free only in its own app"})]; });
    var added = h("input", {id: "own-add", placeholder: "a models.dev provider id", autocomplete: "off"});
    var said = h("p", {role: "status"});
    var save = h("button", {type: "button", cls: "btn", text: "Save providers"});
    save.addEventListener("click", function () {
      var providers = {};
      boxes.forEach(function (b) { providers[b[0]] = b[1].checked; });
      if (added.value.trim()) providers[added.value.trim()] = true;
      post("/api/own-client-free", {providers: providers}).then(function (res) {
        said.className = res.ok ? "done" : "errors";
        said.textContent = res.ok ? "Saved. Discover uses it on its next load." : errorsText(res.errors);
        if (res.ok && added.value.trim()) reloadSoon(700);
      });
    });
    return h("div", {cls: "card", id: "own-client-card"}, h("h2", {text: "Free only in their own app"}),
      h("p", {cls: "sub", text: "Some providers' free models are free only through their own app; ticked ones are not offered as free elsewhere."}),
      table([{title: "Provider", sort: false}, {title: "Free only in its own app", sort: false}], boxes.map(function (b) { return h("tr", {}, td(b[0], {cls: "mono"}), td(b[1])); })),
      h("div", {cls: "field"}, h("label", {"for": "own-add", text: "Add a provider"}), added), save, said);
  }
  loaders.info = function () {
    var sec = $("#tab-info");
    if (sec.childNodes.length) return;
    loadSettings().then(function (r) {
      var i = r.info;
      var rows = [["Version", i.version], ["Date", i.date], ["Commit", i.commit], ["Python", i.python], ["Folder", i.folder], ["Data folder", i.data],
        ["Endpoints", i.endpoints], ["Models on the bench", i.models], ["Scheduler", i.scheduler], ["Model client", i.client], ["Theme", i.theme],
        ["OpenAPI document", i.openapi]];
      add(sec, h("div", {cls: "card"}, h("h2", {text: "Info"}),
        table([{title: "What", sort: false}, {title: "Value", sort: false}], rows.map(function (row) { return h("tr", {}, td(row[0]), td(String(row[1]))); })),
        h("p", {cls: "muted", text: "Every response carries X-Benchwarmers-Version. The licence and credits are in the checkout's README.md."})));
    });
  };

  /* -- Endpoints (EP-1..3, EP-10..14; the sign-in flows of §8.6 are ui/pages/connect.js, through `after`) -- */
  var E = null;
  /* What page files add to the Endpoints page: after.endpoints(E, section) once it is drawn, after.dialog(d, ep)
     once the Add/Change dialog is built (before it opens). */
  var after = {endpoints: [], dialog: []};
  function loadEndpoints() {
    return get("/api/endpoints").then(function (r) { E = r; drawEndpoints(); return r; });
  }
  loaders.endpoints = function () { if (!E) loadEndpoints(); };
  function epSaid(text, ok) {
    var s = $("#e-status");
    s.className = ok ? "done" : "errors";
    s.textContent = text;
  }
  function drawEndpoints() {
    var sec = $("#tab-endpoints");
    sec.textContent = "";
    var addBtn = h("button", {type: "button", cls: "btn", id: "e-add", text: "Add an endpoint", on: {click: function () { openEndpoint(null); }}});
    var find = h("input", {type: "search", id: "e-find", placeholder: "Find a model on any endpoint", "aria-label": "Find a model on any endpoint"});
    var blocks = E.endpoints.map(endpointBlock);
    find.addEventListener("input", function () {
      var q = find.value.toLowerCase();
      $$(".ep-block", sec).forEach(function (b) {
        var hit = 0;
        $$("tbody tr", b).forEach(function (row) { var on = !q || row.textContent.toLowerCase().indexOf(q) >= 0; row.style.display = on ? "" : "none"; if (on) hit++; });
        var list = $("details", b);
        if (list && q && hit) list.open = true;
      });
    });
    add(sec, h("div", {cls: "card"}, h("h2", {text: "Endpoints"}),
      h("p", {cls: "sub", text: "Prompts go straight to an endpoint: a base URL and its key. A key is shown only as set or not set; it is kept in the llm key store, never in the data folder. The lists show the models on the bench" +
        (E.updated ? " and what each endpoint served on " + E.updated : "; what else each endpoint serves is in the onboarding picker") + "."}),
      h("div", {cls: "row"}, addBtn), h("div", {id: "e-status", role: "status"}),
      E.endpoints.length ? h("div", {cls: "toolbar"}, find) : h("p", {cls: "muted", text: "No endpoint yet. Add one: an OpenAI-compatible base URL and its API key."})),
      blocks, h("div", {cls: "card", id: "limits-card"}, h("h2", {text: "Rate limits per connection"}), h("p", {cls: "sub", text: "Loading…"})));
    after.endpoints.forEach(function (f) { f(E, sec); });
    get("/api/connections").then(drawLimits);
  }
  function endpointBlock(ep) {
    var chips = [ep["default"] ? chip("default", "ok") : null,
      ep.key_name ? chip(ep.key_set ? "key set" : "no key", ep.key_set ? "ok" : "warn", ep.key_set ? "kept in the llm key store as " + ep.key_name : "no key named " + ep.key_name + " in the llm key store or the environment") : chip("no key needed", "", "saved without a key (a local runtime)")];
    var actions = [h("button", {type: "button", cls: "btn ghost small", text: "Change key", "aria-label": "Change key for " + ep.name, on: {click: function () { openEndpoint(ep); }}})];
    if (!ep["default"]) {
      actions.push(h("button", {type: "button", cls: "btn ghost small", text: "Make default", "aria-label": "Make " + ep.name + " the default endpoint", on: {click: function () { makeDefault(ep); }}}));
      actions.push(h("button", {type: "button", cls: "btn danger small", text: "Remove", "aria-label": "Remove " + ep.name, on: {click: function () { removeEndpoint(ep); }}}));
    }
    var rows = ep.bench.map(function (m) {
      return h("tr", {}, td(nameCell({alias: m.alias, tag: ""})), td(m.served, {cls: "mono"}), td(m.connection || "—"), td(m.decision ? chip("decision") : statusChip(m.alias)));
    }).concat(ep.served.map(function (m) {
      return h("tr", {}, td("not on the bench", {cls: "muted"}), td(m.served, {cls: "mono"}), td(ep.name), td(m.current ? chip("served") : chip("last seen " + m.day, "warn")));
    }));
    var more = ep.served.filter(function (m) { return m.current; }).length;
    return h("div", {cls: "card ep-block", "data-ep": JSON.stringify({name: ep.name, base: ep.base, "default": ep["default"], kind: ep.kind, hub: ep.hub, key_set: ep.key_set, models: ep.models})},
      h("div", {cls: "row spread"}, h("h2", {text: ep.name}), h("div", {cls: "row"}, chips, chip(ep.kind + (ep.hub ? " · " + ep.hub : ""), "via"))),
      h("p", {cls: "mono muted", text: ep.base}), h("div", {cls: "row"}, actions),
      h("details", {}, h("summary", {text: ep.bench.length + " on the bench" + (more ? " · " + more + " more served" : "")}),
        table(["On the bench as", "Served as", "Connection", "Status"].map(function (t) { return {title: t, phone: t !== "Connection"}; }), rows,
          "Nothing from " + ep.name + " is on the bench yet: Onboard a model (top right) lists what it serves.")));
  }
  function statusChip(alias) {
    var r = B.glance.filter(function (g) { return g.alias === alias; })[0];
    return r ? chip(r.status, r.css || "", r.why || null) : chip("on the bench");
  }
  function makeDefault(ep) {
    confirmDialog("Make " + ep.name + " the default endpoint? Models named bare are then looked for there.").then(function (yes) {
      if (!yes) return;
      post("/api/endpoint/default", {name: ep.name}).then(function (r) {
        if (r.ok) { epSaid(r.note + ". Reloading…", true); reloadSoon(900); } else epSaid(errorsText(r.errors));
      });
    });
  }
  function removeEndpoint(ep) {
    var text = "Remove the endpoint " + ep.name + "?" + (ep.models ? " Its " + ep.models + " model" + (ep.models === 1 ? " is" : "s are") +
      " retired with it (their evidence stays, and each can be restored once an endpoint named " + ep.name + " exists again)." : "") + " Its key stays in the llm key store.";
    confirmDialog(text, true).then(function (yes) {
      if (!yes) return;
      post("/api/endpoint/remove", {name: ep.name, with_models: ep.models > 0}).then(function (r) {
        if (r.ok) { epSaid("Removed " + ep.name + "; " + r.note + ". Reloading…", true); reloadSoon(900); } else epSaid(errorsText(r.errors));
      });
    });
  }
  var KINDS = [["provider", "a provider: Groq, Mistral, NVIDIA"], ["aggregator", "an aggregator: OpenRouter, LLM7, NanoGPT"],
    ["hub", "a hub: Open WebUI, LiteLLM, CLI Proxy API"], ["local", "a local runtime: Ollama, LM Studio, vLLM"]];
  function openEndpoint(ep) {
    var d = $("#endpoint-dialog"), adding = !ep, changed = false, tried = 0;
    d.textContent = "";
    var name = h("input", {id: "ep-name", autocomplete: "off", placeholder: "openrouter", value: ep ? ep.name : "", readOnly: !adding});
    var base = h("input", {id: "ep-base", type: "url", autocomplete: "off", placeholder: "https://openrouter.ai/api/v1", value: ep ? ep.base : ""});
    var kind = h("select", {id: "ep-kind"}, h("option", {value: "", text: "tell from the URL"}), KINDS.map(function (k) { return h("option", {value: k[0], text: k[1]}); }));
    var hub = h("select", {id: "ep-hub"}, [["openwebui", "Open WebUI"], ["litellm", "LiteLLM"], ["cliproxy", "CLI Proxy API"]].map(function (o) { return h("option", {value: o[0], text: o[1]}); }));
    var api = h("select", {id: "ep-api"}, [["chat", "OpenAI chat completions"], ["anthropic", "Anthropic messages"], ["gemini", "Gemini"]].map(function (o) { return h("option", {value: o[0], text: o[1]}); }));
    var key = h("input", {id: "ep-key", type: "password", autocomplete: "off", placeholder: adding ? "blank for a runtime that needs none" : "leave blank to keep the current one"});
    var admin = h("input", {id: "ep-admin", type: "password", autocomplete: "off", placeholder: "optional"});
    var hubField = h("div", {cls: "field"}, h("label", {"for": "ep-hub", text: "Which hub"}), hub);
    var adminField = h("div", {cls: "field"}, h("label", {"for": "ep-admin", text: "Admin key (the hub's management key)"}), admin);
    var said = h("div", {cls: "errors", role: "alert"}), done = h("div", {cls: "done", role: "status", id: "ep-done"});
    var test = h("button", {type: "button", cls: "btn ghost", id: "ep-test", text: "Test"});
    var save = h("button", {type: "button", cls: "btn", id: "ep-save", text: "Save", disabled: true, title: "Test first: Save is offered once the endpoint answers"});
    var form = h("div", {id: "ep-form"});
    function isHub() { return adding ? kind.value === "hub" : ep.kind === "hub"; }
    function layout() { hubField.hidden = !adding || kind.value !== "hub"; adminField.hidden = !isHub(); }
    function body(testing) {
      var b = {name: name.value, base: base.value, key: key.value, admin: isHub() ? admin.value : "", new: adding, test: testing};
      if (adding) { b.kind = kind.value; b.hub = kind.value === "hub" ? hub.value : ""; b.api = api.value; }
      return b;
    }
    [name, base, kind, hub, api, key, admin].forEach(function (el) {
      el.addEventListener("input", function () { tried++; save.disabled = true; done.textContent = ""; layout(); });
    });
    test.addEventListener("click", function () {
      var mine = ++tried;
      said.textContent = ""; done.textContent = "Asking " + (base.value || "it") + " for its models…";
      post("/api/endpoint", body(true)).then(function (r) {
        if (mine !== tried || !d.open) return;  // a stale reply: the form changed or the dialog closed meanwhile
        if (r.ok) { done.textContent = "It answers: " + thousands(r.served) + " models listed. " + r.note; save.disabled = false; save.focus(); }
        else { done.textContent = ""; said.textContent = errorsText(r.errors); }
      });
    });
    save.addEventListener("click", function () {
      save.disabled = true;
      post("/api/endpoint", body(false)).then(function (r) {
        if (!r.ok) { said.textContent = errorsText(r.errors); return; }
        changed = true; said.textContent = ""; form.hidden = true; test.hidden = true; save.hidden = true;
        var who = name.value.trim().toLowerCase();
        done.textContent = "Saved. " + who + " lists " + thousands(r.served) + " models; they appear in the onboarding picker. " + r.note;
        if (adding) add(done, h("div", {cls: "row"}, h("button", {type: "button", cls: "btn", id: "ep-onboard", text: "Onboard a model from it", on: {click: function () {
          try { sessionStorage.setItem("bench.pick", who); } catch (e) { return; }
          d.close(); }}})));  /* the close reloads the page; the picker opens on the page that knows the endpoint */
      });
    });
    d.addEventListener("close", function once() { d.removeEventListener("close", once); if (changed) location.reload(); });
    add(form,
      h("div", {cls: "field"}, h("label", {"for": "ep-name", text: "Name"}), name, adding ? h("span", {cls: "muted", text: "2-32 lower-case letters, digits or '-'; the key is kept under this name in the llm key store."}) : null),
      h("div", {cls: "field"}, h("label", {"for": "ep-base", text: "Base URL"}), base, h("span", {cls: "muted", text: "The address that answers /models, e.g. https://api.groq.com/openai/v1 or http://localhost:11434/v1"})),
      adding ? h("div", {cls: "field"}, h("label", {"for": "ep-kind", text: "Kind"}), kind) : null, hubField,
      adding ? h("div", {cls: "field"}, h("label", {"for": "ep-api", text: "API"}), api) : null,
      h("div", {cls: "field"}, h("label", {"for": "ep-key", text: "API key"}), key), adminField);
    add(d, h("h2", {id: "ed-title", text: adding ? "Add an endpoint" : "Change the key for " + ep.name}), form, said, done,
      h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}}), test, save));
    layout();
    after.dialog.forEach(function (f) { f(d, ep); });
    d.showModal();
    (adding ? name : key).focus();
  }
  function drawLimits(r) {
    var card = $("#limits-card");
    if (!card) return;
    card.textContent = "";
    var said = h("p", {role: "status", id: "limits-said"});
    var rows = r.connections.map(function (c) {
      var boxes = r.keys.map(function (k) {
        return h("input", {type: "number", min: 1, step: 1, cls: "limit", value: c.limits[k] || "", title: r.labels[k], "aria-label": c.name + ": " + r.labels[k]});
      });
      var save = h("button", {type: "button", cls: "btn small", text: "Save", "aria-label": "Save limits for " + c.name, on: {click: function () {
        var limits = {};
        boxes.forEach(function (b, i) { if (b.value !== "") limits[r.keys[i]] = Number(b.value); });
        post("/api/connection-limits", {connection: c.name, limits: limits}).then(function (res) {
          said.className = res.ok ? "done" : "errors";
          said.textContent = res.ok ? "Saved limits for " + c.name + "." : errorsText(res.errors);
        });
      }}});
      return h("tr", {}, [td(c.name, {cls: "mono"}), td(c.models.join(", "))].concat(boxes.map(function (b) { return td(b); }), [td(save)]));
    });
    add(card, h("h2", {text: "Rate limits per connection"}),
      h("p", {cls: "sub", text: "Models reached through one connection share its limits. Enter what your plan allows (blank: unknown); the bench paces its calls by the tightest it knows."}),
      table([{title: "Connection"}, {title: "Models", sort: false}].concat(r.keys.map(function (k) { return {title: k, sort: false, num: true}; }), [{title: "", sort: false}]), rows,
        "No models on the bench yet: connections appear once a model is onboarded."), said);
  }

  /* -- Onboarding: the picker (OB-1..5), the queue chip (OB-21) and the queue view (OB-22) -------------- */
  var MODES = [["full", "full: probe, then the suite now"], ["quick", "quick: probe now; the suite through the scheduled passes"],
    ["quick-adhoc", "quick ad hoc: probe only; never called by the bench on its own (metered, capped or trial keys)"]];
  var ticks = {}, pickerFolded = (function () { try { return JSON.parse(store("bench.picker.folded") || "[]"); } catch (e) { return []; } })();
  function openPicker(search) {
    var d = $("#onboard-dialog");
    d.textContent = "";
    ticks = {};
    var find = h("input", {type: "search", id: "ob-find", placeholder: "Find by name, group or endpoint", "aria-label": "Find a model to onboard", readOnly: true, value: search || ""});
    var list = h("div", {id: "ob-list", cls: "picker", "aria-live": "polite"}, h("p", {cls: "muted", text: "Asking the endpoints what they serve…"}));
    var mode = h("select", {id: "ob-mode"}, MODES.map(function (m) { return h("option", {value: m[0], text: m[1]}); }));
    var said = h("div", {cls: "errors", role: "alert"});
    var dismiss = h("button", {type: "button", cls: "btn ghost", id: "ob-dismiss", text: "Dismiss model", disabled: true});
    var go = h("button", {type: "button", cls: "btn", id: "ob-go", text: "Onboard model", disabled: true});
    var found = {candidates: [], dismissed: []};
    function picked() { return found.candidates.filter(function (c) { return ticks[c.key]; }); }
    function count() {
      var n = picked().length;
      go.disabled = dismiss.disabled = !n;
      go.textContent = n > 1 ? "Onboard " + n + " models" : "Onboard model";
      dismiss.textContent = n > 1 ? "Dismiss " + n + " models" : "Dismiss model";
    }
    function row(c, off) {
      var box = h("input", {type: "checkbox", checked: !!ticks[c.key], disabled: !!off, "aria-label": c.served + " from " + c.endpoint});
      box.addEventListener("change", function () { ticks[c.key] = box.checked; count(); });
      var inputs = ["image", "pdf", "file", "audio", "video"].filter(function (m) { return c.inputs.indexOf(m) >= 0; })
        .concat(c.inputs.filter(function (m) { return m !== "text" && ["image", "pdf", "file", "audio", "video"].indexOf(m) < 0; }));
      return h("label", {cls: "pick", "data-key": c.key}, box, h("span", {cls: "mono", text: c.served}), inputs.map(function (m) { return chip(m); }),
        c.outputs.indexOf("image") >= 0 ? chip("makes images", "warn", "an image generator is never a seat") : null,
        c.new ? h("span", {cls: "muted right", text: c.group}) : null,
        off ? h("button", {type: "button", cls: "btn ghost small", text: "Bring back", on: {click: function (e) {
          e.preventDefault();
          post("/api/dismiss", {served: c.key, undo: true}).then(function (r) {
            if (!r.ok) { said.textContent = errorsText(r.errors); return; }
            found.dismissed = found.dismissed.filter(function (x) { return x.key !== c.key; });
            found.candidates.push(c); found.candidates.sort(function (a, b) { return a.served < b.served ? -1 : 1; }); draw();
          });
        }}}) : null);
    }
    function draw() {
      list.textContent = "";
      var q = find.value.toLowerCase();
      var match = function (c) { return !q || (c.served + " " + c.group + " " + c.endpoint).toLowerCase().indexOf(q) >= 0; };
      var shown = found.candidates.filter(match), groups = {};
      shown.forEach(function (c) { var g = c.new ? "New since the daily check" : c.group; (groups[g] = groups[g] || []).push(c); });
      var names = Object.keys(groups).sort(function (a, b) { return a === "New since the daily check" ? -1 : b === "New since the daily check" ? 1 : a < b ? -1 : 1; });
      names.forEach(function (g) {
        var det = h("details", {open: !!q || pickerFolded.indexOf(g) < 0}, h("summary", {text: g + " · " + groups[g].length}), groups[g].map(function (c) { return row(c); }));
        det.addEventListener("toggle", function () {
          if (q) return;
          pickerFolded = pickerFolded.filter(function (x) { return x !== g; }).concat(det.open ? [] : [g]);
          store("bench.picker.folded", JSON.stringify(pickerFolded));
        });
        add(list, det);
      });
      if (!names.length) add(list, h("p", {cls: "muted", text: found.candidates.length ? "Nothing matches." : "Everything the endpoints serve is already on the bench, retired or dismissed."}));
      var off = found.dismissed.filter(match);
      if (off.length) add(list, h("details", {}, h("summary", {text: off.length + " dismissed"}), off.map(function (c) { return row(c, true); })));
      count();
    }
    find.addEventListener("input", draw);
    dismiss.addEventListener("click", function () {
      var keys = picked().map(function (c) { return c.key; });
      post("/api/dismiss", {served: keys}).then(function (r) {
        if (!r.ok) { said.textContent = errorsText(r.errors); return; }
        found.dismissed = found.dismissed.concat(picked());
        found.candidates = found.candidates.filter(function (c) { return keys.indexOf(c.key) < 0; });
        keys.forEach(function (k) { delete ticks[k]; });
        draw();
      });
    });
    go.addEventListener("click", function () {
      go.disabled = true;
      post("/api/onboard-queue", {items: picked().map(function (c) { return {served: c.served, endpoint: c.endpoint, mode: mode.value}; })}).then(function (r) {
        if (!r.ok) { said.textContent = errorsText(r.errors); count(); return; }
        d.close(); drawQueue(r); pollQueue();
      });
    });
    add(d, h("h2", {id: "od-title", text: "Onboard a model"}),
      h("p", {cls: "sub", text: "What your endpoints serve and the bench does not have yet. Onboarding registers a model, probes it with four calls and keeps the evidence; whether work goes to it stays the router's call."}),
      find, list, said,
      h("div", {cls: "field"}, h("label", {"for": "ob-mode", text: "Onboard as"}), mode),
      h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}}), dismiss, go));
    d.showModal();
    get("/api/candidates").then(function (r) {
      find.readOnly = false;
      if (!r.ok) { list.textContent = ""; said.textContent = errorsText(r.errors); return; }
      said.textContent = r.errors.length ? errorsText(r.errors) : "";
      found = {candidates: r.candidates, dismissed: r.dismissed};
      draw();
      find.focus();
    });
  }
  var Q = null, queueTimer = null;
  function settled(items) { return items.filter(function (i) { return i.state !== "queued" && i.state !== "running"; }).length; }
  function drawQueue(q) {
    Q = q;
    var box = $("#oq");
    box.textContent = "";
    box.hidden = !q.items.length;
    if (!q.items.length) return;
    var n = q.items.length, fin = settled(q.items), run = q.items.filter(function (i) { return i.state === "running"; })[0];
    var count = function (s) { return q.items.filter(function (i) { return i.state === s; }).length; };
    var text;
    var next = run || q.items.filter(function (i) { return i.state === "queued"; })[0];  /* a batch just accepted has none running yet */
    if (q.running && next) text = q.stopping ? "Stopping after " + next.served : "Onboarding " + (fin + 1) + " of " + n + (next.step ? ", step " + next.step + "/5" : "") + ": " + next.served;
    else text = "Onboarded " + count("done") + " of " + n + (count("failed") ? " · " + count("failed") + " failed" : "") +
      (count("no answer") ? " · " + count("no answer") + " did not answer" : "") + (count("skipped") ? " · " + count("skipped") + " skipped" : "");
    var step = run && run.step ? (run.step - 0.5) / 5 : 0;
    var fill = Math.round(100 * (fin + step) / n);
    var bad = !q.running && (count("failed") || count("no answer"));
    box.className = "oq" + (!q.running && count("done") === n ? " done" : "") + (bad ? " fail" : "");
    add(box, h("span", {cls: "oq-chip", id: "oq-text", title: text, role: "status"}, h("span", {cls: "oq-fill", style: "width:" + fill + "%", "aria-hidden": "true"}), h("span", {cls: "oq-label", text: text})),
      h("button", {type: "button", cls: "linkish", id: "oq-details", text: "Details", on: {click: openQueue}}),
      q.running && !q.stopping ? h("button", {type: "button", cls: "linkish", id: "oq-stop", text: "Stop", on: {click: function () { post("/api/onboard-queue/stop", {}).then(function (r) { if (r.ok) { drawQueue(r); refreshQueueView(); } }); }}}) : null,
      !q.running ? h("button", {type: "button", cls: "linkish", id: "oq-clear", text: "Clear", on: {click: function () {
        post("/api/onboard-queue/clear", {}).then(function (r) { if (r.ok) { drawQueue(r); var d = $("#onboard-dialog"); if (d.open && d.getAttribute("data-view") === "queue") d.close(); } }); }}}) : null);
  }
  function pollQueue() {
    if (queueTimer) return;
    queueTimer = setInterval(function () {
      get("/api/onboard-queue").then(function (q) {
        var was = Q && Q.running;
        drawQueue(q); refreshQueueView();
        if (!q.running) { clearInterval(queueTimer); queueTimer = null; if (was) $("#fresh").hidden = false; }
      }).catch(function () { return null; });
    }, 3000);
  }
  var STATE_CSS = {running: "new", done: "ok", "no answer": "warn", failed: "err", queued: "", skipped: "muted"};
  function openQueue() {
    var d = $("#onboard-dialog");
    d.textContent = "";
    d.setAttribute("data-view", "queue");
    add(d, h("h2", {id: "od-title", text: "Onboarding queue"}), h("p", {cls: "sub", id: "oq-summary"}), h("div", {id: "oq-items"}),
      h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}})));
    d.addEventListener("close", function once() { d.removeEventListener("close", once); d.removeAttribute("data-view"); });
    refreshQueueView();
    d.showModal();
  }
  function followLog(pre, log, det) {
    if (!log) return;
    get("/api/onboard?log=" + encodeURIComponent(log)).then(function (r) {
      if (!r.ok) return;
      var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = r.tail || "(nothing written yet)";
      if (atEnd || !det.getAttribute("data-seen")) pre.scrollTop = pre.scrollHeight;
      det.setAttribute("data-seen", "1");
    });
  }
  function refreshQueueView() {
    var d = $("#onboard-dialog");
    if (!d.open || d.getAttribute("data-view") !== "queue" || !Q) return;
    $("#oq-summary").textContent = !Q.items.length ? "Nothing queued." : Q.running ?
      "One at a time, in this order. Closing this does not stop it; Stop lets the model running now finish and skips the rest." : "Finished. Each log is in runs/.";
    var box = $("#oq-items");
    Q.items.forEach(function (item, i) {
      var el = $("[data-item='" + i + "']", box);
      if (!el) {
        var pre = h("pre", {cls: "answer log", tabIndex: 0});
        var det = h("details", {open: item.state === "running"}, h("summary", {text: "Log"}), pre);
        det.addEventListener("toggle", function () { if (det.open) followLog(pre, Q.items[i].log, det); });
        el = h("div", {cls: "oq-item", "data-item": String(i)}, h("div", {cls: "row"}, h("strong", {cls: "mono", text: item.served}), h("span", {cls: "oq-state"}), h("span", {cls: "oq-as muted"})),
          h("p", {cls: "oq-note muted"}), det);
        add(box, el);
      }
      var st = $(".oq-state", el);
      st.textContent = "";
      add(st, chip(item.state + (item.state === "running" && item.step ? " · step " + item.step + "/5" : ""), STATE_CSS[item.state]));
      $(".oq-as", el).textContent = item.alias && item.state !== "failed" ? "as " + item.alias : "";
      $(".oq-note", el).textContent = item.note || "";
      var det2 = $("details", el);
      if (det2.open) followLog($("pre", det2), item.log, det2);
    });
  }
  /* DS-5: while a hub adds a model, before anything is queued, the chip names it at a 3 % fill. */
  function queueHint(served, label) {
    var box = $("#oq");
    box.textContent = "";
    box.hidden = false;
    box.className = "oq";
    var text = "Adding " + served + " to " + label;
    add(box, h("span", {cls: "oq-chip", id: "oq-text", title: text, role: "status"}, h("span", {cls: "oq-fill", style: "width:3%", "aria-hidden": "true"}), h("span", {cls: "oq-label", text: text})));
  }
  $("#onboard-open").addEventListener("click", function () { openPicker(""); });
  get("/api/onboard-queue").then(function (q) { drawQueue(q); if (q.running) pollQueue(); }).catch(function () { return null; });

  /* -- New results (UI-7) and sign out --------------------------------------------------------------------- */
  setInterval(function () {
    if (document.hidden || !$("#fresh").hidden || (Q && Q.running)) return;
    get("/api/stamp").then(function (r) { if (r.stamp > B.stamp + 0.5) $("#fresh").hidden = false; }).catch(function () { return null; });
  }, 15000);
  $("#fresh").addEventListener("click", function () { location.reload(); });
  if (B.auth) {
    $("#logout").hidden = false;
    $("#logout").addEventListener("click", function () { post("/logout", {}).then(function () { location.href = "/login"; }); });
  }

  /* SHELL-3: the first-run banner; its endpoint step opens the Endpoints page and its Add dialog by itself. */
  function drawFirstRun() {
    var step = B.first_run, box = $("#first-run");
    if (!step) return;
    box.hidden = false;
    box.setAttribute("data-step", step);
    var texts = {
      endpoint: ["Add your first endpoint", "Prompts go straight to an endpoint: the base URL of a provider (OpenAI, OpenRouter, Groq…) or of a local runtime (Ollama, LM Studio), and its API key. The key goes to the llm key store, never into the data folder.", "Add an endpoint"],
      onboard: ["Onboard your first model", "Pick models your endpoints serve: each is registered, probed with 4 calls and, onboarded in full, reviewed by the suite. The evidence decides where work goes.", "Onboard a model"],
      collection: ["Make your first collection", "Callers ask a collection as bench/<name> at " + B.gateway + "; its members answer together.", "New collection"]};
    var go = {
      endpoint: function () { show("endpoints"); (E ? Promise.resolve() : loadEndpoints()).then(function () { openEndpoint(null); }); },
      onboard: function () { openPicker(""); },
      collection: function () { show("collections"); (C ? Promise.resolve() : loadCollections()).then(function () { openCollection(null); }); }};
    add(box, h("h2", {id: "first-title", text: texts[step][0]}), h("p", {text: texts[step][1]}),
      h("button", {type: "button", cls: "btn", id: "first-go", text: texts[step][2], on: {click: go[step]}}));
    return step === "endpoint" ? go.endpoint : null;
  }

  /* What a page file under ui/pages/ may use: it registers its page as Bench.loaders.<tab> (called each time
     the tab is shown) and draws with these. The page scripts run after this one and before the start below. */
  window.Bench = {B: B, $: $, $$: $$, h: h, add: add, store: store, when: when, thousands: thousands,
    errorsText: errorsText, post: post, get: get, reloadSoon: reloadSoon, confirmDialog: confirmDialog,
    table: table, td: td, chip: chip, filters: filters, retiredToggle: retiredToggle, nameCell: nameCell,
    distinct: distinct, openModel: openModel, loaders: loaders, show: show, after: after, openEndpoint: openEndpoint,
    queue: {draw: drawQueue, poll: pollQueue, open: openQueue, hint: queueHint}};

  document.addEventListener("DOMContentLoaded", function () {
    var firstStep = drawFirstRun();
    drawActions();
    drawGlance();
    drawModels();
    drawCollections();
    var landed = null;  /* REV-1: verdicts owed open the Review page; a reload in the same tab keeps its page */
    try { landed = sessionStorage.getItem("bench.landed"); sessionStorage.setItem("bench.landed", "1"); } catch (e) { landed = null; }
    show(B.owed && !landed ? "review" : store("bench.tab") || "glance");
    var picking = null;
    try { picking = sessionStorage.getItem("bench.pick"); sessionStorage.removeItem("bench.pick"); } catch (e) { picking = null; }
    if (picking !== null) { show("endpoints"); openPicker(picking); }
    else if (firstStep) firstStep();  /* an empty bench offers nothing else (SHELL-3) */
  });
})();

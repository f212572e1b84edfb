/* Connect on the Endpoints page (dashboard.md CN-1..9, EP-2): the sign-in choices in the Add dialog, the
   signed-in chips and "Sign in again" on a row, and the "Use your own app" panel. The server does every flow
   (GET /api/connect, POST /api/connect/start, /api/connect/poll, /api/connect/app); this page opens the
   provider's page, shows a device code, and polls until the sign-in is saved or fails. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$, add = Bench.add, chip = Bench.chip;
  var POLL_MS = 2000, POLLS = 450;
  var here = ["localhost", "127.0.0.1", "[::1]", "::1"].indexOf(location.hostname) >= 0;
  var P = null;
  function providers() {
    return P ? Promise.resolve(P) : Bench.get("/api/connect").then(function (r) { P = r; return r; });
  }
  function byId(id) { return ((P && P.providers) || []).filter(function (p) { return p.id === id; })[0]; }
  function unusable(p) {
    if (p.missing) return p.missing;
    if (!here && !p.code) return p.label + " signs in only through a page on the machine the dashboard runs on; choose API key";
    return "";
  }

  /* -- the rows: chips and Sign in again (EP-2, CN-7) ---------------------------------------------------- */
  Bench.after.endpoints.push(function (E, sec) {
    E.endpoints.forEach(function (ep) {
      var c = ep.connect;
      if (!c) return;
      var block = Array.prototype.filter.call(sec.querySelectorAll(".ep-block"), function (b) {
        return JSON.parse(b.getAttribute("data-ep")).name === ep.name; })[0];
      if (!block) return;
      var until = c.expires && !c.refreshes ? " until " + c.expires.slice(0, 10) : "";
      add(block.children[0].children[1], c.expired ? chip("sign in again", "warn", "the sign-in to " + c.label + " ran out") :
        chip("signed in" + until, "ok", "signed in to " + c.label + " on " + String(c.at || "").slice(0, 10)));
      if (c.flow !== "local") {
        add(block.children[2], h("button", {type: "button", cls: "btn ghost small", text: "Sign in again",
          "aria-label": "Sign in to " + c.label + " again for " + ep.name, on: {click: function () { again(ep); }}}));
      }
    });
    providers().then(function (r) { drawApps(r, sec); });
  });

  function again(ep) {
    var d = $("#endpoint-dialog");
    var tab = opensTab(ep.connect.provider) ? window.open("", "_blank") : null;  /* in the click: popup blockers */
    d.textContent = "";
    var panel = h("div", {id: "cn-panel"});
    add(d, h("h2", {id: "ed-title", text: "Sign in to " + ep.connect.label + " again"}), panel,
      h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}})));
    d.showModal();
    providers().then(function () {
      var p = byId(ep.connect.provider);
      if (!p) { if (tab) tab.close(); return said(panel, ["no provider '" + ep.connect.provider + "'"]); }
      start(d, panel, p, ep.name, tab);
    });
  }

  /* -- the Add dialog: API key or a provider (EP-10, CN-6) ----------------------------------------------- */
  Bench.after.dialog.push(function (d, ep) {
    if (ep) return;  /* Change key keeps its form */
    var choices = h("div", {cls: "row", id: "cn-choices", role: "group", "aria-label": "How to add it"});
    var panel = h("div", {id: "cn-panel", hidden: true});
    var keyParts = ["#ep-form", "#ep-test", "#ep-save"].map(function (s) { return $(s, d); });
    function pick(button, p) {
      Array.prototype.forEach.call(choices.children, function (b) { b.setAttribute("aria-pressed", b === button ? "true" : "false"); });
      keyParts.forEach(function (el) { if (el) el.hidden = !!p; });
      panel.hidden = !p;
      if (p) choose(d, panel, p);
    }
    var keyButton = h("button", {type: "button", cls: "btn ghost small", text: "API key", "aria-pressed": "true"});
    keyButton.addEventListener("click", function () { pick(keyButton, null); });
    add(choices, keyButton);
    d.insertBefore(choices, $("#ed-title", d).nextSibling);
    d.insertBefore(panel, choices.nextSibling);
    providers().then(function (r) {
      r.providers.forEach(function (p) {
        var why = unusable(p);
        var b = h("button", {type: "button", cls: "btn ghost small", text: p.label, "data-provider": p.id,
          disabled: !!why, title: why || (p.flow === "local" ? "add " + p.label + " on this machine" : "sign in to " + p.label)});
        b.addEventListener("click", function () { pick(b, p); });
        add(choices, b);
      });
    });
  });

  function choose(d, panel, p) {
    panel.textContent = "";
    var name = h("input", {id: "cn-name", autocomplete: "off", value: p.suggest});
    var go = h("button", {type: "button", cls: "btn", id: "cn-go", text: (p.flow === "local" ? "Add " : "Sign in to ") + p.label});
    go.addEventListener("click", function () {
      go.disabled = true;
      var tab = opensTab(p.id) ? window.open("", "_blank") : null;  /* opened in the click itself (popup blockers) */
      start(d, panel, p, name.value, tab, function () { go.disabled = false; });
    });
    add(panel, h("div", {cls: "field"}, h("label", {"for": "cn-name", text: "Name for this endpoint"}), name,
      h("span", {cls: "muted", text: "2-32 lower-case letters, digits or '-'; the token is kept under this name in the llm key store."})),
      h("div", {cls: "row"}, go), h("div", {id: "cn-said", role: "status"}));
    name.focus();
  }

  /* a key or OAuth sign-in on this machine opens the provider's page; a device code or a remote page does not */
  function opensTab(id) {
    var p = byId(id);
    return !!p && here && (p.flow === "key" || p.flow === "oauth");
  }

  function status(panel) {
    var s = $("#cn-said", panel);
    if (!s) { s = h("div", {id: "cn-said", role: "status"}); add(panel, s); }
    return s;
  }
  function said(panel, errors) { var s = status(panel); s.className = "errors"; s.textContent = Bench.errorsText(errors); }
  function told(panel, text) { var s = status(panel); s.className = "done"; s.textContent = text; return s; }

  function start(d, panel, p, name, tab, retry) {
    told(panel, p.flow === "local" ? "Asking " + p.label + " for its models…" : "Starting the sign-in to " + p.label + "…");
    var body = {provider: p.id, endpoint: name};
    if (!here && p.flow !== "local") body.code = true;  /* a page on another machine cannot receive the redirect */
    Bench.post("/api/connect/start", body).then(function (r) {
      if (!r.ok) { if (tab) tab.close(); if (retry) retry(); return said(panel, r.errors); }
      if (r.state) return finished(d, panel, p, r);  /* a local provider is saved at once */
      if (r.url) {
        if (tab) tab.location = r.url; else window.open(r.url, "_blank");
        told(panel, "Finish signing in on " + p.label + "'s page in the new tab; this dialog follows it.");
      } else {
        told(panel, "Open " + r.verify + " and enter the code " + r.code);
        add(status(panel), h("div", {}, h("a", {href: r.verify, target: "_blank", rel: "noopener", text: r.verify}),
          " · ", h("code", {id: "cn-code", text: r.code})));
      }
      poll(d, panel, p, r.id, 0);
    });
  }

  function poll(d, panel, p, id, count) {
    if (!d.open) return;
    if (count >= POLLS) return said(panel, ["No sign-in after fifteen minutes; start again."]);
    setTimeout(function () {
      if (!d.open) return;
      Bench.post("/api/connect/poll", {id: id}).then(function (r) {
        if (r.state === "pending") return poll(d, panel, p, id, count + 1);
        finished(d, panel, p, r);
      });
    }, POLL_MS);
  }

  function finished(d, panel, p, r) {
    if (!r.ok) return said(panel, r.errors);
    var s = told(panel, p.label + " is connected as " + r.endpoint + ": it lists " + Bench.thousands(r.served) + " models. " + (r.note || ""));
    add(s, h("div", {cls: "row"}, h("button", {type: "button", cls: "btn", id: "cn-onboard", text: "Onboard a model from it", on: {click: function () {
      try { sessionStorage.setItem("bench.pick", r.endpoint); } catch (e) { return; }
      d.close(); }}})));
    d.addEventListener("close", function () { location.reload(); }, {once: true});
  }

  /* -- Use your own app (CN-9) ----------------------------------------------------------------------------- */
  function drawApps(r, sec) {
    var own = r.providers.filter(function (p) { return p.register; });
    var limits = $("#limits-card", sec);
    if (!own.length || !limits || $("#apps-card", sec)) return;
    var msg = h("p", {role: "status", id: "apps-said"});
    var rows = own.map(function (p) {
      var box = h("input", {cls: "mono", value: p.own_id || "", "aria-label": p.label + " client id",
        placeholder: p.shipped ? "(leave blank)" : "client id, needed to sign in"});
      var save = h("button", {type: "button", cls: "btn small", text: "Save", "aria-label": "Save the client id for " + p.label, on: {click: function () {
        Bench.post("/api/connect/app", {provider: p.id, client_id: box.value}).then(function (res) {
          msg.className = res.ok ? "done" : "errors";
          msg.textContent = !res.ok ? Bench.errorsText(res.errors) : box.value.trim() ? p.label + " signs in with your app now." :
            p.shipped ? p.label + " signs in with the shipped app again." : p.label + " has no app until one is added.";
          P = null;
        });
      }}});
      return h("tr", {}, Bench.td(p.label), Bench.td("Register " + p.register), Bench.td(box), Bench.td(save));
    });
    sec.insertBefore(h("div", {cls: "card", id: "apps-card"}, h("h2", {text: "Use your own app"}),
      h("p", {cls: "sub", text: "Some providers sign in only through an app you register with them. Register one, then enter its client id here (a public id, never a secret)."}),
      Bench.table([{title: "Provider"}, {title: "Where", sort: false}, {title: "Client id", sort: false}, {title: "", sort: false}], rows), msg), limits);
  }
})();

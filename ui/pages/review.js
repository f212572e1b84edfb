/* Review (dashboard.md §8.13, REV-1..6; GET /api/review, GET /api/review-panel): one panel at a time, its prompt
   and every seat's answer side by side, judged from the keyboard. Answers and prompts are markdown: marked
   (ui/vendor) turns them into HTML and DOMPurify (ui/vendor) keeps only inert HTML before it reaches the page,
   the one place this dashboard sets HTML rather than text. Keys are listed by `?` and in DASHBOARD.md. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$, $$ = Bench.$$, add = Bench.add;
  var KEYS = [["1 – 9", "focus seat N"], ["u", "useful: saved at once, then the next unjudged seat"],
    ["n", "not useful: saved at once, then the next unjudged seat"], ["r", "a claim the focused answer got right (Enter saves)"],
    ["f", "a false claim the focused answer made (Enter saves)"], ["j / k", "next / previous panel"], ["s", "skip this panel"],
    ["b", "blind mode on / off"], ["Esc", "leave an input, close this list"], ["?", "this list"]];
  var FOLD_LINES = 20;
  var filters = {collection: "", shape: "", model: "", since: "", until: ""};
  var order = Bench.store("bench.review.order") === "teaches" ? "teaches" : "oldest";
  var blind = Bench.store("bench.review.blind") === "1";
  var Q = null;           /* the queue as last read */
  var P = null;           /* the panel shown */
  var focus = 0;          /* the focused seat, by its place on screen */
  var trail = [], at = -1; /* the panels opened, in order, and where in them we are (j / k) */
  var skipped = {};
  var drawn = false;

  /* -- rendering markdown, inert ------------------------------------------------------------------------- */
  var purify = null;
  function sanitizer() {  /* the hook is installed on first use, so a missing vendored file breaks this page only */
    if (purify) return purify;
    purify = window.DOMPurify;
    purify.addHook("afterSanitizeAttributes", inert);
    return purify;
  }
  function inert(node) {
    if (node.tagName === "A") { node.setAttribute("target", "_blank"); node.setAttribute("rel", "noopener noreferrer"); }
    /* an image is shown only from the page itself (a data URL): a remote one would call out of this machine */
    if (node.tagName === "IMG" && !/^data:image\//i.test(node.getAttribute("src") || "")) {
      node.setAttribute("data-src", node.getAttribute("src") || "");
      node.removeAttribute("src");
    }
  }
  /* a single newline is a line break, as in a chat: prompts are typed, not wrapped */
  function markdown(text) {
    var box = h("div", {cls: "md"});
    var html = window.marked.parse(String(text || ""), {gfm: true, breaks: true, async: false});
    box.innerHTML = sanitizer().sanitize(html, {FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"],
      FORBID_ATTR: ["style"]});
    $$("img", box).forEach(function (img) {
      img.classList.add("thumb");
      if (!img.getAttribute("src")) img.replaceWith(thumb(img.getAttribute("alt") || img.getAttribute("data-src") || "image"));
    });
    /* a logged image is a placeholder, "[image: data URL, 34 KB]": shown as a thumbnail-sized tile */
    walkText(box, /\[image: [^\]]*\]/g, function (found) { return thumb(found.slice(8, -1)); });
    return box;
  }
  function thumb(label) {
    return h("span", {cls: "thumb tile", role: "img", "aria-label": "image: " + label, title: label}, h("strong", {text: "image"}), " " + label);
  }
  function walkText(root, pattern, make) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), texts = [];
    while (walker.nextNode()) if (pattern.test(walker.currentNode.nodeValue)) texts.push(walker.currentNode);
    texts.forEach(function (node) {
      var parts = [], last = 0, text = node.nodeValue;
      text.replace(pattern, function (found, offset) {
        parts.push(document.createTextNode(text.slice(last, offset)), make(found));
        last = offset + found.length;
      });
      parts.push(document.createTextNode(text.slice(last)));
      node.replaceWith.apply(node, parts);
    });
  }

  /* -- the queue and the badges ------------------------------------------------------------------------------ */
  function query() {
    var q = Object.keys(filters).filter(function (k) { return filters[k]; })
      .map(function (k) { return k + "=" + encodeURIComponent(filters[k]); });
    return "/api/review?" + q.concat(["order=" + order]).join("&");
  }
  function readQueue() {
    return Bench.get(query()).then(function (r) {
      if (r.ok) { Q = r; badges(r.owed); drawQueueLine(); }
      else say(Bench.errorsText(r.errors), true);
      return r;
    });
  }
  function badges(n) {
    var nav = $("#owed-nav"), top = $("#owed-top");
    nav.hidden = !n; nav.textContent = String(n); nav.title = n + " verdict" + (n === 1 ? "" : "s") + " owed";
    top.hidden = !n; $("#owed-top-count").textContent = String(n);
  }
  function nextOwed() {
    var seen = P ? P.panel : "";
    return (Q ? Q.panels : []).filter(function (p) { return p.panel !== seen && !skipped[p.panel]; })[0] || null;
  }
  function queued(id) { return (Q ? Q.panels : []).filter(function (p) { return p.panel === id; })[0] || null; }

  /* -- moving between panels (j, k, s, and by itself once a panel is judged) ----------------------------------- */
  function open(id) {
    return Bench.get("/api/review-panel?panel=" + encodeURIComponent(id)).then(function (r) {
      if (!r.ok) { say(Bench.errorsText(r.errors), true); return; }
      P = r;
      P.order = shuffled(P);
      P.wasSettled = settled(P);  /* judging a judged panel again changes verdicts, and stays on it */
      focus = Math.max(0, P.order.findIndex(function (i) { return owes(P.seats[i]); }));
      drawPanel();
    });
  }
  function forward() {
    if (at < trail.length - 1) { at++; return open(trail[at]); }
    return readQueue().then(function () {
      var next = nextOwed();
      if (!next) { P = null; at = trail.length; drawPanel(); return; }  /* past the last: k opens the last again */
      trail = trail.slice(0, at + 1).concat([next.panel]);
      at = trail.length - 1;
      return open(next.panel);
    });
  }
  function back() {
    if (at <= 0) { say("This is the first panel opened here."); return; }
    at--;
    return open(trail[at]);
  }
  function skip() {
    if (!P) return;
    skipped[P.panel] = true;
    trail = trail.slice(0, at + 1);
    return forward();
  }

  /* -- blind mode (REV-6): a panel's own shuffle, the same each time it is shown ------------------------------ */
  function shuffled(panel) {
    var places = panel.seats.map(function (_, i) { return i; }), seed = 0;
    if (!blind) return places;
    for (var c = 0; c < panel.panel.length; c++) seed = (seed * 31 + panel.panel.charCodeAt(c)) >>> 0;
    for (var i = places.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      var j = seed % (i + 1), keep = places[i];
      places[i] = places[j]; places[j] = keep;
    }
    return places;
  }
  function owes(seat) { return seat.owes && seat.useful === null; }
  function settled(panel) { return panel.seats.every(function (s) { return !owes(s); }); }
  function hidden() { return blind && P && !settled(P); }
  function letter(i) { return String.fromCharCode(65 + i); }

  /* -- verdicts (REV-5) ---------------------------------------------------------------------------------------- */
  function judge(useful) {
    if (!P || !P.seats.length) return null;
    var seat = P.seats[P.order[focus]];
    return save(seat, useful, [], []).then(function (ok) {
      if (!ok) return null;
      if (settled(P) && !P.wasSettled) return finished();
      var next = nextUnjudged(focus);
      focus = next !== null ? next : (focus + 1) % P.order.length;  /* on a judged panel: the next seat along */
      drawPanel();
      return null;
    });
  }
  function nextUnjudged(from) {
    for (var step = 1; step <= P.order.length; step++) {
      var i = (from + step) % P.order.length;
      if (owes(P.seats[P.order[i]])) return i;
    }
    return null;
  }
  function finished() {
    var names = P.order.map(function (i, place) {
      var s = P.seats[i];
      return (blind ? letter(place) + " " : "") + s.alias + (s.useful === true ? " ✓" : s.useful === false ? " ✗" : "");
    });
    say("Saved " + P.collection + " " + when(P.at) + ": " + names.join(", ") + ". k goes back to it.");
    return forward();
  }
  function save(seat, useful, real, falseClaims) {
    var held = seat.held || {real: [], "false": []};
    var body = {call: seat.call, useful: useful, real: seat.real.concat(held.real, real),
      "false": seat["false"].concat(held["false"], falseClaims)};
    var path = "/bench/verdict";
    if (Bench.B.keys) { path = "/api/verdict"; body.note = seat.note; }  /* a browser holds no gateway key */
    return Bench.post(path, body).then(function (r) {
      if (!r.ok) { say(r.error ? r.error.message : Bench.errorsText(r.errors), true); return false; }
      if (seat.owes && Q) {  /* the counts follow each verdict; the next read of the queue puts them right anyway */
        Q.owed--;
        if (queued(P.panel)) Q.shown--;
        badges(Q.owed);
        drawQueueLine();
      }
      seat.useful = useful; seat.owes = false; seat.real = body.real; seat["false"] = body["false"]; seat.held = null;
      say("Saved: " + (hidden() ? "answer " + letter(P.order.indexOf(P.seats.indexOf(seat))) : seat.alias) + " " + (useful ? "useful" : "not useful") + ".");
      return true;
    });
  }
  function claim(kind) {
    if (!P || !P.seats.length) return;
    var seat = P.seats[P.order[focus]], box = $("#rv-claim"), input = $("#rv-claim-input");
    box.hidden = false;
    $("#rv-claim-label").textContent = (kind === "real" ? "A claim it got right" : "A false claim it made") +
      " (seat " + (focus + 1) + "; Enter saves, Esc leaves)";
    input.value = "";
    input.focus();
    input.onkeydown = function (e) {
      if (e.key === "Escape") { e.preventDefault(); leaveInput(); }
      if (e.key !== "Enter") return;
      e.preventDefault();
      var text = input.value.trim();
      leaveInput();
      if (!text) return;
      if (seat.useful === null) {
        seat.held = seat.held || {real: [], "false": []};
        seat.held[kind].push(text);
        say("Held until u or n on this seat: " + text);
        drawPanel();
        return;
      }
      save(seat, seat.useful, kind === "real" ? [text] : [], kind === "false" ? [text] : []).then(drawPanel);
    };
  }
  function leaveInput() {
    var box = $("#rv-claim");
    if (box) box.hidden = true;
    if (document.activeElement && document.activeElement.id === "rv-claim-input") document.activeElement.blur();
  }

  /* -- drawing -------------------------------------------------------------------------------------------------- */
  function when(at) { return Bench.when(at); }
  function say(text, bad) {
    var line = $("#rv-said");
    if (!line) return;
    line.className = bad ? "errors" : "done";
    line.textContent = text;
  }
  function select(key, label, values) {
    var s = h("select", {id: "rv-" + key, "aria-label": label}, h("option", {value: "", text: "any " + label.toLowerCase()}),
      values.map(function (v) { return h("option", {value: v, text: v, selected: filters[key] === v}); }));
    s.addEventListener("change", function () { filters[key] = s.value; s.blur(); restart(); });  /* keys act again */
    return h("label", {}, label, s);
  }
  function dateBox(key, label) {
    var box = h("input", {type: "date", id: "rv-" + key, value: filters[key], "aria-label": label});
    box.addEventListener("change", function () { filters[key] = box.value; restart(); });
    box.addEventListener("keydown", function (e) { if (e.key === "Escape") box.blur(); });
    return h("label", {}, label, box);
  }
  function restart() {
    trail = []; at = -1; skipped = {}; P = null;
    forward().then(drawBar);
  }
  function drawBar() {
    var bar = $("#rv-bar"), c = (Q && Q.choices) || {collection: [], shape: [], model: []};
    bar.textContent = "";
    var orderSel = h("select", {id: "rv-order", "aria-label": "Order"},
      h("option", {value: "oldest", text: "oldest owed first", selected: order === "oldest"}),
      h("option", {value: "teaches", text: "teaches most", selected: order === "teaches"}));
    orderSel.addEventListener("change", function () {
      order = orderSel.value;
      Bench.store("bench.review.order", order);
      orderSel.blur();
      restart();
    });
    var blindBox = h("input", {type: "checkbox", id: "rv-blind", checked: blind});
    blindBox.addEventListener("change", function () { toggleBlind(); });
    var chosen = Object.keys(filters).filter(function (k) { return filters[k]; });
    add(bar, h("label", {}, "Order", orderSel), h("label", {}, blindBox, " Blind (b)"),
      h("button", {type: "button", cls: "btn ghost small", id: "rv-help", text: "Keys (?)", "aria-expanded": "false",
        on: {click: toggleHelp}}),
      h("details", {cls: "rv-filters", open: chosen.length > 0}, h("summary", {text: chosen.length ? "Filters · " + chosen.length : "Filters"}),
        h("div", {cls: "toolbar"}, select("collection", "Collection", c.collection), select("shape", "Shape", c.shape),
          select("model", "Model", c.model), dateBox("since", "From"), dateBox("until", "To"))));
  }
  function drawQueueLine() {
    var line = $("#rv-queue");
    if (!line || !Q) return;
    line.textContent = Q.owed ? Q.shown + " of " + Q.owed + " verdict" + (Q.owed === 1 ? "" : "s") + " owed in " + Q.panels.length +
      " panel" + (Q.panels.length === 1 ? "" : "s") + (Q.shown !== Q.owed ? " (filtered)" : "") + "." : "No verdicts owed.";
  }
  function toggleBlind() {
    blind = !blind;
    Bench.store("bench.review.blind", blind ? "1" : "0");
    var box = $("#rv-blind");
    if (box) box.checked = blind;
    if (P) {  /* focus stays on its seat, except going blind: following it would say whose answer it is */
      var seat = P.order[focus];
      P.order = shuffled(P);
      focus = Math.max(0, blind ? P.order.findIndex(function (i) { return owes(P.seats[i]); }) : P.order.indexOf(seat));
    }
    drawPanel();
  }
  function toggleHelp() {
    var box = $("#rv-keys"), btn = $("#rv-help");
    box.hidden = !box.hidden;
    if (btn) btn.setAttribute("aria-expanded", box.hidden ? "false" : "true");
  }
  function seatName(seat, place) {
    return hidden() ? "Answer " + letter(place) : seat.alias + (seat.seat ? " · " + seat.seat : "");
  }
  function facts(seat) {
    var u = seat.usage || {}, parts = [];
    if (typeof seat.seconds === "number") parts.push(seat.seconds.toFixed(1) + " s");
    if (typeof u.prompt_tokens === "number") parts.push(Bench.thousands(u.prompt_tokens) + " in / " + Bench.thousands(u.completion_tokens || 0) + " out tokens");
    else parts.push("tokens not counted");
    if (!hidden()) parts.push(typeof seat.cost === "number" ? "$" + seat.cost.toFixed(seat.cost < 0.01 ? 4 : 2) : "cost unknown");
    return parts.join(" · ");
  }
  function verdictChip(seat) {
    if (seat.useful === true) return Bench.chip("useful", "ok");
    if (seat.useful === false) return Bench.chip("not useful", "err");
    return seat.owes ? Bench.chip("verdict owed", "warn") : Bench.chip("no verdict owed", "muted", "an errored seat owes none");
  }
  function claimsList(seat) {
    var held = seat.held || {real: [], "false": []};
    var items = seat.real.map(function (c) { return ["✓ ", c, ""]; }).concat(seat["false"].map(function (c) { return ["✗ ", c, ""]; }),
      held.real.map(function (c) { return ["✓ ", c, " (held)"]; }), held["false"].map(function (c) { return ["✗ ", c, " (held)"]; }));
    return items.length ? h("ul", {cls: "rv-claims"}, items.map(function (c) { return h("li", {text: c[0] + c[1] + c[2]}); })) : null;
  }
  function seatCard(seat, place) {
    var status = {ok: "ok", empty: "warn", error: "err"}[seat.status] || "";
    var body = seat.status === "error" ? h("p", {cls: "errors", text: "Error: " + seat.error}) :
      !seat.answer ? h("p", {cls: "muted", text: "Empty reply: usually a token budget, not incapacity."}) : markdown(seat.answer);
    var card = h("article", {cls: "rv-seat" + (place === focus ? " focused" : ""), id: "rv-seat-" + (place + 1), tabIndex: -1,
      "aria-labelledby": "rv-seat-title-" + (place + 1), "aria-current": place === focus ? "true" : null},
      h("header", {cls: "rv-seat-head"}, h("h3", {id: "rv-seat-title-" + (place + 1)}, h("kbd", {text: String(place + 1)}), " ", seatName(seat, place)),
        h("div", {cls: "row"}, Bench.chip(seat.status || "?", status), verdictChip(seat)), h("p", {cls: "rv-facts muted", text: facts(seat)})),
      body, claimsList(seat),
      h("div", {cls: "row rv-judge"}, judgeButton(place, true), judgeButton(place, false)));
    card.addEventListener("click", function (e) {
      if (focus !== place && !e.target.closest("button, a")) { focus = place; drawPanel(); }
    });
    return card;
  }
  /* the same verdict as u / n, for a pointer or a phone: the seat is focused first */
  function judgeButton(place, useful) {
    var seat = P.seats[P.order[place]], on = seat.useful === useful;
    return h("button", {type: "button", cls: "btn small " + (on ? "" : "ghost"), "aria-pressed": on ? "true" : "false",
      text: useful ? "Useful" : "Not useful", title: useful ? "key u" : "key n",
      on: {click: function () { queue(function () { focus = place; return judge(useful); }); }}});
  }
  function seatTabs() {
    return h("div", {cls: "rv-tabs", role: "group", "aria-label": "Seats"}, P.order.map(function (i, place) {
      var s = P.seats[i];
      return h("button", {type: "button", cls: "chip" + (place === focus ? " ok" : ""), "aria-pressed": place === focus ? "true" : "false",
        text: (place + 1) + (hidden() ? "" : " " + s.alias) + (s.useful === true ? " ✓" : s.useful === false ? " ✗" : ""),
        on: {click: function () { focus = place; drawPanel(); scrollToFocus(); }}});
    }));
  }
  function promptCard() {
    var text = P.prompt || "(no prompt kept: calls_log_prompts is off)";
    var body = markdown(text), lines = text.split("\n").length;
    var box = h("div", {cls: "rv-prompt" + (lines > FOLD_LINES ? " folded" : "")}, body);
    var more = lines > FOLD_LINES ? h("button", {type: "button", cls: "btn ghost small", text: "Show all " + lines + " lines", "aria-expanded": "false"}) : null;
    if (more) more.addEventListener("click", function () {
      var open = box.classList.toggle("folded");
      more.textContent = open ? "Show all " + lines + " lines" : "Fold the prompt";
      more.setAttribute("aria-expanded", open ? "false" : "true");
    });
    return h("section", {cls: "rv-prompt-card", "aria-label": "Prompt"}, h("h3", {text: "Prompt"}),
      P.system ? h("details", {}, h("summary", {text: "System text"}), markdown(P.system)) : null, box, more);
  }
  function drawPanel() {
    var box = $("#rv-panel");
    if (!box) return;
    box.textContent = "";
    if (!P) {
      add(box, h("p", {cls: "muted", text: Q && Q.owed ? "Nothing left that the filters keep, apart from panels skipped here." :
        "No verdicts owed. Panels asked through the gateway show up here as they come."}));
      return;
    }
    var row = queued(P.panel), done = settled(P);
    var why = !row ? (done ? "Judged: u or n changes a verdict (the later one counts)." : "") :
      hidden() && order === "teaches" ? "Teaches " + row.teaches + " (the overlap of its models' intervals; names hidden in blind mode)." : row.why;
    add(box, h("div", {cls: "rv-head"}, h("h3", {text: P.collection + (P.shape ? " · " + P.shape : "")}),
      h("span", {cls: "muted", text: when(P.at) + " · asked by " + P.key + " · " + P.seats.length + " seat" + (P.seats.length === 1 ? "" : "s") +
        (blind ? (done ? " · blind mode: revealed, every verdict saved" : " · blind mode: names hidden until every verdict is saved") : "")}),
      why ? h("p", {cls: "rv-why", text: why}) : null),
      promptCard(), seatTabs(),
      h("div", {cls: "rv-seats"}, P.order.map(function (i, place) { return seatCard(P.seats[i], place); })));
  }
  function scrollToFocus() {
    var card = $("#rv-seat-" + (focus + 1));
    if (card) { card.scrollIntoView({block: "nearest"}); card.focus({preventScroll: true}); }
  }
  function draw() {
    var sec = $("#tab-review");
    add(sec, h("div", {cls: "card", id: "rv-card"}, h("h2", {text: "Review"}),
      h("p", {cls: "sub rv-intro", text: "Every seat's answer to one prompt, side by side. Judge from the keyboard: a number focuses a seat, u or n saves its verdict; ? lists every key."}),
      h("div", {cls: "toolbar", id: "rv-bar"}),
      h("div", {cls: "rv-lines"}, h("p", {id: "rv-queue", cls: "muted", role: "status"}), h("p", {id: "rv-said", role: "status", cls: "done"})),
      h("div", {id: "rv-keys", cls: "rv-keys", hidden: true}, h("h3", {text: "Keys"}),
        h("dl", {}, KEYS.map(function (k) { return [h("dt", {}, h("kbd", {text: k[0]})), h("dd", {text: k[1]})]; }))),
      h("div", {id: "rv-claim", cls: "rv-claim", hidden: true}, h("label", {"for": "rv-claim-input", id: "rv-claim-label"}),
        h("input", {id: "rv-claim-input", type: "text", maxLength: 400, autocomplete: "off"})),
      h("div", {id: "rv-panel"})));
    drawBar();
  }

  /* -- keys ------------------------------------------------------------------------------------------------------ */
  var ACTIONS = {u: function () { return judge(true); }, n: function () { return judge(false); }, r: function () { claim("real"); },
    f: function () { claim("false"); }, j: forward, k: back, s: skip, b: toggleBlind, "?": toggleHelp};
  document.addEventListener("keydown", function (e) {
    if ($("#tab-review").hidden || e.ctrlKey || e.metaKey || e.altKey || document.querySelector("dialog[open]")) return;
    var target = e.target, typing = target && (target.isContentEditable || /^(TEXTAREA|SELECT)$/.test(target.tagName) ||
      (target.tagName === "INPUT" && !/^(checkbox|radio|button|submit)$/.test(target.type)));
    if (typing) return;
    if (e.key === "Escape") { leaveInput(); var help = $("#rv-keys"); if (help && !help.hidden) toggleHelp(); return; }
    if (/^[1-9]$/.test(e.key)) {
      e.preventDefault();
      queue(function () { if (P && +e.key <= P.order.length) { focus = +e.key - 1; drawPanel(); scrollToFocus(); } });
      return;
    }
    var act = ACTIONS[e.key];
    if (act) { e.preventDefault(); queue(act); }
  });
  /* keys act one after another: a verdict pressed while the last is saving waits for it (and for the focus it moves) */
  var chain = Promise.resolve();
  function queue(act) {
    chain = chain.then(act).catch(function (err) { say(String(err), true); });
  }

  $("#owed-top").addEventListener("click", function () { Bench.show("review"); });
  badges(Bench.B.owed || 0);
  Bench.loaders.review = function () {
    if (drawn) return;
    drawn = true;
    draw();
    forward().then(drawBar);
  };
})();

/* The onboarding step view (dashboard.md OB-23): one model followed through its five steps, used by Discover's
   adds when nothing is ahead of it in the queue (else the queue view opens instead). It finds the model's log
   in the queue (every 0.5 s, at most 20 times), then reads the log every 3 s: each step shows the text of its
   [n/5] line, and the log itself opens the first time it has text. A hub add shows an extra first step. */
"use strict";
(function () {
  var Bench = window.Bench, h = Bench.h, $ = Bench.$;
  var NAMES = ["Served by the endpoint", "Registered", "Synced to the llm CLI", "Availability probe, 4 calls", "Internal suite"];
  var STOP = /STOPPING|is not served|cannot reach/;
  var following = 0;  /* bumped by each new follow and by closing: an older poll sees it and stops */

  function stepLines(tail) {
    var found = {};
    tail.split("\n").forEach(function (line) {
      var m = /\[([1-5])\/5\]/.exec(line);
      if (m && !found[m[1]]) found[m[1]] = line.trim();
    });
    return found;
  }
  function stopLines(tail) {
    var lines = tail.split("\n"), at = -1;
    lines.forEach(function (line, i) { if (at < 0 && STOP.test(line)) at = i; });
    return (at >= 0 ? lines.slice(at, at + 3) : lines.filter(function (l) { return l.trim(); }).slice(-3)).join("\n");
  }

  function render(list, extra, tail, done, exit) {
    list.textContent = "";
    if (extra) Bench.add(list, h("li", {cls: "step " + extra.state, "data-step": "hub"}, h("strong", {text: extra.text}),
      extra.errors && extra.errors.length ? h("pre", {cls: "why", text: extra.errors.join("\n")}) : null));
    var lines = stepLines(tail), reached = 0;
    Object.keys(lines).forEach(function (n) { reached = Math.max(reached, Number(n)); });
    var stopped = STOP.test(tail) || (done && exit !== 0);
    var started = extra ? extra.state === "done" : true;
    NAMES.forEach(function (name, i) {
      var n = i + 1, cls = "";
      if (n < reached) cls = "done";
      else if (n === reached || (reached === 0 && n === 1 && started && (tail || stopped))) cls = stopped ? "fail" : done && exit === 0 ? "done" : "now";
      Bench.add(list, h("li", {cls: "step " + cls, "data-step": String(n)}, h("strong", {text: name}),
        lines[n] ? h("span", {cls: "muted", text: " " + lines[n]}) : null,
        cls === "fail" ? h("pre", {cls: "why", text: stopLines(tail)}) : null));
    });
  }

  Bench.followOnboarding = function (served, endpoint, extra, waiting) {
    var mine = ++following, d = $("#onboard-dialog");
    d.textContent = "";
    d.setAttribute("data-view", "steps");
    var list = h("ol", {cls: "steps", id: "os-steps"});
    var said = h("p", {id: "os-said", role: "status"});
    var pre = h("pre", {cls: "answer log", tabIndex: 0});
    var det = h("details", {id: "os-log"}, h("summary", {text: "Full log"}), pre);
    Bench.add(d, h("h2", {id: "od-title", text: "Onboarding " + served}), list, said, det,
      h("div", {cls: "row end"}, h("button", {type: "button", cls: "btn ghost", text: "Close", on: {click: function () { d.close(); }}})));
    d.addEventListener("close", function once() { d.removeEventListener("close", once); d.removeAttribute("data-view"); if (following === mine) following++; });
    if (!d.open) d.showModal();
    render(list, extra, "", false, null);
    if (waiting) { said.textContent = "Asking the hub to add it…"; return; }
    var tries = 0;
    function findLog() {
      if (following !== mine) return;
      Bench.get("/api/onboard-queue").then(function (q) {
        if (following !== mine) return;
        var at = -1;
        q.items.forEach(function (item, i) { if (item.served === served && (!endpoint || item.endpoint === endpoint)) at = i; });
        var ahead = at > 0 && q.items.slice(0, at).some(function (i) { return i.state === "queued" || i.state === "running"; });
        if (ahead) { d.close(); Bench.queue.open(); return; }
        var item = q.items[at];
        if (item && item.log) { readLog(item.log); return; }
        if (item && item.state === "failed") { said.textContent = "Stopped before it started: " + item.note; return; }
        if (++tries < 20) setTimeout(findLog, 500);
        else said.textContent = "Its log has not appeared yet; the queue's Details follow it.";
      });
    }
    function readLog(log) {
      if (following !== mine) return;
      Bench.get("/api/onboard?log=" + encodeURIComponent(log)).then(function (r) {
        if (following !== mine || !r.ok) return;
        var tail = r.tail || "";
        render(list, extra, tail, r.done, r.exit);
        if (tail && !det.getAttribute("data-opened")) { det.open = true; det.setAttribute("data-opened", "1"); }
        var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent = tail || "(nothing written yet)";
        if (atEnd) pre.scrollTop = pre.scrollHeight;
        if (!r.done) { said.textContent = STOP.test(tail) ? "Stopping…" : "Working… (one step at a time; closing this does not stop it)"; setTimeout(function () { readLog(log); }, 3000); return; }
        if (r.exit === 0) {
          var alias = (/->\s+alias\s+(\S+)/.exec(tail) || [])[1] || served;
          said.textContent = "Finished. " + alias + " is on the bench. The suite scores are in the dated suite note; whether to route work there is your call. Closing…";
          setTimeout(function () { d.close(); location.reload(); }, 2000);
        } else {
          said.textContent = "Stopped with exit " + r.exit + ". The last lines of the log say why.";
          $("#fresh").hidden = false;
        }
      });
    }
    findLog();
  };
})();

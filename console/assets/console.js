// The servers page follows the gateway: each time the pool publishes
// (a server came up, failed or listed new tools), the servers table is
// fetched again, rendered and escaped by the server.
"use strict";
(function () {
  var body = document.body;
  if (body.dataset.page !== "servers" || !window.EventSource) {
    return;
  }
  var prefix = body.dataset.prefix;
  var target = document.getElementById("servers");
  var events = new EventSource(prefix + "/events");
  // One fetch at a time; an update that comes while one is in flight is
  // fetched again after it, since that fetch may have read the state from
  // before the update.
  var busy = false;
  var again = false;
  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    again = false;
    fetch(prefix + "/servers.part", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) { target.innerHTML = html; })
      .catch(function () {})
      .finally(function () {
        busy = false;
        if (again) {
          refresh();
        }
      });
  }
  events.addEventListener("servers", refresh);
  // What changed between the page's rendering and the stream's opening
  // (a server that came up meanwhile) has no event of its own: fetch
  // once the stream is open, and again after each reconnection.
  events.addEventListener("open", refresh);
})();

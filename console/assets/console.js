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
  var busy = false;
  events.addEventListener("servers", function () {
    if (busy) {
      return;
    }
    busy = true;
    fetch(prefix + "/servers.part", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) { target.innerHTML = html; })
      .catch(function () {})
      .finally(function () { busy = false; });
  });
})();

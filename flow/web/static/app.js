// The dashboard's only script (served from this origin; the page's CSP allows no other):
// every element with data-poll has its content replaced by that URL's HTML every 2 s
// (the server renders and escapes it), the list's filters re-poll at once, and copy
// buttons copy the text of the element they name. It sends GET requests only.
"use strict";
(function () {
  function query() {
    var form = document.getElementById("filter");
    if (!form) return "";
    var p = new URLSearchParams(new FormData(form));
    return "?" + p.toString();
  }
  function poll(el) {
    var url = el.getAttribute("data-poll") + query();
    fetch(url, {method: "GET", cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.text();
    }).then(function (html) {
      el.innerHTML = html;
      el.setAttribute("data-polled", String(Date.now()));
      var live = document.getElementById("live");
      if (live) live.className = "live";
    }).catch(function () {
      var live = document.getElementById("live");
      if (live) live.className = "live off";
    });
  }
  function pollAll() {
    document.querySelectorAll("[data-poll]").forEach(poll);
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("filter");
    if (form) {
      form.addEventListener("change", function () {
        history.replaceState(null, "", "/" + query());
        pollAll();
      });
    }
    document.addEventListener("click", function (ev) {
      var btn = ev.target.closest("button.copy");
      if (!btn) return;
      var src = document.getElementById(btn.getAttribute("data-copy"));
      if (src && navigator.clipboard) {
        navigator.clipboard.writeText(src.textContent).then(function () {
          btn.textContent = "copied";
        });
      }
    });
    setInterval(pollAll, 2000);
  });
})();

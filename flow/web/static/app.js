// The dashboard's only script (served from this origin; the page's CSP allows no other).
// Every element with data-poll follows its URL every data-poll-period milliseconds (2 s
// unless the server says otherwise): one request in flight per element (a slow answer is
// never stacked), sent with the ETag of what the page holds so an unchanged part costs a
// 304 and nothing else; a changed part is merged into the page in
// place (elements matched by data-key, text and attributes changed only where they differ),
// so focus, a text selection and an open <details> survive. A poll that has no answer
// within the page's data-poll-timeout (milliseconds) is given up; while a part's last poll
// failed or timed out, that part is marked stale and the header's flag says "stale,
// reconnecting" instead of "live", until a poll answers again. Ages and elapsed times tick
// here from their data-at / data-since stamps (the server sends timestamps, never "3 s
// ago", so an unchanged part stays byte for byte the same). The filters, search and pages
// of a list re-poll at once; copy buttons copy the text of the element they name. GET
// requests only.
"use strict";
(function () {
  function query(el) {
    var form = document.getElementById("filter");
    if (!form || !el.hasAttribute("data-query")) return "";
    var p = new URLSearchParams(new FormData(form));
    return "?" + p.toString();
  }
  var failing = new Set();
  function live(el, why) {
    if (why) { failing.add(el); el.classList.add("stale"); el.setAttribute("data-stale", why); }
    else { failing.delete(el); el.classList.remove("stale"); el.removeAttribute("data-stale"); }
    var flag = document.getElementById("live");
    if (!flag) return;
    var reasons = [];
    failing.forEach(function (e) { reasons.push(e.getAttribute("data-stale")); });
    var text = failing.size ? "stale, reconnecting" : "live";
    if (flag.textContent !== text) flag.textContent = text;
    flag.className = failing.size ? "live off" : "live";
    var every = "every " + periodMs() / 1000 + " s";
    flag.title = failing.size ? "the last refresh " + reasons.join("; ") + "; retrying " + every
                              : "refreshed " + every;
  }
  function msOf(name, otherwise) {
    var v = parseInt(document.documentElement.getAttribute(name), 10);
    return isNaN(v) || v <= 0 ? otherwise : v;
  }
  function timeoutMs() {
    return msOf("data-poll-timeout", 10000);
  }
  function periodMs() {
    return msOf("data-poll-period", 2000);
  }
  function key(node) {
    return node.nodeType === 1 ? node.getAttribute("data-key") : null;
  }
  function attrs(to, from) {
    var i;
    for (i = to.attributes.length - 1; i >= 0; i--) {
      var name = to.attributes[i].name;
      if (!from.hasAttribute(name) && name !== "open" && name !== "data-polled") to.removeAttribute(name);
    }
    for (i = 0; i < from.attributes.length; i++) {
      var a = from.attributes[i];
      if (to.getAttribute(a.name) !== a.value) to.setAttribute(a.name, a.value);
    }
  }
  // The old child that new node `w` updates: the one with its data-key, else the first of
  // the next few unkeyed ones of its kind (and id) from position `at`.
  function match(to, w, at, byKey) {
    var k = key(w);
    if (k !== null) return byKey[k] || null;
    for (var i = at; i < Math.min(to.childNodes.length, at + 6); i++) {
      var h = to.childNodes[i];
      if (key(h) !== null || h.nodeType !== w.nodeType || h.nodeName !== w.nodeName) continue;
      if (w.nodeType !== 1 || h.id === w.id) return h;
    }
    return null;
  }
  // Make the children of `to` equal to those of `from`, touching only what differs.
  function morph(to, from) {
    var want = Array.prototype.slice.call(from.childNodes);
    var byKey = {};
    Array.prototype.forEach.call(to.childNodes, function (n) {
      var k = key(n); if (k !== null) byKey[k] = n;
    });
    var at = 0;
    want.forEach(function (w) {
      var h = match(to, w, at, byKey);
      if (key(w) !== null) delete byKey[key(w)];
      var current = to.childNodes[at];
      if (h) {
        if (h !== current) to.insertBefore(h, current || null);
        if (w.nodeType === 3 || w.nodeType === 8) {
          if (h.nodeValue !== w.nodeValue) h.nodeValue = w.nodeValue;
        } else if (w.nodeType === 1) {
          attrs(h, w);
          morph(h, w);
        }
      } else {
        to.insertBefore(w.cloneNode(true), current || null);
      }
      at++;
    });
    while (to.childNodes.length > at) to.removeChild(to.lastChild);
  }
  var busy = new WeakMap();
  var again = new WeakMap();
  function poll(el, changed) {
    if (busy.get(el)) { if (changed) again.set(el, true); return; }  // one refresh in flight per part
    busy.set(el, true);
    again.set(el, false);
    var url = el.getAttribute("data-poll") + query(el);
    var headers = {};
    var tag = el.getAttribute("data-etag");
    if (tag && el.getAttribute("data-etag-for") === url) headers["If-None-Match"] = tag;
    var ctl = new AbortController();
    var timedOut = false;
    var timer = setTimeout(function () { timedOut = true; ctl.abort(); }, timeoutMs());
    fetch(url, {method: "GET", cache: "no-store", headers: headers, signal: ctl.signal}
    ).then(function (r) {
      if (r.status === 304) return null;
      if (!r.ok) throw new Error("was answered " + r.status);
      var etag = r.headers.get("ETag");
      return r.text().then(function (html) { return {html: html, etag: etag}; });
    }).then(function (got) {
      if (got) {
        var fresh = document.createElement(el.tagName);
        fresh.innerHTML = got.html;
        morph(el, fresh);
        if (got.etag) {
          el.setAttribute("data-etag", got.etag);
          el.setAttribute("data-etag-for", url);
        }
        tick();
      }
      el.setAttribute("data-polled", String(Date.now()));
      live(el, null);
    }).catch(function (err) {
      live(el, timedOut ? "had no answer in " + Math.round(timeoutMs() / 1000) + " s"
                        : (err && /^was answered/.test(err.message) ? err.message
                                                                  : "could not reach the server"));
    }).then(function () {
      clearTimeout(timer);
      busy.set(el, false);
      if (again.get(el)) poll(el, true);  // the filter changed meanwhile: ask once more
    });
  }
  function pollAll() {
    if (document.hidden) return;
    document.querySelectorAll("[data-poll]").forEach(function (el) { poll(el, false); });
  }
  function human(s) {
    if (s >= 86400) return Math.floor(s / 86400) + "d";
    if (s >= 3600) return Math.floor(s / 3600) + "h";
    if (s >= 60) return Math.floor(s / 60) + "m";
    return Math.max(0, Math.floor(s)) + "s";
  }
  function set(el, text) { if (el.textContent !== text) el.textContent = text; }
  function tick() {
    var now = Date.now() / 1000;
    function shown(el, text) {
      var fmt = el.getAttribute("data-fmt");
      set(el, fmt ? fmt.replace("%s", text) : text);
    }
    document.querySelectorAll(".age[data-at]").forEach(function (el) {
      var at = parseFloat(el.getAttribute("data-at"));
      if (!isNaN(at)) shown(el, human(now - at));
    });
    document.querySelectorAll(".elapsed[data-since]").forEach(function (el) {
      var since = parseFloat(el.getAttribute("data-since"));
      if (!isNaN(since)) shown(el, String(Math.max(0, Math.round(now - since))));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("filter");
    var timer = null;
    function address(keepPage) {
      var page = document.getElementById("page");
      if (page && !keepPage) page.value = "1";
      history.replaceState(null, "", location.pathname + query(document.getElementById("listing")));
    }
    function refilter(keepPage) {
      address(keepPage);
      var listing = document.getElementById("listing");
      if (listing) poll(listing, true);
    }
    if (form) {
      form.addEventListener("change", function () { refilter(false); });
      form.addEventListener("input", function (ev) {
        if (ev.target.id !== "q") return;
        // The address follows each keystroke at once (a periodic poll reads the form, so the
        // list may show the search before the pause ends); the request waits for the pause.
        address(false);
        clearTimeout(timer);
        timer = setTimeout(function () { refilter(false); }, 250);
      });
      form.addEventListener("submit", function (ev) { ev.preventDefault(); refilter(false); });
    }
    document.addEventListener("click", function (ev) {
      var pager = ev.target.closest("a[data-page]");
      var page = document.getElementById("page");
      if (pager && page) {
        ev.preventDefault();
        page.value = pager.getAttribute("data-page");
        refilter(true);
        return;
      }
      var btn = ev.target.closest("button.copy");
      if (!btn) return;
      var src = document.getElementById(btn.getAttribute("data-copy"));
      if (src && navigator.clipboard) {
        navigator.clipboard.writeText(src.textContent).then(function () {
          btn.textContent = "copied";
        });
      }
    });
    var flag = document.getElementById("live");
    if (flag && document.querySelector("[data-poll]")) flag.hidden = false;
    tick();
    setInterval(pollAll, periodMs());
    setInterval(tick, 1000);
  });
})();

// The web console's only script: when the run changes (server-sent events from the console server,
// driven by Telemetry's Subscribe), re-fetch this same page's view and swap it in place, keeping which
// folders are open. Everything else is plain links: the URL is the state.
(function () {
  "use strict";
  const body = document.body;
  const events = body.dataset.events;
  if (!events) return;
  const live = document.getElementById("live");
  let shown = Number(document.getElementById("view").dataset.cursor || "0");
  let busy = false;
  let again = false;

  function openFolders() {
    const open = new Set();
    document.querySelectorAll("#view details").forEach(function (d, i) {
      if (d.open) open.add(key(d, i));
    });
    return open;
  }
  function key(d, i) {
    return (d.className || "") + "|" + (d.dataset.agent || "") + "|" + (d.dataset.agent ? "" : i);
  }

  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        const answer = await fetch(location.href, { headers: { "X-Fragment": "1" } });
        if (!answer.ok) break;
        const html = await answer.text();
        const open = openFolders();
        const scroll = window.scrollY;
        const holder = document.createElement("div");
        holder.innerHTML = html;
        const fresh = holder.firstElementChild;
        if (!fresh) break;
        fresh.querySelectorAll("details").forEach(function (d, i) { d.open = open.has(key(d, i)); });
        document.getElementById("view").replaceWith(fresh);
        window.scrollTo(0, scroll);
        shown = Math.max(shown, Number(fresh.dataset.cursor || "0"));
        body.dataset.cursor = String(shown);
      } while (again);
    } finally {
      busy = false;
    }
  }

  const source = new EventSource(events + "?after=" + shown);
  source.addEventListener("open", function () { live.hidden = false; live.className = "live on"; });
  source.addEventListener("error", function () { live.className = "live off"; });
  source.addEventListener("cursor", function (e) {
    if (Number(e.data) > shown) refresh();
  });
})();

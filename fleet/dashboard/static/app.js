// Chorus dashboard: times in the browser's zone, confirmations, and live
// updates. The page subscribes to /events (Server-Sent Events); on a change
// whose subject it watches it fetches itself again and swaps each element
// marked data-live (by id), leaving forms the operator is using alone.
"use strict";

function localTimes(root) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) {
      t.textContent = d.toLocaleString();
      t.title = t.getAttribute("datetime");
    }
  }
}

function confirmForms(root) {
  for (const f of root.querySelectorAll("form[data-confirm]")) {
    if (f.dataset.bound) continue;
    f.dataset.bound = "1";
    f.addEventListener("submit", (e) => {
      if (!window.confirm(f.dataset.confirm)) e.preventDefault();
    });
  }
}

function watched(subjects) {
  const watch = (document.body.dataset.watch || "").split(" ").filter(Boolean);
  if (watch.length === 0 || subjects.includes("*")) return true;
  return subjects.some((s) => watch.some((w) => s === w || s.startsWith(w)));
}

let refreshing = false, again = false;

async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    const res = await fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } });
    if (res.redirected && new URL(res.url).pathname === "/login") { window.location.assign("/login"); return; }
    if (!res.ok) return;
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    for (const fresh of doc.querySelectorAll("[data-live][id]")) {
      const old = document.getElementById(fresh.id);
      if (!old || old.contains(document.activeElement) && document.activeElement !== document.body) continue;
      localTimes(fresh);
      old.replaceWith(document.adoptNode(fresh));
    }
    confirmForms(document);
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  } finally {
    refreshing = false;
    if (again) { again = false; refresh(); }
  }
}

function live() {
  const status = document.getElementById("live");
  if (!status || !window.EventSource) return;
  const es = new EventSource("/events");
  es.onopen = () => { status.textContent = "live"; status.className = "live on"; };
  es.onerror = () => {
    // CLOSED: the server refused the stream (signed out, or the gateway
    // restarted and forgot the session): a reload leads to the sign-in page.
    status.textContent = es.readyState === EventSource.CLOSED ? "not live: reload the page" : "reconnecting…";
    status.className = "live off";
  };
  es.addEventListener("change", (e) => {
    if (watched(e.data.split(" "))) refresh();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  confirmForms(document);
  if (document.body.dataset.live === "on") live();
});

// Momor console: the organization's audit log (issue 38), for its admins: GET /audit?from=&to=&limit=
// (api/audit_routes.py), newest first, as a table of when, who, what, on what, and each field's value
// before and after. The log never holds a secret (store/audit.py), and the page adds none: a key is
// named by its id and, where the Keys list knows it, its name. Text only (textContent).
// Paging: the API has no cursor, so "Older entries" asks again with `to` at the oldest entry shown
// and drops the entries already on the page.
"use strict";

window.MomorAudit = (function () {
  const ui = () => window.MomorUI;
  const api = (...args) => window.MomorAuth.api(...args);
  const $ = (id) => document.getElementById(id);
  const state = { me: null, entries: [], seen: new Set(), names: new Map(), more: false };

  const isAdmin = () => Boolean(state.me && (state.me.role === "admin" || state.me.role === "operator"));

  function setMe(me) {
    state.me = me;
    $("view-audit").hidden = !isAdmin();
  }

  // datetime-local holds the browser's local time without an offset; the API takes ISO 8601 with one.
  const instant = (id) => ($(id).value ? new Date($(id).value).toISOString() : null);

  function query(to) {
    const params = new URLSearchParams({ limit: $("audit-limit").value });
    const from = instant("audit-from");
    if (from) params.set("from", from);
    const end = to || instant("audit-to");
    if (end) params.set("to", end);
    return "audit?" + params;
  }

  async function keyNames() {
    try {
      const keys = (await api("keys")).data || [];
      return new Map(keys.map((k) => [k.id, k.name]));
    } catch (error) {
      return new Map();  // names are a convenience: the ids still say which key
    }
  }

  // The first page (the filters as they are now).
  async function load() {
    $("audit-error").textContent = "";
    const [answer, names] = await Promise.all([api(query()), keyNames()]);
    state.names = names;
    state.entries = [];
    state.seen = new Set();
    add(answer.data || []);
    render();
  }

  function add(entries) {
    let fresh = 0;
    for (const entry of entries) {
      const id = JSON.stringify(entry);  // entries have no id; the same entry reads back the same
      if (state.seen.has(id)) continue;
      state.seen.add(id);
      state.entries.push(entry);
      fresh += 1;
    }
    // A full page may have more behind it; a page of nothing new has none.
    state.more = entries.length >= Number($("audit-limit").value) && fresh > 0;
  }

  async function older() {
    const last = state.entries[state.entries.length - 1];
    if (!last) return;
    $("audit-older").disabled = true;
    try {
      add((await api(query(last.at))).data || []);
      render();
    } catch (error) {
      $("audit-error").textContent = error.message;
    } finally {
      $("audit-older").disabled = false;
    }
  }

  function value(v) {
    if (v === null || v === undefined) return "none";
    if (typeof v === "string") return v;
    return JSON.stringify(v);
  }

  function changesCell(changes) {
    const { el } = ui();
    const rows = Object.entries(changes || {}).map(([field, change]) => el("div", { class: "change", "data-field": field },
      el("code", {}, field), " ", el("span", { class: "was" }, value(change.from)), " → ",
      el("span", { class: "now" }, value(change.to))));
    return el("td", { class: "changes", "data-test": "audit-changes" }, ...(rows.length ? rows : ["—"]));
  }

  function who(actor) {
    const a = actor || {};
    const how = a.kind === "session" ? "signed in" : a.kind === "key" ? "API key" : a.kind || "";
    return [a.name || a.id || "—", [a.role, how].filter(Boolean).join(", ")];
  }

  function row(entry) {
    const { el, when } = ui();
    const [name, how] = who(entry.actor);
    const target = entry.target || "";
    const known = state.names.get(target);
    return el("tr", { "data-action": entry.action, "data-target": target },
      el("td", { title: entry.at }, when(entry.at)),
      el("td", { "data-test": "audit-who" }, name, el("div", { class: "muted small" }, how)),
      el("td", {}, el("span", { class: "pill action", "data-test": "audit-action" }, entry.action)),
      el("td", { "data-test": "audit-target" }, known ? known : target,
        known ? el("div", { class: "muted small" }, target) : ""),
      changesCell(entry.changes));
  }

  function render() {
    const { el, int } = ui();
    const rows = state.entries.map(row);
    $("audit-body").replaceChildren(...(rows.length ? rows
      : [el("tr", {}, el("td", { class: "empty", colSpan: 5 }, "No changes in this range."))]));
    $("audit-count").textContent = rows.length ? int(rows.length) + (rows.length === 1 ? " entry" : " entries") : "";
    $("audit-older").hidden = !state.more;
  }

  function wire(reload) {
    $("audit-filters").addEventListener("submit", (event) => {
      event.preventDefault();
      reload();
    });
    $("audit-older").addEventListener("click", older);
  }

  return { wire, setMe, load, isAdmin };
})();

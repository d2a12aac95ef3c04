// Momor console: the organization's API keys (issue 26). An admin sees every key of the
// organization with its owner and spend, creates, names, limits and revokes them; a member sees their
// own, and creates them when the organization allows it (GET /me says which). The server decides
// what each person may do; the page only leaves out the buttons that would be refused.
// A new key's secret is shown once, in a dialog, and is dropped from the page when it closes.
"use strict";

window.MomorKeys = (function () {
  const ui = () => window.MomorUI;
  const api = (...args) => window.MomorAuth.api(...args);
  const state = { me: null, keys: [], editing: null, revoking: null };
  const $ = (id) => document.getElementById(id);

  // An operator (the deployment's owner) manages its own organization as an admin does.
  const isAdmin = () => Boolean(state.me && (state.me.role === "admin" || state.me.role === "operator"));
  const canCreate = () => Boolean(state.me && (isAdmin() || (state.me.organization || {}).membersCreateKeys));
  // A member sees only their own keys (GET /keys), and changes them when they may create keys; nobody
  // changes a key of a role above their own (an operator's key, for an organization's admin).
  const RANK = { member: 0, admin: 1, operator: 2 };
  const outranked = (key) => (RANK[key.role] || 0) > (RANK[(state.me || {}).role] || 0);
  const canManage = (key) => !key.disabled && canCreate() && !outranked(key);
  // A key's owner is the person's id (their Cognito `sub`); /me's id is the caller's (`p-<sub>`).
  const mine = (key) => Boolean(state.me && key.owner && "p-" + key.owner === state.me.id);

  function setMe(me) {
    state.me = me;
    // An API key made for calls manages no keys (GET /me's managesKeys): no Keys tab for it.
    $("view-keys").hidden = !(me && me.managesKeys);
    $("key-create").hidden = !canCreate();
    $("keys-owner-head").hidden = !isAdmin();
    const org = (me && me.organization) || {};
    $("keys-scope").textContent = isAdmin() ? "Every key of " + (org.name || "your organization")
      : "Your keys in " + (org.name || "your organization");
  }

  async function load() {
    const answer = await api("keys");
    state.keys = answer.data || [];
    render();
  }

  // ------------------------------------------------------------------------------ the table
  function limitsText(l) {
    const { usd, int } = ui();
    const parts = [];
    if (l.rateLimitPerMinute !== null && l.rateLimitPerMinute !== undefined) parts.push(int(l.rateLimitPerMinute) + "/min");
    if (l.budgetDailyUsd !== null && l.budgetDailyUsd !== undefined) parts.push(usd(l.budgetDailyUsd) + "/day");
    if (l.budgetMonthlyUsd !== null && l.budgetMonthlyUsd !== undefined) parts.push(usd(l.budgetMonthlyUsd) + "/month");
    return parts.length ? parts.join(" · ") : "no limits";
  }

  function adminText(set) {
    const { usd, int } = ui();
    const said = (v, text) => (v === null ? "none" : text);
    const parts = [];
    if ("rateLimitPerMinute" in set) parts.push("rate " + (set.rateLimitPerMinute === null ? "the deployment's"
      : set.rateLimitPerMinute === 0 ? "unlimited" : int(set.rateLimitPerMinute) + "/min"));
    if ("budgetDailyUsd" in set) parts.push("daily " + said(set.budgetDailyUsd, usd(set.budgetDailyUsd)));
    if ("budgetMonthlyUsd" in set) parts.push("monthly " + said(set.budgetMonthlyUsd, usd(set.budgetMonthlyUsd)));
    if ("zdr" in set) parts.push("zero data retention " + (set.zdr ? "on" : "off"));
    return parts.join(" · ");
  }

  function spendCell(spent, limit, test, extra) {
    const { el, usd } = ui();
    // null: the records could not be read just now (the server says so rather than guess 0).
    const known = spent !== null && spent !== undefined;
    const cell = el("td", { class: "num" + (extra ? " " + extra : ""), "data-test": test }, known ? usd(spent) : "–");
    if (known && limit !== null && limit !== undefined) {
      const share = limit > 0 ? spent / limit : 1;
      cell.append(el("span", { class: "of" + (share >= 1 ? " over" : share >= 0.8 ? " warn" : "") }, " of " + usd(limit)));
    }
    return cell;
  }

  function ownerText(key) {
    return mine(key) ? "you" : key.owner || "—";
  }

  function row(key) {
    const { el, when } = ui();
    const l = key.limits || {};
    const s = key.spend || {};
    const name = el("td", { class: "name" }, key.name || "(unnamed)");
    if (l.zdr) name.append(el("span", { class: "pill zdr", title: "zero data retention on every call" }, "zdr"));
    const actions = el("td", { class: "actions" });
    if (canManage(key)) {
      const edit = el("button", { class: "ghost small-button", type: "button", "data-test": "key-edit" }, "Edit");
      edit.addEventListener("click", () => openForm(key));
      const revoke = el("button", { class: "ghost danger small-button", type: "button", "data-test": "key-revoke" },
        "Revoke");
      revoke.addEventListener("click", () => openRevoke(key));
      actions.append(edit, revoke);
    }
    const cells = [name];
    if (isAdmin()) cells.push(el("td", { class: "owner", "data-test": "key-owner" }, ownerText(key)));
    cells.push(
      el("td", { class: "hide-sm" }, key.created ? when(key.created) : "—"),
      el("td", { class: "hide-sm muted", "data-test": "key-limits" }, limitsText(l)),
      spendCell(s.todayUsd, l.budgetDailyUsd, "key-today"),
      spendCell(s.monthUsd, l.budgetMonthlyUsd, "key-month", "hide-sm"),
      el("td", {}, el("span", { class: "pill " + (key.disabled ? "bad" : "ok"), "data-test": "key-status" },
        key.disabled ? "revoked" : "active")),
      actions);
    return el("tr", { "data-id": key.id, "data-name": key.name || "", class: key.disabled ? "revoked" : "" }, ...cells);
  }

  function render() {
    const { el } = ui();
    const rows = state.keys.map(row);
    const span = isAdmin() ? 8 : 7;
    const empty = canCreate() ? "No keys yet. Create one to call Momor." : "No keys yet.";
    $("keys-body").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "empty", colSpan: span }, empty))]));
  }

  // ------------------------------------------------------------------------------ create and edit
  const numberOrNull = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));
  const shown = (v) => (v === null || v === undefined ? "" : String(v));

  function openForm(key) {
    state.editing = key || null;
    const l = (key && key.limits) || {};
    $("key-form-title").textContent = key ? "Edit key" : "Create a key";
    $("key-form-submit").textContent = key ? "Save" : "Create key";
    $("key-name").value = key ? key.name || "" : "";
    $("key-rate").value = shown(l.rateLimitPerMinute);
    $("key-daily").value = shown(l.budgetDailyUsd);
    $("key-monthly").value = shown(l.budgetMonthlyUsd);
    $("key-zdr").checked = Boolean(l.zdr);
    const al = (key && key.allow) || {};
    $("key-tpm").value = shown(l.tokensPerMinute);
    $("key-tpd").value = shown(l.tokensPerDay);
    $("key-maxcall").value = shown(l.maxCostPerCallUsd);
    $("key-allow-models").value = (al.models || []).join(", ");
    $("key-allow-providers").value = (al.providers || []).join(", ");
    // datetime-local holds local time without an offset; the API takes ISO 8601 with one.
    const exp = key && key.expiresAt ? new Date(key.expiresAt) : null;
    $("key-expires").value = exp ? new Date(exp.getTime() - exp.getTimezoneOffset() * 60000).toISOString().slice(0, 16) : "";
    $("key-cache").checked = Boolean(l.cache);
    $("key-cache-ttl").value = shown(l.cacheTtlS);
    // What an admin set binds a member: they may tighten it, not loosen it (the server refuses that).
    const set = (key && key.adminLimits) || {};
    const bound = Object.keys(set).length && !isAdmin();
    $("key-form-note").hidden = !bound;
    $("key-form-note").textContent = bound ? "Set by an admin (you may tighten these, not loosen them): "
      + adminText(set) + "." : "";
    $("key-form-error").textContent = "";
    $("key-dialog").showModal();
    $("key-name").focus();
  }

  // A number field holding what is not a number reads as "" (as an empty one): say so rather than
  // send it as "no limit".
  function unreadable() {
    const labels = { "key-rate": "Rate limit", "key-daily": "Daily budget", "key-monthly": "Monthly budget" };
    const bad = Object.keys(labels).find((id) => $(id).validity.badInput);
    return bad ? labels[bad] + " must be a number (empty: no limit)." : null;
  }

  async function submitForm(event) {
    event.preventDefault();
    const problem = unreadable();
    if (problem) {
      $("key-form-error").textContent = problem;
      return;
    }
    // An empty field is null: no budget, or the deployment's rate limit (and, when editing, removes it).
    const body = { name: $("key-name").value.trim(), limits: { rateLimitPerMinute: numberOrNull("key-rate"),
      budgetDailyUsd: numberOrNull("key-daily"), budgetMonthlyUsd: numberOrNull("key-monthly"), zdr: $("key-zdr").checked } };
    const list = (id) => { const v = $(id).value.split(",").map((x) => x.trim()).filter(Boolean); return v.length ? v : null; };
    Object.assign(body.limits, { tokensPerMinute: numberOrNull("key-tpm"), tokensPerDay: numberOrNull("key-tpd"),
      maxCostPerCallUsd: numberOrNull("key-maxcall"), cache: $("key-cache").checked, cacheTtlS: numberOrNull("key-cache-ttl") });
    body.allow = { models: list("key-allow-models"), providers: list("key-allow-providers") };
    body.expiresAt = $("key-expires").value ? new Date($("key-expires").value).toISOString() : null;
    $("key-form-submit").disabled = true;
    try {
      if (state.editing) {
        await api("keys/" + encodeURIComponent(state.editing.id), { method: "PATCH", body });
        $("key-dialog").close();
      } else {
        const created = await api("keys", { method: "POST", body });
        $("key-dialog").close();
        showSecret(created);
      }
      await load();
    } catch (error) {
      $("key-form-error").textContent = error.message;
    } finally {
      $("key-form-submit").disabled = false;
    }
  }

  // ------------------------------------------------------------------------------ the secret, once
  function showSecret(created) {
    $("secret-name").textContent = created.name || created.id;
    $("secret-value").textContent = created.key;
    $("secret-copied").textContent = "";
    $("secret-dialog").showModal();
  }

  async function copySecret() {
    const text = $("secret-value").textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch (error) {
      // No clipboard permission (an older browser, a page not served over HTTPS): select it instead.
      const range = document.createRange();
      range.selectNodeContents($("secret-value"));
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      $("secret-copied").textContent = "Selected: press Ctrl+C (⌘C) to copy.";
      return;
    }
    $("secret-copied").textContent = "Copied to the clipboard.";
  }

  function closeSecret() {
    $("secret-value").textContent = "";  // gone from the page, as from the server
    $("secret-copied").textContent = "";
    if ($("secret-dialog").open) $("secret-dialog").close();
  }

  // ------------------------------------------------------------------------------ revoke
  function openRevoke(key) {
    state.revoking = key;
    $("revoke-name").textContent = key.name || key.id;
    $("revoke-error").textContent = "";
    $("revoke-dialog").showModal();
  }

  async function confirmRevoke() {
    const key = state.revoking;
    $("revoke-confirm").disabled = true;
    try {
      await api("keys/" + encodeURIComponent(key.id), { method: "DELETE" });
      $("revoke-dialog").close();
      await load();
    } catch (error) {
      $("revoke-error").textContent = error.message;
    } finally {
      $("revoke-confirm").disabled = false;
    }
  }

  function wire() {
    $("key-create").addEventListener("click", () => openForm(null));
    $("key-form").addEventListener("submit", submitForm);
    $("key-form-cancel").addEventListener("click", () => $("key-dialog").close());
    $("secret-copy").addEventListener("click", copySecret);
    $("secret-done").addEventListener("click", closeSecret);
    $("secret-dialog").addEventListener("close", closeSecret);
    $("revoke-cancel").addEventListener("click", () => $("revoke-dialog").close());
    $("revoke-confirm").addEventListener("click", confirmRevoke);
  }

  return { wire, setMe, load, isAdmin };
})();

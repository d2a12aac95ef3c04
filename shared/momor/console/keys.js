// Momor console: the organization's API keys (issue 26). An admin sees every key of the
// organization with its owner and spend, creates, names, limits and revokes them; a member sees their
// own, and creates them when the organization allows it (GET /me says which). The server decides
// what each person may do; the page only leaves out the buttons that would be refused.
// A new key's secret is shown once, in a dialog, and is dropped from the page when it closes.
// Issue 38: budgets by model and provider (rows), an admin's guardrail policy, an expiry shown in the
// list, rotation (a new secret, the old one kept for a grace period); a member sees what an admin set
// on their key locked, and may unlock a field only to tighten it (store/key_limits.py's rule).
"use strict";

window.MomorKeys = (function () {
  const ui = () => window.MomorUI;
  const api = (...args) => window.MomorAuth.api(...args);
  const state = { me: null, keys: [], editing: null, revoking: null, rotating: null, guardrailsText: "" };
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
    if (l.tokensPerMinute) parts.push(int(l.tokensPerMinute) + " tok/min");
    if (l.tokensPerDay) parts.push(int(l.tokensPerDay) + " tok/day");
    return parts.length ? parts.join(" · ") : "no limits";
  }

  function limitsAndBudgets(key) {
    const limits = limitsText(key.limits || {});
    const scoped = scopedText(key.budgets);
    return limits === "no limits" && scoped ? scoped.slice(3) : limits + scoped;
  }

  // How many budgets by model or provider a key has (their spend is on the usage page's card).
  function scopedText(budgets) {
    const n = Object.keys((budgets || {}).byModel || {}).length + Object.keys((budgets || {}).byProvider || {}).length;
    return n ? " · " + n + (n === 1 ? " model/provider budget" : " model/provider budgets") : "";
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
    if (set.tokensPerMinute) parts.push(int(set.tokensPerMinute) + " tokens/min");
    if (set.tokensPerDay) parts.push(int(set.tokensPerDay) + " tokens/day");
    if (set.maxCostPerCallUsd !== null && set.maxCostPerCallUsd !== undefined) {
      parts.push("at most " + usd(set.maxCostPerCallUsd) + " a call");
    }
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
      const rotate = el("button", { class: "ghost small-button", type: "button", "data-test": "key-rotate" }, "Rotate");
      rotate.addEventListener("click", () => openRotate(key));
      const revoke = el("button", { class: "ghost danger small-button", type: "button", "data-test": "key-revoke" },
        "Revoke");
      revoke.addEventListener("click", () => openRevoke(key));
      actions.append(edit, rotate, revoke);
    }
    const cells = [name];
    if (isAdmin()) cells.push(el("td", { class: "owner", "data-test": "key-owner" }, ownerText(key)));
    cells.push(
      el("td", { class: "hide-sm" }, key.created ? when(key.created) : "—"),
      el("td", { class: "hide-sm", "data-test": "key-expires", title: key.expiresAt || "" },
        key.expiresAt ? when(key.expiresAt) : "never"),
      el("td", { class: "hide-sm muted", "data-test": "key-limits" }, limitsAndBudgets(key)),
      spendCell(s.todayUsd, l.budgetDailyUsd, "key-today"),
      spendCell(s.monthUsd, l.budgetMonthlyUsd, "key-month", "hide-sm"),
      el("td", {}, el("span", { class: "pill " + (key.disabled ? "bad" : key.expired ? "expired" : "ok"),
        "data-test": "key-status" }, key.disabled ? "revoked" : key.expired ? "expired" : "active")),
      actions);
    return el("tr", { "data-id": key.id, "data-name": key.name || "", class: key.disabled ? "revoked" : "" }, ...cells);
  }

  function render() {
    const { el } = ui();
    const rows = state.keys.map(row);
    const span = isAdmin() ? 9 : 8;
    const empty = canCreate() ? "No keys yet. Create one to call Momor." : "No keys yet.";
    $("keys-body").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "empty", colSpan: span }, empty))]));
  }

  // ------------------------------------------------------------------------------ create and edit
  const numberOrNull = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));
  const shown = (v) => (v === null || v === undefined ? "" : String(v));
  const given = (v) => v !== null && v !== undefined;

  // Budgets by model or provider: one row a (model or provider, name, period), its USD. The API holds
  // them as {name: {"dailyUsd", "monthlyUsd"}} per kind; a name with both periods is two rows.
  const KINDS = { model: "byModel", provider: "byProvider" };
  const PERIODS = { dailyUsd: "per day", monthlyUsd: "per month" };

  function budgetRow(kind, name, period, usd, locked) {
    const { el } = ui();
    const option = (value, text, chosen) => el("option", { value, selected: value === chosen }, text);
    const kindSel = el("select", { class: "b-kind", "aria-label": "Model or provider" },
      option("model", "Model", kind), option("provider", "Provider", kind));
    const nameIn = el("input", { class: "b-name", spellcheck: false, value: name || "", "aria-label": "Name",
      placeholder: kind === "provider" ? "e.g. openai" : "e.g. claude-opus-4" });
    kindSel.addEventListener("change", () => {
      nameIn.placeholder = kindSel.value === "provider" ? "e.g. openai" : "e.g. claude-opus-4";
    });
    const periodSel = el("select", { class: "b-period", "aria-label": "Period" },
      ...Object.entries(PERIODS).map(([value, text]) => option(value, text, period || "monthlyUsd")));
    const usdIn = el("input", { class: "b-usd", type: "number", min: "0", step: "0.01", inputMode: "decimal",
      value: shown(usd), "aria-label": "US dollars", placeholder: "0.00" });
    const remove = el("button", { class: "ghost small-button b-remove", type: "button", "aria-label": "Remove this budget",
      title: "Remove this budget" }, "✕");
    const row = el("div", { class: "budget-row", "data-test": "budget-row" }, kindSel, nameIn, periodSel,
      el("div", { class: "prefix" }, el("span", {}, "$"), usdIn), remove);
    remove.addEventListener("click", () => row.remove());
    if (locked) {
      // What an admin set: its name and period stay; its amount may only go down (unlocked on asking).
      kindSel.disabled = nameIn.readOnly = periodSel.disabled = true;
      usdIn.readOnly = true;
      remove.hidden = true;
      row.classList.add("locked");
      row.setAttribute("data-locked", "admin");
      row.title = "Set by an admin: you may lower it, not raise or remove it.";
      const lower = el("button", { class: "ghost small-button lock", type: "button", "data-test": "unlock" }, "Lower");
      lower.addEventListener("click", () => { usdIn.readOnly = false; lower.remove(); usdIn.focus(); });
      row.append(lower);
    }
    return row;
  }

  function fillBudgets(budgets, admin) {
    const rows = [];
    for (const [kind, group] of Object.entries(KINDS)) {
      for (const [name, limits] of Object.entries((budgets || {})[group] || {})) {
        for (const period of Object.keys(PERIODS)) {
          if (!given(limits[period])) continue;
          const bound = !isAdmin() && given((((admin || {})[group] || {})[name] || {})[period]);
          rows.push(budgetRow(kind, name, period, limits[period], bound));
        }
      }
    }
    $("key-budget-rows").replaceChildren(...rows);
  }

  // The rows as the API's `budgets`, or a message saying which row is wrong.
  function readBudgets() {
    const out = { byModel: null, byProvider: null };
    for (const row of $("key-budget-rows").querySelectorAll(".budget-row")) {
      const kind = row.querySelector(".b-kind").value;
      const name = row.querySelector(".b-name").value.trim();
      const period = row.querySelector(".b-period").value;
      const usdIn = row.querySelector(".b-usd");
      if (!name && usdIn.value.trim() === "" && !usdIn.validity.badInput) continue;  // an empty row: ignored
      if (!name) return { error: "Each budget needs the model or provider it is for." };
      if (usdIn.value.trim() === "" || usdIn.validity.badInput) {
        return { error: "The budget for " + name + " needs an amount in US dollars." };
      }
      const group = KINDS[kind];
      out[group] = out[group] || {};
      out[group][name] = out[group][name] || {};
      if (period in out[group][name]) return { error: name + " has two budgets " + PERIODS[period] + "." };
      out[group][name][period] = Number(usdIn.value);
    }
    return { budgets: out };
  }

  // A member's view of what an admin set on their key: the field is locked, with a note saying so,
  // and a button unlocks it to tighten (the server refuses anything looser, 403 naming the field).
  const LOCKABLE = { rateLimitPerMinute: "key-rate", budgetDailyUsd: "key-daily", budgetMonthlyUsd: "key-monthly",
    zdr: "key-zdr", tokensPerMinute: "key-tpm", tokensPerDay: "key-tpd", maxCostPerCallUsd: "key-maxcall" };

  function clearLocks() {
    document.querySelectorAll("#key-form .lock-note").forEach((node) => node.remove());
    document.querySelectorAll("#key-form input[data-locked]").forEach((node) => {
      node.removeAttribute("data-locked");
      node.readOnly = false;
      node.disabled = false;
      node.classList.remove("locked");
    });
  }

  function lock(id, how) {
    const { el } = ui();
    const input = $(id);
    input.setAttribute("data-locked", "admin");
    input.classList.add("locked");
    if (input.type === "checkbox") input.disabled = true;  // an admin's zero data retention stays on
    else input.readOnly = true;
    const note = el("p", { class: "lock-note small", "data-test": "lock-note", "data-for": id },
      el("strong", {}, "Set by an admin. "), how + " ");
    if (input.type !== "checkbox") {
      const unlock = el("button", { class: "link", type: "button", "data-test": "unlock" }, "Tighten it");
      unlock.addEventListener("click", () => { input.readOnly = false; unlock.remove(); input.focus(); });
      note.append(unlock);
    }
    // Inside the field's own cell of a row of fields (the row keeps its columns), else under it.
    const cellOf = input.closest(".fields > div");
    if (cellOf) cellOf.append(note);
    else (input.closest("label.check") || input).after(note);
  }

  function lockAdminSet(key) {
    if (!key || isAdmin()) return false;
    let any = false;
    const set = key.adminLimits || {};
    for (const [field, id] of Object.entries(LOCKABLE)) {
      const value = set[field];
      if (!given(value) || value === false || (field === "rateLimitPerMinute" && value === 0)) continue;
      lock(id, field === "zdr" ? "Only an admin turns it off." : "You may lower it, not raise or remove it.");
      any = true;
    }
    const allow = key.adminAllow || {};
    for (const [field, id] of [["models", "key-allow-models"], ["providers", "key-allow-providers"]]) {
      if (!given(allow[field])) continue;
      lock(id, "You may drop entries, not add any or empty the list.");
      any = true;
    }
    if (given(key.adminExpiresAt)) {
      lock("key-expires", "You may move it earlier, not later or away.");
      any = true;
    }
    const budgets = key.adminBudgets || {};
    return any || Object.values(budgets).some(given);
  }

  function openForm(key) {
    state.editing = key || null;
    const l = (key && key.limits) || {};
    clearLocks();
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
    fillBudgets(key && key.budgets, key && key.adminBudgets);
    // The key's own guardrail policy: an admin's to set (the API refuses a member's with 403).
    const rails = key && key.guardrails;
    const hasRails = rails && ((rails.input || []).length || (rails.output || []).length);
    state.guardrailsText = hasRails ? JSON.stringify(rails, null, 2) : "";
    $("key-guardrails-block").hidden = !isAdmin();
    $("key-guardrails").value = state.guardrailsText;
    // What an admin set binds a member: they may tighten it, not loosen it (the server refuses that).
    const set = (key && key.adminLimits) || {};
    const bound = lockAdminSet(key);
    $("key-form-note").hidden = !bound;
    $("key-form-note").textContent = bound ? "Fields an admin set on this key are locked: you may tighten them, "
      + "not loosen or remove them." + (adminText(set) ? " Set by an admin: " + adminText(set) + "." : "") : "";
    for (const id of ["key-form-error", "key-budgets-error", "key-guardrails-error"]) $(id).textContent = "";
    $("key-dialog").showModal();
    $("key-name").focus();
  }

  // A number field holding what is not a number reads as "" (as an empty one): say so rather than
  // send it as "no limit".
  function unreadable() {
    const labels = { "key-rate": "Rate limit", "key-daily": "Daily budget", "key-monthly": "Monthly budget",
      "key-tpm": "Tokens per minute", "key-tpd": "Tokens per day", "key-maxcall": "Per-call cost ceiling",
      "key-cache-ttl": "Cache TTL" };
    const bad = Object.keys(labels).find((id) => $(id).validity.badInput);
    return bad ? labels[bad] + " must be a number (empty: no limit)." : null;
  }

  // The API's 400 or 403 names the field it refuses ("budgets.byModel.x ...", "guardrails.input[0] ..."):
  // shown beside that part of the form, the rest under the whole form.
  function showError(message) {
    const where = /^guardrails\b|\bguardrails\b/.test(message) ? "key-guardrails-error"
      : /^budgets\./.test(message) ? "key-budgets-error" : "key-form-error";
    $(where).textContent = message;
    if (where !== "key-form-error") $(where).scrollIntoView({ block: "nearest" });
  }

  async function submitForm(event) {
    event.preventDefault();
    for (const id of ["key-form-error", "key-budgets-error", "key-guardrails-error"]) $(id).textContent = "";
    const problem = unreadable();
    if (problem) {
      $("key-form-error").textContent = problem;
      return;
    }
    const scoped = readBudgets();
    if (scoped.error) {
      $("key-budgets-error").textContent = scoped.error;
      return;
    }
    // An empty field is null: no budget, or the deployment's rate limit (and, when editing, removes it).
    const body = { name: $("key-name").value.trim(), limits: { rateLimitPerMinute: numberOrNull("key-rate"),
      budgetDailyUsd: numberOrNull("key-daily"), budgetMonthlyUsd: numberOrNull("key-monthly"), zdr: $("key-zdr").checked } };
    const list = (id) => { const v = $(id).value.split(",").map((x) => x.trim()).filter(Boolean); return v.length ? v : null; };
    Object.assign(body.limits, { tokensPerMinute: numberOrNull("key-tpm"), tokensPerDay: numberOrNull("key-tpd"),
      maxCostPerCallUsd: numberOrNull("key-maxcall"), cache: $("key-cache").checked, cacheTtlS: numberOrNull("key-cache-ttl") });
    body.allow = { models: list("key-allow-models"), providers: list("key-allow-providers") };
    body.budgets = scoped.budgets;
    body.expiresAt = $("key-expires").value ? new Date($("key-expires").value).toISOString() : null;
    // The policy only when an admin changed it: the API checks it (400 naming the field) and audits it.
    const rails = $("key-guardrails").value.trim();
    if (isAdmin() && rails !== state.guardrailsText.trim()) {
      if (!rails) {
        body.guardrails = null;
      } else {
        try {
          body.guardrails = JSON.parse(rails);
        } catch (error) {
          $("key-guardrails-error").textContent = "guardrails is not JSON: " + error.message;
          return;
        }
      }
    }
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
      showError(error.message);
    } finally {
      $("key-form-submit").disabled = false;
    }
  }

  // ------------------------------------------------------------------------------ rotate
  function openRotate(key) {
    state.rotating = key;
    $("rotate-name").textContent = key.name || key.id;
    $("rotate-grace").value = "1";
    $("rotate-unit").value = "3600";
    $("rotate-error").textContent = "";
    $("rotate-dialog").showModal();
    $("rotate-grace").focus();
  }

  async function confirmRotate(event) {
    event.preventDefault();
    const amount = $("rotate-grace").value.trim();
    if (!/^\d+$/.test(amount)) {
      $("rotate-error").textContent = "The grace period is a whole number (0: the old secret stops at once).";
      return;
    }
    const key = state.rotating;
    $("rotate-confirm").disabled = true;
    try {
      const rotated = await api("keys/" + encodeURIComponent(key.id) + "/rotate",
        { method: "POST", body: { graceSeconds: Number(amount) * Number($("rotate-unit").value) } });
      $("rotate-dialog").close();
      showSecret(rotated, rotated.previousExpiresAt);
      await load();
    } catch (error) {
      $("rotate-error").textContent = error.message;
    } finally {
      $("rotate-confirm").disabled = false;
    }
  }

  // ------------------------------------------------------------------------------ the secret, once
  // `previous`: a rotation's answer, when the old secret stops working.
  function showSecret(created, previous) {
    $("secret-what").textContent = previous ? "New secret" : "Key created";
    $("secret-name").textContent = created.name || created.id;
    $("secret-value").textContent = created.key;
    $("secret-copied").textContent = "";
    const stops = previous ? new Date(previous) : null;
    $("secret-previous").hidden = !stops;
    $("secret-previous").textContent = !stops ? "" : stops <= new Date()
      ? "The old secret has stopped working."
      : "The old secret keeps working until " + stops.toLocaleString() + ", then it is refused.";
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
    $("key-budget-add").addEventListener("click", () => {
      const row = budgetRow("model", "", "monthlyUsd", null, false);
      $("key-budget-rows").append(row);
      row.querySelector(".b-name").focus();
    });
    $("rotate-form").addEventListener("submit", confirmRotate);
    $("rotate-cancel").addEventListener("click", () => $("rotate-dialog").close());
  }

  const names = () => new Map(state.keys.map((k) => [k.id, k.name]));
  return { wire, setMe, load, isAdmin, names };
})();

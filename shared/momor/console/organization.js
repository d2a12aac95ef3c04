// Momor console: the organization's settings (GET and PATCH /organizations/{id}). An admin changes
// what every call of the organization defaults to and is held to: the response cache, budgets, token
// and per-call limits, allow-lists and the guardrail policy; a member sees the same read-only. What an
// operator set binds the admins (they may tighten it, not loosen it) and is listed under the form;
// the server decides, and its refusal (naming the field) is shown as it is. A save sends only the
// fields that changed, so the audit log names what the admin meant to change.
"use strict";

window.MomorOrg = (function () {
  const api = (...args) => window.MomorAuth.api(...args);
  const $ = (id) => document.getElementById(id);
  const state = { me: null, org: null };

  const NUMBERS = { "org-daily": "budgetDailyUsd", "org-monthly": "budgetMonthlyUsd",
    "org-maxcall": "maxCostPerCallUsd", "org-tpm": "tokensPerMinute", "org-tpd": "tokensPerDay",
    "org-cache-ttl": "cacheTtlS" };
  const LABELS = { "org-daily": "Daily budget", "org-monthly": "Monthly budget", "org-maxcall": "Per-call cost ceiling",
    "org-tpm": "Tokens per minute", "org-tpd": "Tokens per day", "org-cache-ttl": "Cache TTL",
    "org-by-model": "Budgets by model", "org-by-provider": "Budgets by provider", "org-guardrails": "Guardrails" };

  function setMe(me) {
    state.me = me;
    // Every signed-in person of an organization sees its settings; only its admins change them.
    $("view-organization").hidden = !(me && me.organization);
  }

  const text = (v) => (v === null || v === undefined ? "" : String(v));
  const list = (id) => { const v = $(id).value.split(",").map((x) => x.trim()).filter(Boolean); return v.length ? v : null; };
  const json = (v) => (v === null || v === undefined ? "" : JSON.stringify(v, null, 2));
  const policyText = (p) => (p && ((p.input || []).length || (p.output || []).length) ? json(p) : "");
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  function fill(org) {
    const l = org.limits || {};
    $("org-title").textContent = org.name || org.id;
    $("org-scope").textContent = org.editable ? "What every call of the organization defaults to and is held to"
      : "Read-only: only your organization's admins change these";
    Object.entries(NUMBERS).forEach(([id, name]) => { $(id).value = text(l[name]); });
    $("org-cache").checked = Boolean(l.cache);
    $("org-allow-models").value = ((org.allow || {}).models || []).join(", ");
    $("org-allow-providers").value = ((org.allow || {}).providers || []).join(", ");
    $("org-by-model").value = json((org.budgets || {}).byModel);
    $("org-by-provider").value = json((org.budgets || {}).byProvider);
    $("org-guardrails").value = policyText(org.guardrails);
    $("org-form").querySelectorAll("input, textarea").forEach((node) => { node.disabled = !org.editable; });
    $("org-save").hidden = !org.editable;
    const facts = ["zero data retention " + (l.zdr ? "on" : "off"),
      "members " + (org.membersCreateKeys ? "create" : "do not create") + " keys"];
    const bound = Object.entries(org.operatorLimits || {}).map(([k, v]) => k + " " + (v === null ? "none" : JSON.stringify(v)));
    $("org-operator").textContent = "Set by the deployment's operator: " + facts.join(" · ")
      + (bound.length ? ". Admins may tighten, not loosen: " + bound.join(" · ") + "." : ".");
    $("org-error").textContent = "";
    $("org-saved").textContent = "";
  }

  async function load() {
    const id = state.me && state.me.organization && state.me.organization.id;
    if (!id) return;
    state.org = await api("organizations/" + encodeURIComponent(id));
    fill(state.org);
  }

  // What the form says, as the API's body: every field, then only those that differ from what was loaded.
  function read() {
    const bad = Object.keys(NUMBERS).find((id) => $(id).validity.badInput);
    if (bad) throw new Error(LABELS[bad] + " must be a number (empty: none).");
    const parsed = (id) => {
      const raw = $(id).value.trim();
      if (!raw) return null;
      try { return JSON.parse(raw); } catch (error) { throw new Error(LABELS[id] + " is not JSON: " + error.message); }
    };
    const limits = { cache: $("org-cache").checked };
    Object.entries(NUMBERS).forEach(([id, name]) => { limits[name] = $(id).value.trim() === "" ? null : Number($(id).value); });
    return { limits, allow: { models: list("org-allow-models"), providers: list("org-allow-providers") },
      budgets: { byModel: parsed("org-by-model"), byProvider: parsed("org-by-provider") },
      guardrails: parsed("org-guardrails") || { input: [], output: [] } };
  }

  function changed(form, org) {
    const body = {};
    for (const group of ["limits", "allow", "budgets"]) {
      const now = {};
      Object.entries(form[group]).forEach(([name, value]) => {
        if (!same(value, (org[group] || {})[name])) now[name] = value;
      });
      if (Object.keys(now).length) body[group] = now;
    }
    const policy = org.guardrails || {};
    if (!same(form.guardrails, { input: policy.input || [], output: policy.output || [] })) body.guardrails = form.guardrails;
    return body;
  }

  async function save(event) {
    event.preventDefault();
    $("org-error").textContent = "";
    $("org-saved").textContent = "";
    let body;
    try {
      body = changed(read(), state.org);
    } catch (error) {
      $("org-error").textContent = error.message;
      return;
    }
    if (!Object.keys(body).length) {
      $("org-saved").textContent = "Nothing to save.";
      return;
    }
    $("org-save").disabled = true;
    try {
      state.org = await api("organizations/" + encodeURIComponent(state.org.id), { method: "PATCH", body });
      fill(state.org);
      $("org-saved").textContent = "Saved. Every process serving calls has it within the key-cache time.";
    } catch (error) {
      $("org-error").textContent = error.message;
    } finally {
      $("org-save").disabled = false;
    }
  }

  function wire() {
    $("org-form").addEventListener("submit", save);
  }

  return { wire, setMe, load };
})();

// Momor console: signs a person in (auth.js: the user pool, or an API key), reads GET /usage once
// per view and draws it, and shows the organization's keys (keys.js). Every text that came from a
// record or the API (model names, error messages, key names) is set with textContent, never parsed
// as HTML.
"use strict";

(function () {
  const auth = window.MomorAuth;
  const PALETTE = ["#4f46e5", "#06b6d4", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#ec4899", "#84cc16",
    "#64748b"];
  const $ = (id) => document.getElementById(id);
  const state = { usage: null, group: "model", charts: {}, me: null, view: "usage" };

  // ---------------------------------------------------------------------------------- formatting
  // Cost: whole cents from $1, two to four decimals from a cent, six below (calls often cost fractions).
  function usd(v) {
    v = Number(v) || 0;
    if (v === 0) return "$0";
    if (v >= 1) return "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    if (v >= 0.01) return "$" + v.toFixed(4).replace(/0{1,2}$/, "");  // $0.50, $0.125, $0.0123
    return "$" + v.toFixed(6);
  }
  // Axis ticks: enough decimals to tell neighbouring ticks apart, however small the amounts.
  function usdTick(v) {
    if (v === 0) return "$0";
    if (v >= 1) return usd(v);
    return "$" + v.toFixed(Math.max(2, Math.ceil(-Math.log10(Math.abs(v))) + 1));
  }
  const int = (v) => (Number(v) || 0).toLocaleString("en-US");
  const pct = (v) => (100 * (Number(v) || 0)).toFixed(1) + "%";
  function ms(v) {
    if (v === null || v === undefined) return "–";
    return v >= 1000 ? (v / 1000).toFixed(2) + " s" : Math.round(v) + " ms";
  }
  function when(iso) {
    const d = new Date(iso);
    return d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
      second: "2-digit", hour12: false });
  }
  const dayLabel = (day) => new Date(day + "T00:00:00Z").toLocaleDateString(undefined,
    { month: "short", day: "numeric", timeZone: "UTC" });

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("data-") || k.startsWith("aria-") || k === "title" || k === "role") node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
    return node;
  }

  // ---------------------------------------------------------------------------------- sign in / out
  function show(view) {
    $("signin").hidden = view !== "signin";
    $("dashboard").hidden = view !== "usage";
    $("keys-view").hidden = view !== "keys";
    $("audit-view").hidden = view !== "audit";
    $("org-view").hidden = view !== "organization";
    $("controls").hidden = view === "signin";
    $("views").hidden = view === "signin" || !state.me;
    document.querySelectorAll(".usage-only").forEach((node) => { node.hidden = view !== "usage"; });
    document.querySelectorAll("#views button").forEach((b) =>
      b.setAttribute("aria-selected", String(b.getAttribute("data-view") === view)));
    if (view !== "signin") state.view = view;
  }

  function showSignIn() {
    const c = auth.config().cognito;
    $("cognito-signin").hidden = !c;
    $("hosted-signin").hidden = !c || c.flow !== "code";
    $("password-form").hidden = !c || c.flow !== "password";
    show("signin");
  }

  function usagePath() {
    // Both ends from one clock reading: with `from` alone the server ends the range at its own
    // later "now", and "Last 90 days" came out a few milliseconds longer than the 90 it allows.
    const days = Number($("range").value);
    const now = Date.now();
    const from = new Date(now - days * 86400000).toISOString();
    const to = new Date(now).toISOString();
    return "usage?" + new URLSearchParams({ from, to, group: "model" });
  }

  // Who is signed in (GET /me): a person of an organization, with a role. An API key may have no
  // person behind it: then the page shows usage only, as before.
  async function fetchMe() {
    try {
      return await auth.api("me");
    } catch (error) {
      if (error.status === 401) throw error;
      return null;
    }
  }

  function refused(error) {
    const byKey = auth.kind() === "apiKey";
    auth.forget();
    state.me = null;
    $(byKey ? "signin-error" : "session-error").textContent = byKey ? "That key was not accepted."
      : "Your session was not accepted (" + error.message + "). Sign in again.";
    showSignIn();
  }

  async function load() {
    if (!auth.signedIn()) return showSignIn();
    document.body.setAttribute("data-state", "loading");
    try {
      state.me = await fetchMe();
      window.MomorKeys.setMe(state.me);
      window.MomorAudit.setMe(state.me);
      window.MomorOrg.setMe(state.me);
      if (state.view === "keys" && state.me && state.me.managesKeys) {
        await window.MomorKeys.load();
      } else if (state.view === "audit" && window.MomorAudit.isAdmin()) {
        await window.MomorAudit.load();
      } else if (state.view === "organization" && state.me && state.me.organization) {
        await window.MomorOrg.load();
      } else {
        state.view = "usage";
        state.usage = await auth.api(usagePath());
      }
    } catch (error) {
      if (error.status === 401) {
        refused(error);
      } else {
        const where = { keys: "keys-error", audit: "audit-error", organization: "org-error" }[state.view] || "truncated";
        $(where).hidden = false;
        $(where).textContent = error.message;
        show(state.view);
      }
      document.body.setAttribute("data-state", "error");
      return;
    }
    $("keys-error").textContent = "";
    show(state.view);
    if (state.view === "usage") render(state.usage);
    document.body.setAttribute("data-state", "ready");
  }

  $("signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("apikey").value.trim();
    if (!key) return;
    $("signin-error").textContent = "";
    auth.useApiKey(key);
    $("apikey").value = "";
    state.view = "usage";
    load();
  });
  $("password-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("session-error").textContent = "";
    $("password-button").disabled = true;
    try {
      await auth.signInWithPassword($("email").value.trim(), $("password").value);
    } catch (error) {
      $("session-error").textContent = error.message;
      document.body.setAttribute("data-state", "error");
      return;
    } finally {
      $("password").value = "";
      $("password-button").disabled = false;
    }
    state.view = "usage";
    load();
  });
  $("hosted-button").addEventListener("click", () => auth.startHostedSignIn());
  $("signout").addEventListener("click", () => {
    state.usage = null;
    state.me = null;
    if (!auth.signOut()) showSignIn();
  });
  $("refresh").addEventListener("click", load);
  $("range").addEventListener("change", load);
  document.querySelectorAll("#views button").forEach((button) => {
    button.addEventListener("click", () => {
      state.view = button.getAttribute("data-view");
      load();
    });
  });
  window.MomorKeys.wire();
  window.MomorAudit.wire(load);
  window.MomorOrg.wire();

  // ---------------------------------------------------------------------------------- the page
  function render(u) {
    renderWho(u);
    const t = u.totals;
    setFigure("kpi-cost", usd(t.costUsd), t.costUsd);
    setFigure("kpi-calls", int(t.calls), t.calls);
    setFigure("kpi-failed", int(t.failed), t.failed);
    setFigure("kpi-saved", int(t.saved), t.saved);
    setFigure("kpi-failure-rate", pct(t.failureRate) + " failure rate", t.failureRate);
    setFigure("kpi-cache-saved", usd(t.cacheSavedUsd || 0), t.cacheSavedUsd);
    setFigure("kpi-cache-hits", int(t.cacheHits || 0) + " hits · " + pct(t.cacheHitRate || 0) + " hit rate", t.cacheHits);
    setFigure("kpi-tokens", int(t.inputTokens) + " in · " + int(t.outputTokens) + " out", t.inputTokens);
    setFigure("kpi-routes", u.groups.route.length + (u.groups.route.length === 1 ? " route" : " routes"));
    setFigure("kpi-latency", ms(t.latencyMs.p50), t.latencyMs.p50);
    setFigure("kpi-first-byte", "p95 " + ms(t.latencyMs.p95) + " · first byte " + ms(t.firstByteMs.p50) + " / "
      + ms(t.firstByteMs.p95));
    const note = $("truncated");
    note.hidden = !u.truncated;
    note.textContent = u.truncated ? "Showing the newest " + int(u.records) + " calls of this range." : "";
    // Admins of an organization see its calls by person too (GET /usage's `person` group).
    const people = document.querySelector('#top-tabs [data-group="person"]');
    people.hidden = !u.groups.person || u.scope === "own";
    if (people.hidden && state.group === "person") selectGroup("model");
    renderBudget(u.budget);
    renderScopedBudgets(u.budgets);
    renderGuardrails(u.guardrails || [], u.groups.key || []);
    renderCharts(u);
    renderTop();
    renderLatest(u.latest);
  }

  function renderWho(u) {
    const me = state.me;
    if (me) {
      const org = me.organization || {};
      $("who").replaceChildren(me.name || me.email || me.id, el("span", { class: "muted" }, " · " + (org.name || "")),
        el("span", { class: "badge", "data-test": "role" }, me.role));
    } else {
      $("who").replaceChildren(u.caller.name || u.caller.id, u.scope === "all" ? el("span", { class: "badge" }, "all keys")
        : el("span", { class: "badge" }, "own calls"));
    }
  }

  function setFigure(test, text, value) {
    const node = document.querySelector('[data-test="' + test + '"]');
    node.textContent = text;
    if (value !== undefined) node.setAttribute("data-value", String(value));
  }

  function renderBudget(b) {
    $("budget").hidden = !b;
    if (!b) return;
    const meters = [];
    for (const [label, limit, spent, resets] of [["Today", b.dailyUsd, b.spentTodayUsd, b.dayResets],
      ["This month", b.monthlyUsd, b.spentThisMonthUsd, b.monthResets]]) {
      if (limit === null || limit === undefined) continue;
      const share = limit > 0 ? Math.min(spent / limit, 1) : 1;
      const fill = el("div", { class: "fill" + (share >= 1 ? " over" : share >= 0.8 ? " warn" : "") });
      fill.style.width = (100 * share).toFixed(1) + "%";
      meters.push(el("div", { class: "meter", "data-test": "budget-" + (label === "Today" ? "day" : "month") },
        el("div", { class: "top" }, el("strong", {}, label), el("span", {}, usd(spent) + " of " + usd(limit))),
        el("div", { class: "track" }, fill),
        el("div", { class: "foot" }, "resets " + new Date(resets).toLocaleString())));
    }
    $("budget-meters").replaceChildren(...meters);
  }

  // Issue 38: GET /usage's `budgets` (api/usage_budgets.py): each key's, and the organization's, budgets
  // by model and by provider, a row per limit: what this day or month spent of it and what is left.
  function renderScopedBudgets(b) {
    const owners = [...((b && b.keys) || []).map((k) => [k.name || k.id, "key", k]),
      ...(b && b.organization ? [[b.organization.name || "your organization", "organization", b.organization]] : [])];
    const rows = [];
    for (const [whose, kind, budgets] of owners) {
      for (const [group, label] of [["byModel", "model"], ["byProvider", "provider"]]) {
        for (const [name, e] of Object.entries(budgets[group] || {})) {
          for (const [limit, spent, left, period, resets] of [
            [e.dailyUsd, e.spentTodayUsd, e.leftTodayUsd, "today", e.dayResets],
            [e.monthlyUsd, e.spentThisMonthUsd, e.leftThisMonthUsd, "this month", e.monthResets]]) {
            if (limit === null || limit === undefined) continue;
            const known = spent !== null && spent !== undefined;
            const share = !known ? 0 : limit > 0 ? Math.min(spent / limit, 1) : 1;
            const fill = el("div", { class: "fill" + (share >= 1 ? " over" : share >= 0.8 ? " warn" : "") });
            fill.style.width = (100 * share).toFixed(1) + "%";
            rows.push(el("tr", { "data-owner": kind, "data-name": name, "data-period": period === "today" ? "day" : "month" },
              el("td", { class: "name" }, whose, el("span", { class: "muted small" }, " " + kind)),
              el("td", {}, name, el("span", { class: "muted small" }, " " + label)),
              el("td", {}, period),
              el("td", { class: "num", "data-test": "limit" }, usd(limit)),
              el("td", { class: "num", "data-test": "spent" }, known ? usd(spent) : "–"),
              el("td", { class: "num", "data-test": "left" }, known ? usd(left) : "–"),
              el("td", { class: "hide-sm meter-cell" }, el("div", { class: "track" }, fill)),
              el("td", { class: "hide-sm muted" }, resets ? new Date(resets).toLocaleString() : "–")));
          }
        }
      }
    }
    $("scoped-budgets").hidden = rows.length === 0;
    $("scoped-budgets-body").replaceChildren(...rows);
  }

  // Issue 39: GET /usage's `guardrails` rows (store/guardrail_counts.py), one per check and key; the key
  // by its name where the range's calls name it. Text only (textContent): a check's name is the
  // organization's own words.
  function renderGuardrails(rows, keys) {
    $("guardrails").hidden = rows.length === 0;
    const names = new Map(keys.map((k) => [k.id || k.name, k.label || k.name]));
    $("guardrails-body").replaceChildren(...rows.map((r) => el("tr", { "data-guardrail": r.guardrail, "data-key": r.key },
      el("td", { class: "name" }, r.guardrail),
      el("td", { class: "hide-sm" }, r.origin),
      el("td", {}, names.get(r.key) || r.key),
      el("td", { class: "num", "data-test": "masked" }, int(r.masked)),
      el("td", { class: "num", "data-test": "blocked" }, int(r.blocked)),
      el("td", { class: "num", "data-test": "logged" }, int(r.logged)))));
  }

  // ---------------------------------------------------------------------------------- charts
  function chart(id, config) {
    if (state.charts[id]) state.charts[id].destroy();
    if (typeof Chart === "undefined") return;  // the library is missing: figures and tables still work
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = "#667085";
    Chart.defaults.borderColor = "#eef1f6";
    state.charts[id] = new Chart($(id), config);
  }

  function renderCharts(u) {
    const days = u.days.map((d) => d.day);
    const labels = days.map(dayLabel);
    // Cost per day stacked by model: the eight costliest models, the rest as "other".
    const models = u.groups.model.map((g) => g.name);
    const top = models.slice(0, 8);
    const names = models.length > 8 ? [...top, "other"] : top;
    const cost = Object.fromEntries(names.map((n) => [n, days.map(() => 0)]));
    for (const point of u.series) {
      const name = top.includes(point.model) ? point.model : "other";
      const i = days.indexOf(point.day);
      if (i >= 0 && cost[name]) cost[name][i] += point.costUsd;
    }
    chart("chart-cost", {
      type: "bar",
      data: { labels, datasets: names.map((n, i) => ({ label: n, data: cost[n], backgroundColor: PALETTE[i % 9],
        borderRadius: 4, maxBarThickness: 48 })) },
      options: baseOptions({ stacked: true, money: true }),
    });
    chart("chart-calls", {
      data: {
        labels,
        datasets: [
          { type: "bar", label: "Calls", data: u.days.map((d) => d.calls), backgroundColor: "#c7d2fe",
            borderRadius: 4, maxBarThickness: 40, yAxisID: "y" },
          { type: "bar", label: "Failed", data: u.days.map((d) => d.failed), backgroundColor: "#fca5a5",
            borderRadius: 4, maxBarThickness: 40, yAxisID: "y" },
          { type: "line", label: "Failure rate", data: u.days.map((d) => 100 * d.failureRate),
            borderColor: "#e5484d", backgroundColor: "#e5484d", tension: 0, pointRadius: 3, yAxisID: "rate" },
        ],
      },
      options: {
        ...baseOptions({}),
        scales: {
          x: { grid: { display: false } },
          y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "calls" } },
          rate: { position: "right", beginAtZero: true, suggestedMax: 10, grid: { display: false },
            ticks: { callback: (v) => v + "%" } },
        },
      },
    });
    // Each attempt's own time against its own provider (usage.attempt_latency): a call served by B
    // after A failed does not charge B with A's time and the backoff.
    const providers = (u.attemptLatency || []).filter((g) => g.latencyMs.p50 !== null);
    const series = [["Attempt p50", "p50", "#99f6e4"], ["Attempt p95", "p95", "#0d9488"]];
    chart("chart-latency", {
      type: "bar",
      data: { labels: providers.map((g) => g.provider),
        datasets: series.map(([label, q, color]) => ({ label, data: providers.map((g) => g.latencyMs[q]),
          backgroundColor: color, borderRadius: 4, maxBarThickness: 22 })) },
      options: baseOptions({ unit: "ms" }),
    });
  }

  function baseOptions({ stacked = false, money = false, unit = "" }) {
    const tick = money ? usdTick : unit ? (v) => v + " " + unit : undefined;
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: "index", intersect: false },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 10, boxHeight: 10, usePointStyle: true } },
        tooltip: { callbacks: money ? { label: (c) => c.dataset.label + ": " + usd(c.parsed.y) } : {} },
      },
      scales: {
        x: { stacked, grid: { display: false } },
        y: { stacked, beginAtZero: true, ticks: tick ? { callback: tick } : {} },
      },
    };
  }

  // ---------------------------------------------------------------------------------- tables
  function selectGroup(group) {
    state.group = group;
    document.querySelectorAll("#top-tabs button").forEach((b) =>
      b.setAttribute("aria-selected", String(b.dataset.group === group)));
  }
  document.querySelectorAll("#top-tabs button").forEach((button) => {
    button.addEventListener("click", () => {
      selectGroup(button.dataset.group);
      renderTop();
    });
  });

  function renderTop() {
    const u = state.usage;
    const rows = (u.groups[state.group] || []).map((g) => {
      let name = g.label || g.name;
      if (state.group === "key" && g.name === u.caller.id) name = (u.caller.name || g.name) + " (this key)";
      // People are grouped by their id (Cognito `sub`); the signed-in person's is /me's id without
      // `p-`, and a person's own calls among the latest name them (callerName: their e-mail).
      if (state.group === "person") name = personName(u, g.name);
      return el("tr", { "data-name": g.name },
        el("td", { class: "name" }, name),
        el("td", { class: "num", "data-test": "calls" }, int(g.calls)),
        el("td", { class: "num", "data-test": "failed" }, int(g.failed) + (g.calls ? " (" + pct(g.failureRate) + ")" : "")),
        el("td", { class: "num hide-sm" }, int(g.saved)),
        el("td", { class: "num hide-sm", "data-test": "cache" },
          int(g.cacheHits || 0) + (g.cacheHits ? " (" + pct(g.cacheHitRate) + ") · " + usd(g.cacheSavedUsd) : "")),
        el("td", { class: "num hide-sm" }, int(g.inputTokens) + " / " + int(g.outputTokens)),
        el("td", { class: "num", "data-test": "cost" }, usd(g.costUsd)),
        el("td", { class: "num hide-sm" }, ms(g.latencyMs.p50) + " / " + ms(g.latencyMs.p95)));
    });
    $("top-body").replaceChildren(...(rows.length ? rows : [emptyRow(7, "No calls in this range yet.")]));
  }

  function personName(u, sub) {
    if (state.me && "p-" + sub === state.me.id) return (state.me.name || state.me.email || sub) + " (you)";
    const call = u.latest.find((c) => c.callerId === "p-" + sub && c.callerName);
    return call ? call.callerName : sub;
  }

  function emptyRow(span, text) {
    return el("tr", {}, el("td", { class: "empty", colSpan: span }, text));
  }

  function servedBy(call) {
    const s = call.served;
    if (s) return s.model + " @ " + s.provider;
    const last = (call.attempts || []).slice(-1)[0];
    return last ? "— (" + last.model + " @ " + last.provider + " failed)" : "— (not routed)";
  }

  // The finish as the caller was told it (an OpenAI-route caller reads `stop` where Anthropic said
  // `end_turn`), with the provider's own word beside it when that differs.
  function finishText(call) {
    const told = call.callerFinishReason || call.finishReason;
    if (!told) return "";
    const own = call.finishReason && call.finishReason !== told ? " (provider: " + call.finishReason + ")" : "";
    return " · " + told + own;
  }

  // The record's compact plan (api/explain.py): who was lined up, in order, and how many offerings
  // each planning rule left out. The whole explanation of a call: send it again with X-Momor-Explain: 1.
  function whyRoute(plan) {
    const counts = (o) => Object.entries(o || {}).map(([rule, n]) => rule + " " + int(n)).join(", ");
    const lined = (plan.candidates || []).join(" → ") + (plan.more ? " (+" + int(plan.more) + " more)" : "");
    const parts = [(plan.explain ? "explained, not called: " : "") + (lined || "no candidate")];
    if (counts(plan.leftOut)) parts.push("left out: " + counts(plan.leftOut));
    if (counts(plan.deferred)) parts.push("tried last: " + counts(plan.deferred));
    return parts.join(" · ");
  }

  function renderLatest(calls) {
    const rows = calls.map((call) => {
      const status = el("span", { class: "pill " + (call.failed ? "bad" : "ok") }, String(call.status));
      const servedCell = el("td", {}, servedBy(call));
      if (call.saved) servedCell.append(el("span", { class: "pill saved", title: "saved by failover" }, "saved"));
      if (call.served && call.served.cached) {
        servedCell.append(el("span", { class: "pill cached", "data-test": "cached",
          title: "answered from the response cache: " + usd(call.served.savedUsd) + " saved" }, "cached"));
      }
      if (call.failed && call.error) servedCell.append(el("div", { class: "why-short", "data-test": "call-error" }, call.error));
      const row = el("tr", { "data-id": call.id, tabIndex: 0 },
        el("td", {}, when(call.created)), servedCell, el("td", { class: "hide-sm" }, call.route),
        el("td", { class: "num" }, status), el("td", { class: "num hide-sm" }, String((call.attempts || []).length)),
        el("td", { class: "num hide-sm" }, ms(call.latencyMs)), el("td", { class: "num" }, usd(call.cost)));
      row.addEventListener("click", () => openDrawer(call));
      row.addEventListener("keydown", (e) => { if (e.key === "Enter") openDrawer(call); });
      return row;
    });
    $("latest-body").replaceChildren(...(rows.length ? rows : [emptyRow(7, "No calls in this range yet.")]));
  }

  // ---------------------------------------------------------------------------------- the drawer
  function openDrawer(call) {
    $("drawer-title").textContent = servedBy(call);
    $("drawer-id").textContent = call.id;
    const usage = call.usage || {};
    const facts = [["When", when(call.created)], ["Route", call.route + " (" + call.dialect + ")"],
      ["Status", call.status + finishText(call)],
      ["Streaming", call.streaming ? "yes" : "no"], ["First byte", ms(call.firstByteMs)], ["Whole call", ms(call.latencyMs)],
      ["Tokens", int(usage.inputTokens) + " in · " + int(usage.outputTokens) + " out"], ["Cost", usd(call.cost)]];
    if (call.error) facts.push(["Error", call.error]);
    if (call.callerId) facts.splice(2, 0, ["Key", call.callerName ? call.callerName + " · " + call.callerId : call.callerId]);
    $("drawer-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
    if (call.plan) $("drawer-facts").append(el("dt", {}, "Why this route"),
      el("dd", { "data-test": "why-route" }, whyRoute(call.plan)));
    const steps = (call.attempts || []).map((a, i) => {
      const verdict = a.status === "ok" ? "served" : a.status === "skipped" ? "skipped" : "failed";
      const meta = [a.httpStatus ? "HTTP " + a.httpStatus : null, a.status === "skipped" ? null : ms(a.latencyMs),
        a.keySource && a.keySource !== "none" ? a.keySource + " key" : null, usd(a.cost)].filter(Boolean).join(" · ");
      const item = el("li", { class: a.status, "data-test": "attempt", "data-provider": a.provider,
        "data-status": a.status },
        el("span", { class: "dot" }),
        el("div", { class: "head" }, el("span", {}, (i + 1) + ". " + a.model + " @ " + a.provider),
          el("span", { class: "pill " + (a.status === "ok" ? "ok" : "bad") }, verdict)),
        el("div", { class: "meta" }, a.offeringId + " · " + meta));
      if (a.error) item.append(el("div", { class: "why" }, a.error));
      return item;
    });
    $("drawer-timeline").replaceChildren(...(steps.length ? steps : [el("li", { class: "skipped" },
      el("span", { class: "dot" }), el("div", { class: "meta" }, "No provider was tried: the call was refused first."))]));
    $("drawer").classList.add("open");
    $("drawer").setAttribute("aria-hidden", "false");
    $("scrim").hidden = false;
  }

  function closeDrawer() {
    $("drawer").classList.remove("open");
    $("drawer").setAttribute("aria-hidden", "true");
    $("scrim").hidden = true;
  }
  $("drawer-close").addEventListener("click", closeDrawer);
  $("scrim").addEventListener("click", closeDrawer);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") closeDrawer(); });

  // The way back from the hosted sign-in page first (it carries a code to exchange), then the page.
  auth.loadConfig()
    .then(() => auth.finishHostedSignIn())
    .catch((error) => {
      $("session-error").textContent = error.message;
      document.body.setAttribute("data-state", "error");
    })
    .then(load);

  window.MomorUI = { $, el, usd, int, when };
})();

/* Engine tab: status chips (polled), reindex with progress, embedding, rerank, Qdrant. */
"use strict";

(() => {
  const { api, h, $, say, errorText, isOn, setSwitch, saveSettings, fmtScore } = Studio;
  const POLL_MS = 5000;
  const FAST_MS = 500;
  let last = null;
  let timer = 0;
  let reindex = null; // {baseline, total} while a reindex we started runs

  // -- status -------------------------------------------------------------------------

  function chip(id, state, text, title) {
    const el = $(`status-chip-${id}`);
    el.dataset.state = state;
    el.querySelector('[data-role="text"]').textContent = text;
    el.title = title || text;
  }

  function renderStatus(s) {
    const st = s.storage || { available: true, reason: "writes work" };
    chip("storage", st.available ? "ok" : st.fault === "storage_full" ? "warn" : "fail",
      st.available ? "writes work" : `${st.fault} since ${st.since}`, st.reason);
    chip("keyword", s.keyword.available ? "ok" : "fail",
      s.keyword.available ? s.keyword.backend || "FTS5" : "unavailable", s.keyword.reason);
    const e = s.embedding;
    chip("embedding", e.available ? "ok" : "off",
      e.available ? `${e.source} · ${e.model}${e.dimensions ? ` · ${e.dimensions}d` : ""}` : "unavailable",
      e.reason);
    const v = s.vectorStore;
    const waiting = v.needsReindex ? ` · needs reindex ${v.needsReindex}` : "";
    chip("vectorStore", v.available ? (v.needsReindex ? "warn" : "ok") : "off",
      (v.backend === "none" ? "none (install sqlite-vec)" : `${v.backend} · ${v.rowCount} rows`) + waiting,
      v.reason);
    const q = s.qdrant || {};
    chip("qdrant", !q.enabled ? "off" : q.healthy ? "ok" : "fail",
      !q.enabled ? "disabled" : q.healthy ? `healthy · ${q.pointCount ?? "?"} points` : q.error || "unhealthy",
      q.error || undefined);
    const r = s.rerank;
    chip("rerank", r.available ? "ok" : r.enabled ? "warn" : "off",
      r.available ? "active" : r.enabled ? "not configured" : "disabled", r.reason);
    $("engine-status-updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    renderProgress(s.reindex);
  }

  function renderProgress(p) {
    const bar = $("reindex-progress");
    const text = $("reindex-progress-text");
    let percent = 0;
    let state = "idle";
    if (reindex) {
      const done = Math.max(0, p.processed - reindex.baseline);
      const total = Math.max(reindex.total, done + p.pending);
      percent = total ? Math.round((100 * done) / total) : 100;
      if (!p.running && p.pending === 0) {
        percent = 100;
        state = "done";
        text.textContent = `Reindex complete: ${done} embedded, nothing pending.`;
        reindex = null;
      } else if (!p.running) {
        state = "stopped";
        text.textContent = `Reindex stopped: ${done} embedded, ${p.pending} still pending` +
          (p.lastError ? ` (last error: ${p.lastError})` : ".");
        reindex = null;
      } else {
        state = "running";
        text.textContent = `Reindexing: ${done} of ${total} embedded, ${p.pending} pending…`;
      }
    } else if (bar.dataset.state === "done" || bar.dataset.state === "stopped") {
      return; // keep showing the finished run
    } else {
      percent = p.pending === 0 ? 100 : 0;
      text.textContent = p.running
        ? `Reindex running: ${p.pending} pending.`
        : p.pending === 0 ? "Every memory is indexed." : `${p.pending} memories wait for embedding.`;
    }
    bar.dataset.state = state;
    bar.setAttribute("aria-valuenow", String(percent));
    bar.querySelector(".progress-fill").style.width = `${percent}%`;
  }

  async function poll() {
    window.clearTimeout(timer);
    try {
      last = await api("GET", "/api/memory/engine-status");
      say($("engine-status-error"), "", "");
      renderStatus(last);
    } catch (err) {
      say($("engine-status-error"), errorText(err), "error");
    }
    timer = window.setTimeout(poll, reindex ? FAST_MS : POLL_MS);
  }

  async function startReindex() {
    const button = $("reindex-now-button");
    button.disabled = true;
    try {
      const before = await api("GET", "/api/memory/engine-status");
      const r = await api("POST", "/api/memory/reindex", {
        force: $("reindex-force").checked,
        target: $("reindex-target").value,
      });
      if (r.started) {
        reindex = { baseline: before.reindex.processed, total: r.pending };
        $("reindex-progress").dataset.state = "running";
        say($("reindex-message"), `Started: ${r.pending} pending.`, "ok");
      } else {
        say($("reindex-message"), `Not started: ${r.reason || "nothing to do"}.`, "warn");
      }
    } catch (err) {
      say($("reindex-message"), errorText(err), "error");
    } finally {
      button.disabled = false;
      poll();
    }
  }

  // -- embedding and rerank settings ---------------------------------------------------

  async function saveWith(message, changes, done) {
    try {
      const s = await saveSettings(changes);
      say(message, done(s), "ok");
      poll();
    } catch (err) {
      say(message, errorText(err), "error");
    }
  }

  function bindSwitch(testid, field, message, label) {
    const sw = $(testid);
    sw.addEventListener("click", () => saveWith($(message), { [field]: !isOn(sw) }, (s) => {
      setSwitch(sw, s[field]);
      return `${label} ${s[field] ? "on" : "off"}.`;
    }));
  }

  async function loadProviders() {
    let providers = [];
    try {
      providers = (await api("GET", "/api/memory/embedding-providers")).providers;
    } catch (_err) {
      return;
    }
    const remote = providers.filter((p) => p.hasKey && !["transformers", "static"].includes(p.provider));
    const models = remote.flatMap((p) => p.models);
    const select = $("embedding-provider-model");
    const current = Studio.initial.settings.embeddingProviderModel || "";
    const ids = new Set(models.map((m) => m.id));
    if (current) ids.add(current);
    select.replaceChildren(h("option", { value: "" }, "(none)"),
      ...[...ids].map((id) => h("option", { value: id }, id)));
    select.value = current;
    document.getElementById("rerank-models").replaceChildren(...models.map((m) => h("option", { value: m.id })));
  }

  // -- Qdrant ----------------------------------------------------------------------------

  const qmsg = $("qdrant-message");
  let qconfig = null;
  const qfields = { host: "qdrant-host", port: "qdrant-port", collection: "qdrant-collection",
    path: "qdrant-path", quantization: "qdrant-quantization" };

  function fillQdrant(c) {
    qconfig = c;
    setSwitch($("qdrant-enabled-switch"), c.enabled);
    for (const [name, testid] of Object.entries(qfields)) {
      $(testid).value = c[name] === null || c[name] === undefined ? "" : String(c[name]);
    }
    $("qdrant-api-key-state").textContent = c.hasApiKey ? `(stored: ${c.apiKeyMasked || "set"})` : "(none stored)";
    $("qdrant-status-badge").textContent = c.enabled ? "enabled" : "disabled";
  }

  function qdrantFailed(prefix, err) {
    const missing = err instanceof Studio.ApiError && err.status === 404;
    if (missing) $("qdrant-status-badge").textContent = "unavailable";
    const hint = missing ? " (this server has no Qdrant support)" : "";
    say(qmsg, `${prefix}: ${errorText(err)}${hint}`, "error");
  }

  async function loadQdrant() {
    try {
      fillQdrant(await api("GET", "/api/settings/qdrant"));
    } catch (err) {
      qdrantFailed("Qdrant settings unavailable", err);
    }
  }

  function qdrantChanges() {
    const changes = {};
    for (const [name, testid] of Object.entries(qfields)) {
      const raw = $(testid).value.trim();
      const value = name === "port" ? Number(raw) : raw;
      const before = qconfig ? qconfig[name] ?? "" : undefined;
      if (qconfig && String(before) === String(value)) continue;
      if (name === "port" && (!Number.isInteger(value) || value < 1 || value > 65535)) {
        throw new Studio.ApiError("Port must be a whole number from 1 to 65535.", 400);
      }
      changes[name] = value;
    }
    const mode = $("qdrant-api-key-mode").value;
    if (mode === "remove") changes.apiKey = "";
    if (mode === "replace") {
      const key = $("qdrant-api-key").value;
      if (!key) throw new Studio.ApiError("Type the new API key, or choose keep.", 400);
      changes.apiKey = key;
    }
    return changes;
  }

  async function qdrantPut(changes, done) {
    try {
      fillQdrant(await api("PUT", "/api/settings/qdrant", changes));
      $("qdrant-api-key").value = "";
      $("qdrant-api-key-mode").value = "keep";
      $("qdrant-api-key").disabled = true;
      say(qmsg, done, "ok");
      poll();
    } catch (err) {
      qdrantFailed("Could not save Qdrant settings", err);
    }
  }

  async function qdrantHealth() {
    try {
      const r = await api("GET", "/api/settings/qdrant/health");
      say(qmsg, r.ok ? `Connected to Qdrant (${Number(r.latencyMs).toFixed(1)} ms).`
        : `Connection failed: ${r.error || "unknown error"}`, r.ok ? "ok" : "error");
    } catch (err) {
      qdrantFailed("Connection test failed", err);
    }
  }

  async function qdrantSearch() {
    const query = $("qdrant-search-query").value.trim();
    const owner = $("qdrant-search-owner").value;
    const topK = Number($("qdrant-search-topk").value);
    if (!query || !owner) return say(qmsg, "Type a query and choose an owner for the test search.", "warn");
    try {
      const r = await api("POST", "/api/settings/qdrant/search", { query, topK, apiKeyId: owner });
      const results = r.results || [];
      $("qdrant-search-results").replaceChildren(...results.map((x) => h("li",
        { class: "hit", "data-testid": "qdrant-search-hit" },
        h("span", { class: "small muted" }, `score ${fmtScore(x.score)} `),
        h("span", { class: "mono" }, x.key || x.memoryId || x.id || ""), " ",
        x.content || "")));
      say(qmsg, r.ok ? `Search returned ${results.length} results.` : `Search failed: ${r.error || "unknown error"}`,
        r.ok ? "ok" : "error");
    } catch (err) {
      qdrantFailed("Test search failed", err);
    }
  }

  async function qdrantCleanup() {
    try {
      const r = await api("POST", "/api/settings/qdrant/cleanup", {});
      say(qmsg, r.ok ? `Cleanup removed ${r.deletedCount} points (retention ${r.retentionDays} days).`
        : `Cleanup failed: ${r.error || "unknown error"}`, r.ok ? "ok" : "error");
    } catch (err) {
      qdrantFailed("Cleanup failed", err);
    }
  }

  // -- wiring ---------------------------------------------------------------------------

  $("reindex-now-button").addEventListener("click", startReindex);
  $("embedding-source-select").addEventListener("change", (e) =>
    saveWith($("embedding-message"), { embeddingSource: e.target.value },
      (s) => `Embedding source: ${s.embeddingSource}.`));
  $("embedding-provider-model").addEventListener("change", (e) =>
    saveWith($("embedding-message"), { embeddingProviderModel: e.target.value || null },
      (s) => `Remote model: ${s.embeddingProviderModel || "none"}.`));
  bindSwitch("static-enabled-toggle", "staticEnabled", "embedding-message", "Static embeddings");
  bindSwitch("transformers-enabled-toggle", "transformersEnabled", "embedding-message", "Transformers");
  bindSwitch("rerank-enabled-toggle", "rerankEnabled", "rerank-message", "Rerank");
  $("rerank-save").addEventListener("click", () =>
    saveWith($("rerank-message"), { rerankProviderModel: $("rerank-provider-model").value.trim() || null },
      (s) => `Rerank model: ${s.rerankProviderModel || "none"}.`));
  $("qdrant-enabled-switch").addEventListener("click", () => {
    const on = !isOn($("qdrant-enabled-switch"));
    qdrantPut({ enabled: on }, on ? "Qdrant enabled." : "Qdrant disabled.");
  });
  $("qdrant-save").addEventListener("click", () => {
    try {
      qdrantPut(qdrantChanges(), "Qdrant settings saved.");
    } catch (err) {
      say(qmsg, errorText(err), "error");
    }
  });
  $("qdrant-api-key-mode").addEventListener("change", (e) => {
    $("qdrant-api-key").disabled = e.target.value !== "replace";
  });
  $("qdrant-test-connection").addEventListener("click", qdrantHealth);
  $("qdrant-search-test").addEventListener("click", qdrantSearch);
  $("qdrant-cleanup").addEventListener("click", qdrantCleanup);
  document.addEventListener("studio:settings", (e) => {
    const s = e.detail;
    setSwitch($("static-enabled-toggle"), s.staticEnabled);
    setSwitch($("transformers-enabled-toggle"), s.transformersEnabled);
    setSwitch($("rerank-enabled-toggle"), s.rerankEnabled);
    $("embedding-source-select").value = s.embeddingSource;
  });

  poll();
  loadProviders();
  loadQdrant();
})();

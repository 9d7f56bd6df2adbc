/* Playground tab: a retrieve-preview run with its ranking and resolution. */
"use strict";

(() => {
  const { api, h, $, say, errorText, fmtScore, show } = Studio;
  const query = $("playground-query-input");
  const submit = $("playground-submit");
  const budget = $("playground-budget-input");
  const error = $("playground-error");

  function syncSubmit() {
    submit.disabled = query.value.trim() === "";
  }

  function hit(m, rank) {
    return h(
      "li",
      { class: "hit", "data-testid": "playground-hit", "data-id": m.id, "data-rank": rank,
        "data-tier": m.tier },
      h(
        "div",
        { class: "hit-head" },
        h("b", { class: "rank" }, `#${rank}`),
        h("span", { class: "mono key" }, m.key),
        h("span", { class: `badge type-${m.type}` }, m.type),
        h("span", { class: "badge tier", "data-testid": "playground-hit-tier" }, m.tier),
      ),
      h("div", { class: "hit-content" }, m.content),
      h("div", { class: "small", "data-testid": "playground-hit-reason" }, m.reason || ""),
      h(
        "div",
        { class: "hit-scores small muted" },
        h("span", { "data-testid": "playground-hit-score" }, `score ${fmtScore(m.score)}`),
        h("span", {}, `tokens ${m.tokens}`),
        h("span", {}, `vec ${fmtScore(m.vecScore)}`),
        h("span", {}, `fts ${fmtScore(m.ftsScore)}`),
      ),
    );
  }

  function showResolution(res) {
    const panel = $("playground-resolution");
    for (const dd of panel.querySelectorAll("dd[data-field]")) {
      const raw = res[dd.dataset.field];
      const value = Array.isArray(raw) ? (raw.length ? raw.join(", ") : null) : raw;
      dd.textContent =
        value === null || value === undefined ? "–" : typeof value === "boolean" ? (value ? "yes" : "no") : String(value);
    }
  }

  async function run(event) {
    event.preventDefault();
    const text = query.value.trim();
    const maxTokens = Number(budget.value);
    if (!text) return say(error, "Type a query first.", "error");
    if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > 16000) {
      return say(error, "The budget must be a whole number of tokens from 1 to 16000.", "error");
    }
    const payload = { query: text, strategy: $("playground-strategy-select").value, maxTokens };
    const owner = $("playground-owner-select").value;
    if (owner) payload.apiKeyId = owner;
    const user = $("playground-user-input").value.trim();
    if (user) payload.userId = user;  // their memories and the key's shared ones
    submit.disabled = true;
    try {
      const r = await api("POST", "/api/memory/retrieve-preview", payload);
      say(error, "", "");
      $("playground-results").replaceChildren(...r.memories.map((m, i) => hit(m, i + 1)));
      $("playground-dropped").replaceChildren(...(r.dropped || []).map((m) => h(
        "li", { class: "hit", "data-testid": "playground-dropped-hit", "data-id": m.id },
        h("div", { class: "hit-content" }, m.content),
        h("div", { class: "small" }, m.reason),
      )));
      const profile = r.profile || { memories: [], dropped: [], totalTokensUsed: 0, budgetMaxTokens: 0 };
      $("playground-profile").replaceChildren(
        ...profile.memories.map((m) => h(
          "li", { class: "hit", "data-testid": "playground-profile-hit", "data-id": m.id },
          h("span", { class: "badge" }, m.pinned === true ? "pinned" : (m.attribute || m.tier)),
          h("div", { class: "hit-content" }, m.content))),
        ...profile.dropped.map((m) => h(
          "li", { class: "hit muted", "data-testid": "playground-profile-dropped", "data-id": m.id },
          h("div", { class: "hit-content" }, m.content), h("div", { class: "small" }, m.reason))));
      $("playground-profile-tokens").textContent =
        `${profile.totalTokensUsed} / ${profile.budgetMaxTokens} tokens`;
      show($("playground-empty"), r.memories.length === 0);
      $("playground-empty").textContent = "No memory matched: nothing would be injected.";
      $("playground-total-tokens").textContent =
        `${r.totalTokensUsed} / ${r.budgetMaxTokens} tokens`;
      const fill = $("playground-budget-fill");
      fill.style.width = `${Math.min(100, (100 * r.totalTokensUsed) / Math.max(1, r.budgetMaxTokens))}%`;
      showResolution(r.resolution);
    } catch (err) {
      say(error, errorText(err), "error");
    } finally {
      syncSubmit();
    }
  }

  query.addEventListener("input", syncSubmit);
  $("playground-submit").form.addEventListener("submit", run);
  syncSubmit();
  query.focus();
})();

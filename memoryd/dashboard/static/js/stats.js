/* Memories tab: the read cache card. The cache holds memories read by id
   (GET /api/memory/{id}, MCP, this page's edit, pin and delete), per server process;
   chat requests search the store and never use it, so a busy gateway can show no
   lookups at all. No rate until something was looked up: "0.0%" would read as broken. */
"use strict";

(() => {
  const { api, $, errorText } = Studio;
  const value = $("stat-hit-rate");
  const detail = $("stat-hit-detail");

  function shown(cache) {
    const hits = Number(cache.hits) || 0;
    const misses = Number(cache.misses) || 0;
    const lookups = hits + misses;
    const card = $("stat-cache-card");
    card.dataset.state = lookups ? "counted" : "none";
    if (!lookups) {
      value.textContent = "none yet";
      detail.textContent = "No memory looked up by id since the server started " +
        "(chat requests search instead, without this cache).";
      return;
    }
    value.textContent = `${((hits / lookups) * 100).toFixed(1)}%`;
    detail.textContent = `${hits.toLocaleString("en-US")} of ${lookups.toLocaleString("en-US")} ` +
      "lookups by id came from the cache, since the server started.";
  }

  async function load() {
    try {
      const status = await api("GET", "/api/memory/engine-status");
      shown(status.readCache || {});
    } catch (err) {
      value.textContent = "–";
      detail.textContent = errorText(err);
    }
  }

  load();
  window.setInterval(load, 30000);
})();

/* Memories tab: where a memory came from and which recent requests carried it. */
"use strict";

(() => {
  const { api, $, errorText } = Studio;
  const box = $("memory-provenance");
  let shown = null;  // the memory whose provenance is being fetched

  const WAYS = { rest: "the REST API", mcp: "MCP", import: "an import" };

  function said(meta) {
    const way = meta && WAYS[meta.via];
    if (way) return `Written through ${way}${meta.saidAt ? ` at ${meta.saidAt}` : ""}.`;
    if (!meta || meta.via !== "gateway") return "Written through the API, MCP, the CLI or an import.";
    const who = meta.source === "assistant" ? "the assistant" : "the person";
    return `Said by ${who} in request ${meta.requestId || "(not kept)"} at ${meta.saidAt || "?"}.`;
  }

  document.addEventListener("studio:memory-opened", async (e) => {
    const memory = e.detail;
    shown = memory;
    box.hidden = !memory;
    if (!memory) return;
    box.textContent = said(memory.metadata);
    try {
      const r = await api("GET", `/api/requests?memoryId=${encodeURIComponent(memory.id)}&limit=5`);
      if (shown !== memory) return;
      const last = r.requests[0];
      box.textContent = `${said(memory.metadata)} Carried in ${r.accessCount} requests` +
        (last ? `; last in request ${last.requestId} at ${last.at} (${last.carried.reason || last.carried.tier}).`
          : "; none in this server's recent window.");
    } catch (err) {
      if (shown === memory) box.textContent = `${said(memory.metadata)} (${errorText(err)})`;
    }
  });
})();

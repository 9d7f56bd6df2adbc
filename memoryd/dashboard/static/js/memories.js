/* Memories tab: list, filters, pagination, add/edit/delete, export/import, compact. */
"use strict";

(() => {
  const { api, h, $, say, toast, errorText, fmtTime, debounce, show } = Studio;
  const state = { page: 1, limit: 20, q: "", type: "", owner: "", user: "", history: false,
    totalPages: 1, seq: 0 };
  const { ownerLabel } = Studio;
  const rows = new Map();
  const body = document.getElementById("memories-body");
  const message = $("memories-message");

  // -- list -----------------------------------------------------------------------------

  function row(m) {
    rows.set(m.id, m);
    return h(
      "tr",
      { "data-testid": `memory-row-${m.id}`, "data-id": m.id, class: m.supersededAt ? "superseded" : null },
      h("td", {}, h("span", { class: `badge type-${m.type}` }, m.type), m.supersededAt ? h("span", {
        class: "badge replaced", "data-testid": "memory-replaced-badge", title: m.supersededBy
          ? "a newer memory replaced it (History)" : "retracted: nothing replaced it" },
      m.supersededBy ? "replaced" : "retracted") : ""),
      h("td", { class: "mono key" }, m.key),
      h("td", { class: "content", title: m.content }, m.content),
      h("td", { class: "mono clip", title: m.apiKeyId, "data-testid": "memory-owner-cell" },
        ownerLabel(m.apiKeyId)),
      // ids can be 200 characters: cut to the column, whole on hover (Edit stays in view)
      h("td", { class: "mono muted clip", title: m.userId || "", "data-testid": "memory-user-cell" },
        m.userId || "shared"),
      h("td", { class: "mono muted clip", title: m.sessionId || "" }, m.sessionId || "–"),
      h("td", { class: "nowrap muted" }, fmtTime(m.createdAt)),
      h(
        "td",
        { class: "actions nowrap" },
        h("button", { type: "button", class: "btn small", "data-testid": `edit-memory-${m.id}`,
          "aria-label": `Edit ${m.key}`, onclick: () => openModal(m) }, "Edit"),
        pinButton(m),
        h("button", { type: "button", class: "btn small", "data-testid": `history-memory-${m.id}`, "aria-label":
          `History of ${m.key}`, onclick: () => document.dispatchEvent(  // history.js
          new CustomEvent("studio:memory-history", { detail: m })) }, "History"),
        h("button", { type: "button", class: "btn small danger", "data-testid": `delete-memory-${m.id}`,
          "aria-label": `Delete ${m.key}`, onclick: () => askDelete(m) }, "Delete"),
      ),
    );
  }

  // Pinned: in every request of its owner (the profile); Unpin lets its attribute decide.
  function pinButton(m) {
    const pinned = (m.metadata || {}).pinned === true;
    return h("button", {
      type: "button", class: "btn small", "data-testid": `${pinned ? "unpin" : "pin"}-memory-${m.id}`,
      "aria-label": `${pinned ? "Unpin" : "Pin"} ${m.key}`, "aria-pressed": String(pinned),
      onclick: async () => {
        try {
          await api("POST", `/api/memory/${encodeURIComponent(m.id)}/pin`, { pinned: pinned ? null : true });
          toast(pinned ? "Unpinned" : "Pinned into the profile");
          await load();
        } catch (err) {
          say(message, errorText(err), "error");
        }
      },
    }, pinned ? "Unpin" : "Pin");
  }

  async function load() {
    const seq = ++state.seq;
    const params = new URLSearchParams({ page: String(state.page), limit: String(state.limit) });
    if (state.q) params.set("q", state.q);
    if (state.type) params.set("type", state.type);
    if (state.owner) params.set("apiKeyId", state.owner);
    if (state.user) params.set("userId", state.user);
    if (state.history) params.set("includeSuperseded", "true");
    try {
      const data = await api("GET", `/api/memory?${params}`);
      if (seq !== state.seq) return; // a newer request is on its way
      if (data.data.length === 0 && state.page > 1 && data.totalPages >= 1) {
        state.page = Math.min(state.page - 1, data.totalPages);
        return load();
      }
      rows.clear();
      body.replaceChildren(...data.data.map(row));
      show($("memories-empty"), data.total === 0);
      state.totalPages = Math.max(1, data.totalPages);
      $("memories-page-info").textContent =
        `Page ${data.page} of ${state.totalPages} (${data.total} total)`;
      $("memories-prev").disabled = state.page <= 1;
      $("memories-next").disabled = state.page >= state.totalPages;
      $("stat-total").textContent = String(data.stats.total);
      $("stat-tokens").textContent = data.stats.tokensUsed.toLocaleString("en-US");
      $("stat-by-type").textContent = Object.entries(data.stats.byType || {})
        .map(([t, n]) => `${t} ${n}`).join(" · ");
      say(message, "", "");
      // the profile panel follows the same owner and end user (profile.js)
      document.dispatchEvent(new CustomEvent("studio:memories-changed",
        { detail: { owner: state.owner, user: state.user } }));
    } catch (err) {
      if (seq === state.seq) say(message, errorText(err), "error");
    }
  }

  async function checkHealth() {
    const dot = $("memory-health-dot");
    const text = $("memory-health-text");
    try {
      const r = await api("GET", "/api/memory/health");
      // Amber: the disk is full (reads work, writes wait for space); red: not working.
      dot.dataset.state = r.working ? "ok" : r.storageFault === "storage_full" ? "warn" : "fail";
      text.textContent = r.working
        ? `working (${Number(r.latencyMs).toFixed(1)} ms)`
        : `not working: ${r.error || "unknown"}`;
      dot.title = r.reason || r.error || text.textContent;
    } catch (err) {
      dot.dataset.state = "fail";
      text.textContent = errorText(err);
      dot.title = text.textContent;
    }
  }

  // -- add / edit modal ---------------------------------------------------------------

  const modal = $("memory-modal");
  const field = (name) => $(`memory-modal-${name}`);
  let editing = null;

  function openModal(memory) {
    editing = memory || null;
    $("memory-modal-title").textContent = editing ? "Edit memory" : "Add memory";
    field("owner").value = editing ? editing.apiKeyId : state.owner;
    field("owner").disabled = Boolean(editing);
    field("type").value = editing ? editing.type : "factual";
    field("key").value = editing ? editing.key : "";
    field("session").value = editing ? editing.sessionId : "";
    field("session").disabled = Boolean(editing);
    field("user").value = editing ? editing.userId || "" : state.user;
    field("user").disabled = Boolean(editing);  // PUT cannot move a memory to another end user
    field("user-note").hidden = !editing;
    field("content").value = editing ? editing.content : "";
    field("metadata").value = JSON.stringify(editing ? editing.metadata : {}, null, 2);
    say(field("error"), "", "");
    document.dispatchEvent(new CustomEvent("studio:memory-opened", { detail: editing }));  // provenance.js
    modal.hidden = false;
    (editing ? field("content") : field("owner").value ? field("key") : field("owner")).focus();
  }

  function closeModal() {
    modal.hidden = true;
    editing = null;
  }

  function readForm() {
    const problems = [];
    const owner = field("owner").value.trim();
    const key = field("key").value.trim();
    const content = field("content").value.trim();
    if (!editing && !owner) problems.push("Owner is required.");
    if (!key && editing) problems.push("Key is required.");  // new memories may derive one
    if (!content) problems.push("Content is required.");
    let metadata = {};
    const raw = field("metadata").value.trim();
    if (raw) {
      try {
        metadata = JSON.parse(raw);
      } catch (_err) {
        problems.push("Metadata is not valid JSON.");
      }
      if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
        problems.push("Metadata must be a JSON object, like {\"source\": \"manual\"}.");
      }
    }
    return { problems, owner, key, content, metadata, type: field("type").value,
      session: field("session").value.trim(), user: field("user").value.trim() };
  }

  async function save(event) {
    event.preventDefault();
    const f = readForm();
    if (f.problems.length) return say(field("error"), f.problems.join(" "), "error");
    const button = field("save");
    button.disabled = true;
    try {
      if (editing) {
        await api("PUT", `/api/memory/${encodeURIComponent(editing.id)}`,
          { type: f.type, key: f.key, content: f.content, metadata: f.metadata });
        toast("Memory updated.");
      } else {
        const payload = { apiKeyId: f.owner, type: f.type, content: f.content,
          metadata: f.metadata };
        if (f.key) payload.key = f.key;  // omitted: the server derives it from the content
        if (f.session) payload.sessionId = f.session;
        if (f.user) payload.userId = f.user;
        await api("POST", "/api/memory", payload);
        toast("Memory saved.");
        if (!Studio.initial.owners.includes(f.owner)) await Studio.refreshOwners();
      }
      closeModal();
      await load();
    } catch (err) {
      say(field("error"), errorText(err), "error");
    } finally {
      button.disabled = false;
    }
  }

  // -- delete -------------------------------------------------------------------------

  const confirmModal = $("confirm-modal");
  let deleting = null;

  function askDelete(memory) {
    deleting = memory;
    $("confirm-text").textContent = `Delete "${memory.key}" of ${memory.apiKeyId}? This cannot be undone.`;
    say($("confirm-error"), "", "");
    confirmModal.hidden = false;
    $("confirm-cancel").focus();
  }

  async function confirmDelete() {
    if (!deleting) return;
    const button = $("confirm-delete");
    button.disabled = true;
    try {
      await api("DELETE", `/api/memory/${encodeURIComponent(deleting.id)}`);
      confirmModal.hidden = true;
      deleting = null;
      toast("Memory deleted.");
      await load();
    } catch (err) {
      say($("confirm-error"), errorText(err), "error");
    } finally {
      button.disabled = false;
    }
  }

  // -- export / import ----------------------------------------------------------------

  function exportAll() {
    if (!state.owner) {
      return say(message, "Choose an owner in the owner filter to export all of its memories.", "warn");
    }
    const link = h("a", { href: `/api/memory/export?apiKeyId=${encodeURIComponent(state.owner)}`,
      download: `memoryd-${state.owner}.jsonl` });
    document.body.append(link);
    link.click();
    link.remove();
    say(message, `Exporting every memory of ${state.owner} as JSON Lines…`, "ok");
  }

  function toJsonl(text) {
    const trimmed = text.trim();
    if (!trimmed.startsWith("[")) return text;
    const items = JSON.parse(trimmed); // a JSON array of memories: one line each
    return items.map((item) => JSON.stringify(item)).join("\n") + "\n";
  }

  async function importFile(file) {
    let text;
    try {
      text = toJsonl(await file.text());
    } catch (_err) {
      return say($("import-result"), "The file is neither JSON Lines nor a JSON array.", "error");
    }
    const target = state.owner ? `?apiKeyId=${encodeURIComponent(state.owner)}` : "";
    try {
      const r = await api("POST", `/api/memory/import${target}`, text,
        { contentType: "application/x-ndjson" });
      const errors = r.errors.length;
      const e0 = r.errors[0];
      const first = errors
        ? ` First error${e0.line ? ` (line ${e0.line})` : ""}: ${e0.message || JSON.stringify(e0)}`
        : "";
      say($("import-result"), `Import finished: ${r.imported} imported, ${r.updated} updated, ` +
        `${r.skipped} skipped, ${errors} errors.${first}`, errors ? "warn" : "ok");
      await Studio.refreshOwners();
      await load();
    } catch (err) {
      say($("import-result"), `Import failed: ${errorText(err)}`, "error");
    }
  }

  // -- compact old --------------------------------------------------------------------

  const compact = $("compact-modal");
  let preview = null;

  function compactRequest(dryRun) {
    const owner = $("compact-owner").value;
    const days = Number($("compact-days-input").value);
    if (!owner) throw new Studio.ApiError("Choose the owner whose old memories to compact.", 400);
    if (!Number.isInteger(days) || days < 1 || days > 365) {
      throw new Studio.ApiError("The age must be a whole number of days from 1 to 365.", 400);
    }
    return { apiKeyId: owner, olderThanDays: days, dryRun };
  }

  async function runPreview() {
    $("compact-confirm").disabled = true;
    say($("compact-result"), "", "");
    preview = null;
    try {
      const request = compactRequest(true);
      say($("compact-error"), "", "");
      const r = await api("POST", "/api/memory/summarize", request);
      preview = request;
      const list = $("compact-candidates");
      list.replaceChildren(...r.candidates.map((c) =>
        h("li", { "data-testid": "compact-candidate" }, h("span", { class: "mono" }, c.key || c.id),
          " ", h("span", { class: "muted" }, c.content ? `— ${c.content}` : ""))));
      // one summary per end user of the key, and one of its shared memories: the
      // server never merges two people's memories into one
      const groups = new Set(r.candidates.map((c) => c.userId || "")).size;
      const into = groups > 1 ? `${groups} summaries, one per end user (shared ones apart)` : "one";
      $("compact-summary").textContent = r.candidates.length
        ? `${r.candidates.length} memories (${r.totalTokens} tokens) would be summarized into ${into}.`
        : "Nothing to compact: no memory of this owner is that old.";
      show($("compact-preview"), true);
      $("compact-confirm").disabled = r.candidates.length === 0;
    } catch (err) {
      show($("compact-preview"), false);
      say($("compact-error"), errorText(err), "error");
    }
  }

  async function runCompact() {
    if (!preview) return;
    $("compact-confirm").disabled = true;
    try {
      const r = await api("POST", "/api/memory/summarize", { ...preview, dryRun: false });
      const ids = r.summaryIds && r.summaryIds.length ? r.summaryIds : [r.summaryId].filter(Boolean);
      say($("compact-result"), `Compacted ${r.deletedCount} memories into ` +
        (ids.length > 1 ? `${ids.length} summaries: ${ids.join(", ")}.` : `summary ${ids[0] || "(none)"}.`),
        "ok");
      show($("compact-preview"), false);
      preview = null;
      await load();
    } catch (err) {
      say($("compact-error"), errorText(err), "error");
    }
  }

  function openCompact() {
    $("compact-owner").value = state.owner;
    show($("compact-preview"), false);
    say($("compact-error"), "", "");
    say($("compact-result"), "", "");
    $("compact-confirm").disabled = true;
    compact.hidden = false;
    if (state.owner) runPreview();
  }

  // -- wiring -------------------------------------------------------------------------

  const reload = () => { state.page = 1; load(); };
  const search = debounce(() => { state.q = $("memory-search-input").value.trim(); reload(); }, 300);
  $("memory-search-input").addEventListener("input", search);
  $("memory-type-filter").addEventListener("change", (e) => { state.type = e.target.value; reload(); });
  $("memory-history-filter").addEventListener("change", (e) => { state.history = e.target.checked; reload(); });
  $("memory-owner-filter").addEventListener("change", (e) => { state.owner = e.target.value; reload(); });
  $("memory-user-filter").addEventListener("input", debounce((e) => {
    state.user = e.target.value.trim();
    reload();
  }, 250));
  $("memories-page-size").addEventListener("change", (e) => { state.limit = Number(e.target.value); reload(); });
  $("memories-prev").addEventListener("click", () => { if (state.page > 1) { state.page -= 1; load(); } });
  $("memories-next").addEventListener("click", () => { if (state.page < state.totalPages) { state.page += 1; load(); } });
  $("add-memory-button").addEventListener("click", () => openModal(null));
  document.getElementById("memory-form").addEventListener("submit", save);
  $("memory-modal-cancel").addEventListener("click", closeModal);
  $("confirm-delete").addEventListener("click", confirmDelete);
  document.addEventListener("studio:memories-reload", () => load());  // erase.js
  $("confirm-cancel").addEventListener("click", () => { confirmModal.hidden = true; deleting = null; });
  $("export-memories-button").addEventListener("click", exportAll);
  $("import-memories-button").addEventListener("click", () => $("import-file-input").click());
  $("import-file-input").addEventListener("change", (e) => {
    const file = e.target.files && e.target.files[0];
    if (file) importFile(file);
    e.target.value = "";
  });
  $("compact-old-button").addEventListener("click", openCompact);
  $("compact-preview-button").addEventListener("click", runPreview);
  $("compact-owner").addEventListener("change", runPreview);
  $("compact-confirm").addEventListener("click", runCompact);
  $("compact-cancel").addEventListener("click", () => { compact.hidden = true; });
  $("memory-health-check").addEventListener("click", checkHealth);
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    if (!modal.hidden) closeModal();
    confirmModal.hidden = true;
    compact.hidden = true;
  });

  document.addEventListener("studio:profile-changed", () => load());

  load();
  checkHealth();
  window.setInterval(checkHealth, 30000);
})();

/* Memories tab: a memory's history. A newer statement of the same thing
   ("I moved to Porto") keeps the older one as history: supersededAt, and supersededBy,
   the id of the memory that replaced it (none: retracted). Shown oldest first, in a
   dialog from a row's History button and in the edit dialog: the memories it replaced
   (and what those replaced), itself, and the chain of memories that replaced it.

   What a memory replaced is found by listing the owner's (end user's) memories with
   includeSuperseded and following supersededBy back; an owner with no replaced memory at
   all costs two one-row requests. What replaced it: its supersededBy, by id. */
"use strict";

(() => {
  const { api, h, $, errorText, fmtTime } = Studio;
  const PAGE = 200;  // the list route's largest page
  const MAX_PAGES = 25;  // at most the newest 5,000 memories are searched
  const LONGEST = 100;  // links followed forward, at most
  const modal = $("history-modal");
  const inline = $("memory-history");
  const shown = new WeakMap();  // element -> the memory it is filled for (newest wins)

  function listPath(memory, extra) {
    const params = new URLSearchParams({ apiKeyId: memory.apiKeyId, ...extra });
    if (memory.userId) params.set("userId", memory.userId);  // none: every end user's
    return `/api/memory?${params}`;
  }

  /** The replaced memories of the owner and end user: { found: Map, truncated }. */
  async function replacedOnes(memory) {
    const found = new Map();
    const all = await api("GET", listPath(memory, { includeSuperseded: "true", limit: "1" }));
    const current = await api("GET", listPath(memory, { limit: "1" }));
    if (all.total === current.total) return { found, truncated: false };  // no history at all
    const user = memory.userId || "";
    for (let page = 1; page <= MAX_PAGES; page += 1) {
      const r = await api("GET", listPath(memory,
        { includeSuperseded: "true", limit: String(PAGE), page: String(page) }));
      for (const m of r.data) {
        if (m.supersededAt && (m.userId || "") === user) found.set(m.id, m);
      }
      if (page >= r.totalPages) return { found, truncated: false };
    }
    return { found, truncated: true };
  }

  /** { earlier, self, later, truncated }: earlier oldest first; later in order. */
  async function chainOf(memory) {
    const { found, truncated } = await replacedOnes(memory);
    const self = found.get(memory.id) || memory;
    const replacedBy = new Map();  // id -> the memories it replaced
    for (const m of found.values()) {
      if (!m.supersededBy) continue;
      if (!replacedBy.has(m.supersededBy)) replacedBy.set(m.supersededBy, []);
      replacedBy.get(m.supersededBy).push(m);
    }
    const seen = new Set([self.id]);
    const earlier = [];
    let frontier = [self.id];
    while (frontier.length) {  // what it replaced, what those replaced, ...
      const next = [];
      for (const id of frontier) {
        for (const m of replacedBy.get(id) || []) {
          if (seen.has(m.id)) continue;
          seen.add(m.id);
          earlier.push(m);
          next.push(m.id);
        }
      }
      frontier = next;
    }
    earlier.sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)) ||
      String(a.supersededAt).localeCompare(String(b.supersededAt)));
    const later = [];
    let at = self;
    while (at.supersededBy && !seen.has(at.supersededBy) && later.length < LONGEST) {
      const id = at.supersededBy;
      seen.add(id);
      let next = found.get(id);
      if (!next) {
        try {
          next = (await api("GET", `/api/memory/${encodeURIComponent(id)}`)).memory;
        } catch (err) {
          if (err.status !== 404) throw err;
          later.push({ id, gone: true });  // deleted or erased since
          break;
        }
      }
      later.push(next);
      at = next;
    }
    return { earlier, self, later, truncated };
  }

  function status(m) {
    if (!m.supersededAt) return "current";
    return m.supersededBy
      ? `replaced ${fmtTime(m.supersededAt)}`
      : `retracted ${fmtTime(m.supersededAt)}, nothing replaced it`;
  }

  const LABELS = { earlier: "it replaced", self: "this memory", later: "replaced it" };

  function item(m, relation) {
    const attrs = { class: `hit history-item ${relation}`, "data-testid": "history-item",
      "data-relation": relation, "data-id": m.id, "aria-current": relation === "self" ? "true" : null };
    if (m.gone) {
      return h("li", attrs, h("span", { class: "badge" }, LABELS[relation]), " ",
        h("span", { class: "muted", "data-testid": "history-content" },
          `Memory ${m.id}: deleted or erased since.`));
    }
    return h(
      "li", attrs,
      h("div", { class: "hit-head" },
        h("span", { class: "badge" }, LABELS[relation]),
        h("span", { class: `badge type-${m.type}` }, m.type),
        h("span", { class: "mono small" }, m.key),
        h("span", { class: "muted small", "data-testid": "history-dates" },
          `created ${fmtTime(m.createdAt)} · ${status(m)}`)),
      h("div", { class: "hit-content", "data-testid": "history-content" }, m.content),
    );
  }

  function summary(chain) {
    const n = chain.earlier.length;
    const before = n ? `It replaced ${n === 1 ? "1 earlier memory" : `${n} earlier memories`}`
      : "It replaced no earlier memory";
    const self = chain.self;
    const after = !self.supersededAt ? "nothing has replaced it: it is current."
      : self.supersededBy ? `a newer memory replaced it ${fmtTime(self.supersededAt)}.`
        : `it was retracted ${fmtTime(self.supersededAt)}, with nothing in its place.`;
    return `${before}; ${after}`;
  }

  async function fill(into, memory, title) {
    shown.set(into, memory);
    const head = () => (title ? h("h3", {}, title) : "");
    into.replaceChildren(head(), h("p", { class: "muted small", "data-testid": "history-summary" },
      "Looking for its history…"));
    try {
      const chain = await chainOf(memory);
      if (shown.get(into) !== memory) return;  // another memory was opened meanwhile
      const items = [
        ...chain.earlier.map((m) => item(m, "earlier")),
        item(chain.self, "self"),
        ...chain.later.map((m) => item(m, "later")),
      ];
      into.replaceChildren(
        head(),
        h("p", { class: "small", "data-testid": "history-summary" }, summary(chain)),
        items.length > 1 ? h("ol", { class: "hits history-list", "data-testid": "history-list" }, items) : "",
        chain.truncated ? h("p", { class: "muted small", "data-testid": "history-truncated" },
          `Searched the newest ${(PAGE * MAX_PAGES).toLocaleString("en-US")} memories of this ` +
          "owner: an older memory it replaced may be missing.") : "",
      );
    } catch (err) {
      if (shown.get(into) !== memory) return;
      into.replaceChildren(head(), h("p", { class: "alert error", "data-testid": "history-summary" },
        `History not available: ${errorText(err)}`));
    }
  }

  // -- the dialog (a row's History button, memories.js) and the edit dialog ------------

  function open(memory) {
    $("history-key").textContent = memory.key;
    modal.hidden = false;
    $("history-close").focus();
    fill($("history-body"), memory);
  }

  function close() {
    modal.hidden = true;
    shown.delete($("history-body"));
  }

  document.addEventListener("studio:memory-history", (e) => open(e.detail));
  document.addEventListener("studio:memory-opened", (e) => {
    const memory = e.detail;  // null: a new memory, which has no history yet
    inline.hidden = !memory;
    if (!memory) {
      shown.delete(inline);
      return inline.replaceChildren();
    }
    fill(inline, memory, "History");
  });
  $("history-close").addEventListener("click", close);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !modal.hidden) close();
  });
})();

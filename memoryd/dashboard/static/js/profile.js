/* Memories tab: the profile panel of the selected owner and end user. It
   follows the table's filters (the "studio:memories-changed" event memories.js sends
   after every load); a line is edited in place, or removed (kept out of the profile). */
"use strict";

(() => {
  const { api, h, $, say, toast, errorText } = Studio;
  const panel = $("profile-panel");
  const list = $("profile-list");
  let current = { owner: "", user: "" };
  let seq = 0;

  function item(m, dropped) {
    const input = h("input", {
      type: "text", class: "grow", value: m.content, maxlength: "10000",
      "aria-label": `Profile line ${m.key}`, "data-testid": `profile-input-${m.id}`,
    });
    const why = m.pinned === true ? "pinned" : (m.attribute || "");
    return h(
      "li",
      { class: dropped ? "profile-item dropped" : "profile-item", "data-testid": `profile-item-${m.id}` },
      h("span", { class: "badge", title: "why it is in the profile" }, why),
      input,
      dropped ? h("span", { class: "muted small" }, "over the budget") : "",
      h("button", {
        type: "button", class: "btn small", "data-testid": `profile-save-${m.id}`,
        onclick: () => saveLine(m, input.value),
      }, "Save"),
      h("button", {
        type: "button", class: "btn small danger", "data-testid": `profile-remove-${m.id}`,
        "aria-label": `Remove ${m.key} from the profile`, onclick: () => remove(m),
      }, "Remove"),
    );
  }

  async function load() {
    const mine = ++seq;
    if (!current.owner) {
      panel.hidden = true;
      return;
    }
    const params = new URLSearchParams({ apiKeyId: current.owner });
    if (current.user) params.set("userId", current.user);
    try {
      const p = await api("GET", `/api/memory/profile?${params}`);
      if (mine !== seq) return;
      list.replaceChildren(...p.memories.map((m) => item(m, false)),
        ...p.dropped.map((m) => item(m, true)));
      $("profile-owner").textContent = current.user ? `${current.owner} · ${current.user}` : current.owner;
      $("profile-budget").textContent =
        `${p.totalTokensUsed} of ${p.budgetMaxTokens} tokens` +
        (p.dropped.length ? `, ${p.dropped.length} over the budget` : "");
      $("profile-empty").hidden = p.memories.length + p.dropped.length > 0;
      panel.hidden = false;
    } catch (err) {
      if (mine === seq) say($("memories-message"), errorText(err), "error");
    }
  }

  async function saveLine(m, content) {
    const text = content.trim();
    if (!text) return say($("memories-message"), "A profile line cannot be empty.", "error");
    try {
      await api("PUT", `/api/memory/${encodeURIComponent(m.id)}`, { content: text });
      toast("Profile line saved.");
      document.dispatchEvent(new CustomEvent("studio:profile-changed"));
    } catch (err) {
      say($("memories-message"), errorText(err), "error");
    }
  }

  async function remove(m) {
    try {
      await api("POST", `/api/memory/${encodeURIComponent(m.id)}/unpin`);
      toast("Removed from the profile.");
      document.dispatchEvent(new CustomEvent("studio:profile-changed"));
    } catch (err) {
      say($("memories-message"), errorText(err), "error");
    }
  }

  document.addEventListener("studio:memories-changed", (e) => {
    current = { owner: e.detail.owner || "", user: e.detail.user || "" };
    load();
  });
})();

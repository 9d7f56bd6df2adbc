/* Memories tab: erase an owner, or one end user of it, with a receipt. */
"use strict";

(() => {
  const { api, $, say, errorText } = Studio;
  const message = $("memories-message");
  const modal = $("erase-modal");
  const current = { owner: "", user: "" };  // the list's filters (memories.js says)
  let erasing = null;
  let receipt = null;  // shown once the list has reloaded (a load clears the line)

  document.addEventListener("studio:memories-changed", (e) => {
    current.owner = e.detail.owner;
    current.user = e.detail.user;
    if (receipt) {
      say(message, receipt, "ok");
      receipt = null;
    }
  });

  function ask() {
    if (!current.owner) {
      return say(message, "Choose an owner in the owner filter (and an end user, to erase only them).", "warn");
    }
    erasing = { owner: current.owner, user: current.user || null };
    const who = erasing.user === null
      ? `every memory of ${erasing.owner}, all its end users`
      : `every memory of end user "${erasing.user}" of ${erasing.owner}`;
    $("erase-text").textContent =
      `Erase ${who}, with their history, keyword entries, vectors and queued extraction? ` +
      "This cannot be undone; a receipt records the counts, not the content.";
    $("erase-expected").textContent = erasing.user === null ? erasing.owner : erasing.user;
    $("erase-confirm-input").value = "";
    $("erase-confirm").disabled = true;
    say($("erase-error"), "", "");
    modal.hidden = false;
    $("erase-confirm-input").focus();
  }

  async function erase() {
    if (!erasing) return;
    const button = $("erase-confirm");
    button.disabled = true;
    const params = new URLSearchParams({ apiKeyId: erasing.owner });
    if (erasing.user !== null) params.set("userId", erasing.user);
    else params.set("all", "true");
    try {
      const { erasure } = await api("DELETE", `/api/memory?${params}`);
      modal.hidden = true;
      erasing = null;
      receipt = `Erased ${erasure.counts.memories} memories and ${erasure.counts.extractionJobs} ` +
        `queued jobs. Receipt ${erasure.id} (${erasure.erasedAt}).`;
      document.dispatchEvent(new CustomEvent("studio:memories-reload"));
    } catch (err) {
      say($("erase-error"), errorText(err), "error");
      button.disabled = false;
    }
  }

  $("erase-subject-button").addEventListener("click", ask);
  $("erase-confirm").addEventListener("click", erase);
  $("erase-cancel").addEventListener("click", () => { modal.hidden = true; erasing = null; });
  $("erase-confirm-input").addEventListener("input", (e) => {
    $("erase-confirm").disabled = !erasing || e.target.value.trim() !== $("erase-expected").textContent;
  });
})();

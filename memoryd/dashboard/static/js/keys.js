/* Keys tab: create (the secret is shown once), list, revoke, per-key memory toggle. */
"use strict";

(() => {
  const { api, h, $, say, toast, errorText, fmtTime, show } = Studio;
  const error = $("keys-error");
  const MEMORY = { "": null, true: true, false: false };

  function memorySelect(k) {
    const value = k.memoryEnabled === null || k.memoryEnabled === undefined ? "" : String(k.memoryEnabled);
    const select = h("select", { "data-testid": `key-memory-toggle-${k.id}`, "aria-label": `Memory for ${k.name}`,
      disabled: Boolean(k.revokedAt) },
      h("option", { value: "" }, "global setting"),
      h("option", { value: "true" }, "on"),
      h("option", { value: "false" }, "off"));
    select.value = value;
    select.addEventListener("change", async () => {
      try {
        const r = await api("PATCH", `/api/keys/${encodeURIComponent(k.id)}`,
          { memoryEnabled: MEMORY[select.value] });
        const v = r.key.memoryEnabled;
        toast(`Memory for ${k.name}: ${v === null ? "follows the global setting" : v ? "on" : "off"}.`);
      } catch (err) {
        select.value = value;
        say(error, errorText(err), "error");
      }
    });
    return select;
  }

  function size(bytes) {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let n = bytes, i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return `${i ? n.toFixed(1) : n} ${units[i]}`;
  }

  function limited(used, limit, text) {
    return limit ? `${text(used)} of ${text(limit)}` : `${text(used)} (no limit)`;
  }

  /* What the key keeps against its quotas, filled in once its usage arrives. */
  function storage(k) {
    const cell = h("td", { class: "nowrap muted", "data-testid": `key-storage-${k.id}` }, "…");
    api("GET", `/api/keys/${encodeURIComponent(k.id)}/usage`).then((u) => {
      const q = u.quota;
      cell.textContent = `${limited(q.memories.used, q.memories.limit, (n) => `${n}`)} memories · `
        + limited(q.bytes.used, q.bytes.limit, size);
      const full = (q.memories.limit && q.memories.used >= q.memories.limit)
        || (q.bytes.limit && q.bytes.used >= q.bytes.limit);
      cell.className = full ? "nowrap warn" : "nowrap muted";
      cell.title = full ? "Over its quota: its new memories are refused." : "";
    }).catch(() => { cell.textContent = "–"; });
    return cell;
  }

  function row(k) {
    const revoked = Boolean(k.revokedAt);
    return h(
      "tr",
      { "data-testid": `key-row-${k.id}`, "data-id": k.id, class: revoked ? "revoked" : "" },
      h("td", {}, k.name),
      h("td", { class: "mono" }, k.id),
      h("td", { class: "mono" }, `${k.prefix}…`),
      h("td", { class: "nowrap muted" }, fmtTime(k.createdAt)),
      h("td", { "data-testid": `key-status-${k.id}` },
        h("span", { class: `badge ${revoked ? "off" : "ok"}` }, revoked ? `revoked ${fmtTime(k.revokedAt)}` : "active")),
      h("td", {}, memorySelect(k)),
      storage(k),
      h("td", { class: "actions" }, revoked ? "" : h("button", {
        type: "button", class: "btn small danger", "data-testid": `revoke-key-${k.id}`,
        "aria-label": `Revoke ${k.name}`, onclick: () => revoke(k) }, "Revoke")),
    );
  }

  async function load() {
    const all = $("keys-show-revoked").checked;
    try {
      const r = await api("GET", `/api/keys?includeRevoked=${all ? "true" : "false"}`);
      document.getElementById("keys-body").replaceChildren(...r.data.map(row));
      show($("keys-empty"), r.data.length === 0);
    } catch (err) {
      say(error, errorText(err), "error");
    }
  }

  async function create(event) {
    event.preventDefault();
    const name = $("key-name-input").value.trim();
    if (!name) return say(error, "Give the key a name.", "error");
    const payload = { name };
    const memory = $("key-memory-select").value;
    if (memory) payload.memoryEnabled = memory === "true";
    $("create-key-button").disabled = true;
    try {
      const r = await api("POST", "/api/keys", payload);
      say(error, "", "");
      $("new-key-secret").textContent = r.key;
      show($("new-key-box"), true);
      $("key-name-input").value = "";
      await load();
    } catch (err) {
      say(error, errorText(err), "error");
    } finally {
      $("create-key-button").disabled = false;
    }
  }

  // Revoking cannot be undone (the client's secret never works again): asked first,
  // as deleting a memory is.
  const revokeModal = $("revoke-modal");
  let revoking = null;

  function revoke(k) {
    revoking = k;
    $("revoke-text").textContent =
      `Revoke ${k.name} (${k.id})? Clients using it are refused from now on; ` +
      "its memories stay. This cannot be undone.";
    say($("revoke-error"), "", "");
    revokeModal.hidden = false;
    $("revoke-cancel").focus();
  }

  async function confirmRevoke() {
    if (!revoking) return;
    const k = revoking;
    const button = $("revoke-confirm");
    button.disabled = true;
    try {
      await api("DELETE", `/api/keys/${encodeURIComponent(k.id)}`);
      revokeModal.hidden = true;
      revoking = null;
      toast(`Key ${k.name} revoked: it stops working now; its memories stay.`);
      await load();
    } catch (err) {
      say($("revoke-error"), errorText(err), "error");
    } finally {
      button.disabled = false;
    }
  }

  function cancelRevoke() {
    revokeModal.hidden = true;
    revoking = null;
  }

  async function copySecret() {
    const secret = $("new-key-secret").textContent;
    try {
      await navigator.clipboard.writeText(secret);
      toast("Key copied to the clipboard.");
    } catch (_err) {
      const range = document.createRange(); // no clipboard permission: select it instead
      range.selectNodeContents($("new-key-secret"));
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      toast("Press Ctrl+C to copy the selected key.", "warn");
    }
  }

  document.getElementById("key-form").addEventListener("submit", create);
  $("copy-key-secret").addEventListener("click", copySecret);
  $("dismiss-key-secret").addEventListener("click", () => {
    $("new-key-secret").textContent = "";
    show($("new-key-box"), false);
  });
  $("keys-show-revoked").addEventListener("change", load);
  $("revoke-confirm").addEventListener("click", confirmRevoke);
  $("revoke-cancel").addEventListener("click", cancelRevoke);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") cancelRevoke(); });
  load();
})();

/* Settings tab: upstream providers (name, kind, base URL, key, system role).
 *
 * PUT /api/settings/providers replaces the stored list, so the page keeps the names it
 * knows are stored (rendered by the server, then the list it last saved): providers
 * that come only from the environment are shown but never written back, so their
 * keys stay out of the database. A stored entry sent without apiKey keeps its key.
 */
"use strict";

(() => {
  const { api, h, $, say, toast, errorText, show, initial } = Studio;
  const form = document.getElementById("provider-form");
  const error = $("providers-error");
  const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
  let providers = initial.providers || [];
  let stored = new Set(initial.storedProviders || []);
  let editing = null; // name of the stored provider in the form, or null when adding

  function row(p) {
    const own = stored.has(p.name);
    return h(
      "tr",
      { "data-testid": `provider-row-${p.name}`, "data-name": p.name },
      h("td", {}, p.name, own ? "" : [" ", h("span", { class: "badge", title: "from the environment" }, "env")]),
      h("td", {}, h("span", { class: "badge tier", "data-testid": `provider-kind-${p.name}` }, p.kind)),
      h("td", { class: "mono key" }, p.baseUrl),
      h("td", { class: "mono" }, p.hasKey ? p.apiKey : "–"),
      h("td", {}, p.systemRole),
      h("td", { class: "actions" }, own ? [
        h("button", { type: "button", class: "btn small", "data-testid": `provider-edit-${p.name}`,
          "aria-label": `Edit ${p.name}`, onclick: () => edit(p) }, "Edit"),
        h("button", { type: "button", class: "btn small danger", "data-testid": `provider-remove-${p.name}`,
          "aria-label": `Remove ${p.name}`, onclick: () => remove(p) }, "Remove"),
      ] : ""),
    );
  }

  function render() {
    document.getElementById("providers-body").replaceChildren(...providers.map(row));
    show($("providers-empty"), providers.length === 0);
  }

  function reset() {
    editing = null;
    form.reset();
    $("provider-name-input").disabled = false;
    $("provider-form-title").textContent = "Add a provider";
    show($("provider-cancel"), false);
  }

  function edit(p) {
    editing = p.name;
    $("provider-name-input").value = p.name;
    $("provider-name-input").disabled = true;
    $("provider-kind-select").value = p.kind;
    $("provider-base-url-input").value = p.baseUrl;
    $("provider-api-key-input").value = "";
    $("provider-role-select").value = p.systemRole;
    $("provider-form-title").textContent = `Edit provider ${p.name}`;
    show($("provider-cancel"), true);
    say(error, "", "");
    $("provider-base-url-input").focus();
  }

  /** The stored entries as PUT wants them; no apiKey keeps the stored one. */
  function entry(p) {
    return { name: p.name, baseUrl: p.baseUrl, systemRole: p.systemRole, kind: p.kind };
  }

  async function put(list, done) {
    const button = $("provider-save");
    button.disabled = true;
    try {
      providers = await api("PUT", "/api/settings/providers", list);
      stored = new Set(list.map((p) => p.name));
      say(error, "", "");
      render();
      reset();
      toast(done);
    } catch (err) {
      say(error, errorText(err), "error");
    } finally {
      button.disabled = false;
    }
  }

  function read() {
    const problems = [];
    const name = editing || $("provider-name-input").value.trim();
    const baseUrl = $("provider-base-url-input").value.trim();
    if (!NAME.test(name)) problems.push("Name must be 1-64 letters, digits, '_', '.' or '-'.");
    if (!/^https?:\/\//.test(baseUrl)) problems.push("Base URL must start with http:// or https://.");
    const next = {
      name,
      baseUrl,
      kind: $("provider-kind-select").value,
      systemRole: $("provider-role-select").value,
    };
    const key = $("provider-api-key-input").value.trim();
    // a new stored entry always says its key ("" = none), so an env one's is not copied
    if (key || !stored.has(name)) next.apiKey = key;
    return { problems, next };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const { problems, next } = read();
    if (problems.length) return say(error, problems.join(" "), "error");
    const list = providers.filter((p) => stored.has(p.name)).map((p) => (p.name === next.name ? next : entry(p)));
    if (!list.includes(next)) list.push(next);
    await put(list, `Provider ${next.name} (${next.kind}) saved.`);
  });

  async function remove(p) {
    const rest = providers.filter((o) => stored.has(o.name) && o.name !== p.name).map(entry);
    await put(rest, `Provider ${p.name} removed.`);
  }

  $("provider-cancel").addEventListener("click", () => {
    reset();
    say(error, "", "");
  });
  render();
})();

/* Memory Studio: shared helpers (API calls, DOM building, switches, messages).
 *
 * The page holds no credential but the HttpOnly session cookie, which the browser
 * sends by itself; writes add the session's CSRF token from <meta name="csrf-token">.
 * Every message shown comes from the server's error.message or from this code:
 * never a stack trace. Data is put in the page with textContent, never innerHTML.
 */
"use strict";

const Studio = (() => {
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute("content") : "";
  const stateNode = document.getElementById("initial-state");
  const initial = stateNode ? JSON.parse(stateNode.textContent) : {};

  class ApiError extends Error {
    constructor(message, status, code, details) {
      super(message);
      this.status = status;
      this.code = code || "error";
      this.details = details || [];
    }
  }

  /** Call a JSON route. Throws ApiError carrying the server's error.message. */
  async function api(method, path, body, options) {
    const opts = options || {};
    const headers = { Accept: "application/json" };
    let payload;
    if (body !== undefined) {
      if (opts.contentType) {
        headers["Content-Type"] = opts.contentType;
        payload = body;
      } else {
        headers["Content-Type"] = "application/json";
        payload = JSON.stringify(body);
      }
    }
    if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrf;
    let response;
    try {
      response = await fetch(path, { method, headers, body: payload, credentials: "same-origin" });
    } catch (_err) {
      throw new ApiError("The server did not answer (network error).", 0, "network");
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_err) {
      data = null;
    }
    if (!response.ok) {
      const err = data && data.error;
      const message =
        err && typeof err.message === "string" ? err.message : `HTTP ${response.status}`;
      if (response.status === 401 && !opts.noRedirect) {
        const tab = initial.tab || "memories";
        window.setTimeout(() => {
          window.location.assign(`/dashboard/login?tab=${encodeURIComponent(tab)}`);
        }, 1500);
      }
      throw new ApiError(message, response.status, err && err.code, err && err.details);
    }
    return data;
  }

  /** A readable message for any failure, without internals. */
  function errorText(err) {
    if (err instanceof ApiError) return err.message;
    return "Unexpected error in the page; reload and try again.";
  }

  /** h("td", {class: "x", "data-testid": "y", onclick: fn}, "text", child) */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith("on") && typeof value === "function") {
        el.addEventListener(name.slice(2), value);
      } else if (name === "class") {
        el.className = value;
      } else if (value === true) {
        el.setAttribute(name, "");
      } else {
        el.setAttribute(name, String(value));
      }
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function $(testid, root) {
    return (root || document).querySelector(`[data-testid="${testid}"]`);
  }

  function show(el, visible) {
    if (el) el.hidden = !visible;
  }

  /** Show text in a message element; kind: "ok" | "error" | "warn" | "" */
  function say(el, text, kind) {
    if (!el) return;
    el.textContent = text || "";
    el.classList.remove("ok", "error", "warn");
    if (kind) el.classList.add(kind);
    el.hidden = !text;
  }

  let toastTimer = 0;
  function toast(text, kind) {
    const el = document.getElementById("toast");
    if (!el) return;
    say(el, text, kind || "ok");
    window.clearTimeout(toastTimer);
    toastTimer = window.setTimeout(() => {
      el.hidden = true;
    }, 4000);
  }

  function isOn(sw) {
    return sw.getAttribute("aria-checked") === "true";
  }

  function setSwitch(sw, on) {
    sw.setAttribute("aria-checked", on ? "true" : "false");
  }

  function debounce(fn, ms) {
    let timer = 0;
    return (...args) => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => fn(...args), ms);
    };
  }

  function fmtTime(iso) {
    if (!iso) return "–";
    return String(iso).replace("T", " ").slice(0, 16) + " UTC";
  }

  function fmtScore(value) {
    return typeof value === "number" ? value.toFixed(3) : "–";
  }

  /** Refill every owner <select data-owner-select> and <datalist data-owner-list>. */
  /** "name (id)" for a key's id, the id alone for an owner without a key. */
  function ownerLabel(id) {
    const name = (initial.ownerNames || {})[id];
    return name ? `${name} (${id})` : id;
  }

  function setOwners(owners, names) {
    initial.owners = owners;
    if (names) initial.ownerNames = names;
    for (const select of document.querySelectorAll("select[data-owner-select]")) {
      const current = select.value;
      const first = select.options[0];
      select.replaceChildren(first, ...owners.map((o) => h("option", { value: o }, ownerLabel(o))));
      select.value = owners.includes(current) ? current : "";
    }
    for (const list of document.querySelectorAll("datalist[data-owner-list]")) {
      list.replaceChildren(...owners.map((o) => h("option", { value: o }, ownerLabel(o))));
    }
  }

  async function refreshOwners() {
    try {
      const data = await api("GET", "/dashboard/owners");
      setOwners(data.owners, data.ownerNames);
    } catch (_err) {
      /* the selects keep what the page was rendered with */
    }
  }

  /** Settings: the header switch, and an event other tabs listen to. */
  function settingsChanged(settings) {
    initial.settings = settings;
    const sw = document.getElementById("memory-enabled-toggle");
    if (sw) setSwitch(sw, settings.enabled);
    const label = $("memory-enabled-label");
    if (label) label.textContent = settings.enabled ? "on" : "off";
    document.dispatchEvent(new CustomEvent("studio:settings", { detail: settings }));
  }

  async function saveSettings(changes) {
    const settings = await api("PUT", "/api/settings/memory", changes);
    settingsChanged(settings);
    return settings;
  }

  function initHeader() {
    const sw = document.getElementById("memory-enabled-toggle");
    if (!sw) return;
    sw.addEventListener("click", async () => {
      sw.disabled = true;
      try {
        const settings = await saveSettings({ enabled: !isOn(sw) });
        toast(settings.enabled ? "Memory is on." : "Memory is off.", "ok");
      } catch (err) {
        toast(errorText(err), "error");
      } finally {
        sw.disabled = false;
      }
    });
  }

  initHeader();

  return {
    ApiError,
    api,
    csrf,
    debounce,
    errorText,
    fmtScore,
    fmtTime,
    h,
    initial,
    isOn,
    ownerLabel,
    refreshOwners,
    saveSettings,
    say,
    setOwners,
    setSwitch,
    show,
    toast,
    $,
  };
})();

/* Settings tab: the memory settings (docs/design/interfaces.md#settings) with validation, and the token-cost warning. */
"use strict";

(() => {
  const { $, say, errorText, saveSettings, show } = Studio;
  const form = document.getElementById("settings-form");
  const error = $("settings-error");
  const message = $("settings-message");

  function wholeNumber(testid, label, min, max, problems) {
    const raw = $(testid).value.trim();
    const value = Number(raw);
    if (raw === "" || !Number.isInteger(value) || value < min || value > max) {
      problems.push(`${label} must be a whole number from ${min} to ${max}.`);
      $(testid).setAttribute("aria-invalid", "true");
      return null;
    }
    $(testid).removeAttribute("aria-invalid");
    return value;
  }

  function read() {
    const problems = [];
    const changes = {
      maxTokens: wholeNumber("settings-max-tokens", "Max tokens", 0, 16000, problems),
      // 0 (or empty) keeps memories until they expire; 1-365 days otherwise
      retentionDays: wholeNumber("settings-retention-days", "Retention", 0, 365, problems),
      strategy: $("settings-strategy").value,
      scope: $("settings-scope").value,
      vectorStore: $("settings-vector-store").value,
      extractFrom: ["user", "assistant"].filter((v) => $(`settings-extract-${v}`).checked),
      extractionMode: $("settings-extraction-mode").value,
      extractionProviderModel: $("settings-extraction-model").value.trim() || null,
      extractionTimeoutMs: wholeNumber("settings-extraction-timeout", "Extraction timeout", 100, 120000, problems),
      extractionDailyTokenCap: wholeNumber("settings-extraction-cap", "Extraction tokens per day", 0, 1000000000, problems),
    };
    if (changes.extractionProviderModel !== null && !changes.extractionProviderModel.includes("/")) {
      problems.push("Extraction model must be provider/model, or empty.");
    }
    const raw = $("settings-min-score").value.trim();
    changes.minScore = raw === "" ? null : Number(raw);
    if (changes.minScore !== null && !(changes.minScore >= 0 && changes.minScore <= 1)) {
      problems.push("Minimum score must be empty or a number from 0 to 1.");
    }
    return { problems, changes };
  }

  function fill(s) {
    $("settings-max-tokens").value = String(s.maxTokens);
    $("settings-retention-days").value = String(s.retentionDays ?? 0);
    $("settings-strategy").value = s.strategy;
    $("settings-scope").value = s.scope;
    $("settings-vector-store").value = s.vectorStore;
    $("settings-min-score").value = s.minScore === null ? "" : String(s.minScore);
    $("settings-extract-user").checked = s.extractFrom.includes("user");
    $("settings-extract-assistant").checked = s.extractFrom.includes("assistant");
    $("settings-extraction-mode").value = s.extractionMode;
    $("settings-extraction-model").value = s.extractionProviderModel || "";
    $("settings-extraction-timeout").value = String(s.extractionTimeoutMs);
    $("settings-extraction-cap").value = String(s.extractionDailyTokenCap);
    warning(s);
  }

  function warning(s) {
    show($("memory-cost-warning"), s.enabled);
    $("memory-cost-tokens").textContent = String(s.maxTokens);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    say(message, "", "");
    const { problems, changes } = read();
    if (problems.length) return say(error, problems.join(" "), "error");
    const button = $("settings-save");
    button.disabled = true;
    try {
      const s = await saveSettings(changes);
      say(error, "", "");
      say(message, "Settings saved.", "ok");
      fill(s);
    } catch (err) {
      say(error, errorText(err), "error");
    } finally {
      button.disabled = false;
    }
  });
  $("settings-max-tokens").addEventListener("input", (e) => {
    $("memory-cost-tokens").textContent = e.target.value || "0";
  });
  document.addEventListener("studio:settings", (e) => warning(e.detail));
})();

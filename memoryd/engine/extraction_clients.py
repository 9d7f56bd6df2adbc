"""The collaborators of the memory-write path, built once by ``MemoryEngine``.

``ExtractionJobs`` and LLM extraction receive these, never the engine: what a job
reads (the store, the runtime settings, the key's quotas), the rules' classifier, what
LLM extraction calls (providers, retrieval's dry run, the token counter) and counts
(``LlmStats``), and the one write the job makes (``MemoryEngine.reconcile``, which
validates, tells the read cache and the index tiers). Named here, apart from the jobs
and the call, so neither imports the engine nor the other for its types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryd.engine.attribute_model import AttributeModel, engine_minilm, shared_model

if TYPE_CHECKING:
    from memoryd.config.settings import SettingsService
    from memoryd.config.upstreams import Provider
    from memoryd.engine.llm_stats import LlmStats
    from memoryd.engine.quotas import Quotas
    from memoryd.models import Preview, Reconcile, Reconciled
    from memoryd.storage.base import Store

#: The job counters engine status and metrics report (more appear as they happen:
#: ``guarded``, ``overQuota``).
STAT_NAMES = ("scheduled", "stored", "failed", "superseded", "deferred", "quarantined")


@dataclass(frozen=True, slots=True)
class ExtractionClients:
    store: Store
    #: read per job: ``extractionMode``, ``quarantineGuarded``, the LLM target and caps
    settings: SettingsService
    #: the job counters (``MemoryEngine.extraction_stats``: the same dict)
    stats: dict[str, int]
    #: what a key may keep: facts past it are not stored (None: no quotas)
    quotas: Quotas | None
    #: the only write of facts: ``MemoryEngine.reconcile``
    reconcile: Callable[[list[Reconcile]], list[Reconciled]]
    #: the classifier backing the rules (None: the rules alone)
    attributes: AttributeModel | None
    #: the configured upstream providers, read per LLM call (an admin may change them)
    providers: Callable[[], dict[str, Provider]]
    #: retrieval's dry run (``MemoryEngine.preview``): the memories the model is shown
    preview: Callable[..., Preview]
    llm_stats: LlmStats
    #: the engine's token counter, for a provider that reports no usage
    tokens: Callable[[str], int]


def classifier(embeddings: Any | None) -> AttributeModel:
    """The attribute classifier: on retrieval's MiniLM session when the engine runs
    one (one model in memory, not two), else the process's shared one."""
    if embeddings is None:
        return shared_model()
    return AttributeModel(source=engine_minilm(embeddings))

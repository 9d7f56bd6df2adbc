"""Built-in evaluation: retrieval on public benchmark data
(docs/design/retrieval.md#evaluation) and extraction on a labelled set.

``memoryd.eval.locomo`` loads LoCoMo conversations, stores them through a throwaway
engine and measures turn-level evidence recall through the engine's real retrieval
path. ``memoryd.eval.extraction`` scores rules extraction on the labelled set
(``labelled``) through a throwaway engine, times it (``speed``) and compares it with
LoCoMo's observation annotations (``observations``). Nothing here touches the user's
data dir; the CLI (``memoryd eval``) is a thin layer over it.
"""

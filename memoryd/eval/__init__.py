"""Built-in retrieval evaluation on public benchmark data (SPEC §19).

``memoryd.eval.locomo`` loads LoCoMo conversations, stores them through a throwaway
engine and measures turn-level evidence recall through the engine's real retrieval
path. Nothing here touches the user's data dir; the CLI (``memoryd eval``) is a thin
layer over it.
"""

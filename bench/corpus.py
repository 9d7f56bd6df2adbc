"""A deterministic synthetic corpus of short first-person facts and queries.

Vocabulary-rich enough that BM25 and vectors have something to rank, and generated
from a seed so every run (and every machine) measures the same data.
"""

from __future__ import annotations

import random

SUBJECTS = [
    "coffee",
    "tea",
    "python",
    "rust",
    "typescript",
    "postgres",
    "sqlite",
    "vim",
    "emacs",
    "hiking",
    "cycling",
    "jazz",
    "opera",
    "sushi",
    "pasta",
    "docker",
    "kubernetes",
    "linux",
    "gardening",
    "chess",
    "photography",
    "running",
    "swimming",
    "climbing",
    "painting",
    "poetry",
    "history",
    "astronomy",
    "baking",
    "camping",
    "knitting",
    "yoga",
    "tennis",
    "football",
    "guitar",
    "piano",
    "violin",
    "movies",
    "novels",
    "podcasts",
    "travel",
    "japan",
    "italy",
    "mexico",
    "canada",
    "iceland",
    "kenya",
    "peru",
    "norway",
    "vietnam",
]
VERBS = ["prefers", "likes", "avoids", "uses", "studies", "enjoys", "recommends", "dislikes"]
CONTEXTS = [
    "in the morning",
    "at work",
    "on weekends",
    "with friends",
    "for side projects",
    "when travelling",
    "after dinner",
    "during winter",
    "for production systems",
    "at home",
    "on long trips",
    "in the evening",
    "for learning",
    "with family",
]
DETAILS = [
    "since childhood",
    "because it is relaxing",
    "for the community",
    "to stay focused",
    "after a long day",
    "when the weather is good",
    "as a daily habit",
    "once a month",
    "whenever possible",
    "for the last three years",
    "to meet people",
    "for fun",
]


def facts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"User {rng.choice(VERBS)} {rng.choice(SUBJECTS)} and {rng.choice(SUBJECTS)} "
        f"{rng.choice(CONTEXTS)} {rng.choice(DETAILS)} (note {i})"
        for i in range(n)
    ]


def queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    templates = [
        "what does the user think about {s}?",
        "does the user like {s} {c}?",
        "which {s} habits does the user have",
        "tell me about {s} and {t}",
    ]
    return [
        rng.choice(templates).format(
            s=rng.choice(SUBJECTS), t=rng.choice(SUBJECTS), c=rng.choice(CONTEXTS)
        )
        for _ in range(n)
    ]

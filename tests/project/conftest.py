"""The repository itself: the import graph and layout, the docs (links, design
citations, the configuration table), the README's commands, the wheel and the sdist."""

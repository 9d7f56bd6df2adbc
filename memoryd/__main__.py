"""``python -m memoryd``: the command line (what ``serve --workers`` starts its workers with)."""

from memoryd.cli import main

if __name__ == "__main__":
    main()

"""``python -m lockgate.cli``: the same as the ``lockgate`` console script."""

from lockgate.cli._entry import entry

if __name__ == "__main__":
    entry()

#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
    from webnovel.cli import command_run  # Django's start without the garbage collector's passes over it

    command_run(sys.argv)


if __name__ == "__main__":
    main()

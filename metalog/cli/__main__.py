"""``python -m metalog.cli``: the command line."""

import sys

from metalog.cli.commands import main

sys.exit(main())

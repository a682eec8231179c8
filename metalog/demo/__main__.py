"""``python -m metalog.demo`` (`make demo`): the end-to-end demo."""

import sys

from metalog.demo.run import main

sys.exit(main())

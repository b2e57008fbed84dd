"""`python -m ck8s_gpu` (installed) or `python -m components` (checkout): the `ck8s-gpu` CLI."""

import sys

from .cli.main import main

sys.exit(main())

"""``python -m loopguard``: the loopguard CLI."""

from .cli import main

raise SystemExit(main())

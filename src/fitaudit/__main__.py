"""``python -m fitaudit`` runs the command-line tool."""

from __future__ import annotations

from fitaudit.cli import main

raise SystemExit(main())

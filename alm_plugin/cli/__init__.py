"""The console scripts (see setup.py's entry points) and what only they use: n-best lists, text forms, the
plain-text check, the one writer of every output."""

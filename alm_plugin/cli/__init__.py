"""Console scripts of the plugin (see setup.py entry points)."""

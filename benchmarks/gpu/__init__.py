"""What runs on a lent GPU machine: ``run.sh`` and the scripts it calls
(``python -m benchmarks.gpu.cli_check``, ...)."""

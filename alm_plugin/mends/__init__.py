"""What the plugin changes in fairseq, torch and numpy so that their own flows work on its models: safe checkpoint
loading, the devices, numpy 2, CUDA graphs, shallow fusion's checks."""

"""The test-time path: its options and refusals, the neural cache, dynamic evaluation, and the passes and
grid behind alm-cache-grid."""

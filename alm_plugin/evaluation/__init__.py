"""The test-time path: its options and refusals, the neural cache, dynamic evaluation, the scorers and the
checkpoint loading behind the tools."""
